"""Benchmark the tuning features against baselines measured in the same run.

    .venv/bin/python benchmarks/bench_tuning.py              # 10,000-event stream + 100,000-event store
    .venv/bin/python benchmarks/bench_tuning.py --events 20000 --stream-events 3000   # quicker

1. Knob change to redraw in the editor (headless Textual app, the real TuningScreen): p50/p95 over
   a series of edits on one 10,000-event step stream, edit typed -> worker replay -> diff -> plot and
   tables updated; baseline: a bare scan of that stream (sqlite3 + json.loads of its rows). These
   are the screen's own timers, stopped before a frame is painted: for the time a person sees, use
   benchmarks/bench_knobs.py (the real process on a terminal, the clock stopped by the screen).
2. Whole-store replay under 3 profiles (recorded, chat, eval) of a 100,000-event store (clones of
   the recorded coding_default run, made by shared/tools/make_big_store.py); baseline: a bare scan of
   the whole store; also one profile alone (`replay_store`) for the cost of the extra two.
3. A 7x5 sweep (observation_window 2..20 x 5 soft caps) of the same store, same baseline.
Stores are generated in a temporary folder (or pass --store BIG.db, which is only read).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from textual.widgets import Input

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import PROFILES, ContextKnobs
from zymi_tui.context.rendered import Prefix
from zymi_tui.events.factory import open_reader
from zymi_tui.events.kinds import ContextCompacted, Event, LlmCallCompleted, LlmCallStarted, ToolCallCompleted
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.messages import AssistantMessage, ToolCallInfo
from zymi_tui.events.replay_view import replay_event
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.store import EventReader
from zymi_tui.events.stored import StoredEvent
from zymi_tui.events.timestamps import format_timestamp
from zymi_tui.replay.store_replay import replay_store
from zymi_tui.replay.sweep import DEFAULT_SOFT_CAPS, DEFAULT_WINDOWS
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.tuning.jobs import run_comparison, run_sweep

ROOT = Path(__file__).resolve().parents[1]
STREAM = "bench-run:step:work"


def shared() -> Path:
    for base in (ROOT.parent, ROOT.parent.parent, Path("/work")):
        if (base / "shared" / "tools" / "make_big_store.py").is_file():
            return base / "shared"
    sys.exit("shared/ (tools and oracle) not found beside the project")


def bare_scan(path: Path, stream: str | None = None) -> float:
    t0 = time.perf_counter()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    sql = "select data from events" + (" where stream_id = ? order by sequence" if stream else " order by id")
    for (data,) in con.execute(sql, (stream,) if stream else ()):
        json.loads(data)
    con.close()
    return time.perf_counter() - t0


async def write_long_stream(path: Path, n_events: int, seed: int = 7) -> int:
    """One step stream as zymi writes it under the coding profile: tool turns, compactions included."""
    rng = random.Random(seed)
    builder = ContextBuilder(ContextKnobs(), Prefix("You are a careful coding agent.", "Read every module."))
    writer = await SqliteWriter.open(path)
    corr = str(uuid.UUID(int=1))
    batch: list[Event] = []
    written = 0

    async def emit(kind: object, source: str = "engine") -> None:
        nonlocal written
        ev = Event(id=str(uuid.uuid4()), stream_id=STREAM, sequence=0, kind=kind,  # type: ignore[arg-type]
                   timestamp=format_timestamp(1_800_000_000_000_000_000 + written * 1_000_000),
                   correlation_id=corr, source=source)  # fmt: skip
        written += 1
        builder.add(replay_event(StoredEvent(written, ev.stored_as(written), "")))
        batch.append(ev)

    it = 0
    while written < n_events:
        it += 1
        ctx = builder.build()
        if ctx.compaction is not None:
            plan = ctx.compaction
            summary = f"Compacted span of {plan.turns} turns: the agent read files and ran commands. " * 3
            await emit(LlmCallStarted(iteration=0, message_count=2, approx_context_chars=plan.request_chars),
                       "compaction")  # fmt: skip
            reply = AssistantMessage(content=summary, tool_calls=())
            await emit(LlmCallCompleted(response_message=reply, has_tool_calls=False, content_preview=summary[:100]),
                       "compaction")  # fmt: skip
            await emit(ContextCompacted(replaces_seq_range=plan.replaces_seq_range, summary=summary,
                                        bytes_saved=plan.span_bytes - len(summary.encode())), "compaction")  # fmt: skip
            ctx = builder.build(allow_compaction=False)
        await emit(LlmCallStarted(iteration=it, message_count=ctx.message_count, approx_context_chars=ctx.chars))
        call = ToolCallInfo(id=f"call_{it}", name="read_file", arguments=json.dumps({"path": f"src/mod_{it}.py"}))
        text = f"Step {it}: reading the next module." + " More context." * rng.randint(0, 30)
        await emit(LlmCallCompleted(response_message=AssistantMessage(content=text, tool_calls=(call,)),
                                    has_tool_calls=True))  # fmt: skip
        size = rng.choice([0, 20, 800, 3000, 12000])
        result = (f"def f_{it}(x):\n    return x * {it}\n" * (size // 30 + 1))[:size]
        await emit(ToolCallCompleted(call_id=call.id, result=result, result_preview=result[:200], is_error=False,
                                     duration_ms=5))  # fmt: skip
        if len(batch) >= 500:
            await writer.append_many(batch)
            batch.clear()
    if batch:
        await writer.append_many(batch)
    await writer.close()
    return written


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


async def bench_editor(path: Path, edits: int) -> tuple[list[float], list[float], list[float], int]:
    """Edits typed into the real editor; per edit: edit -> selected call redrawn (kept builder state),
    edit -> exact what-if redrawn (curve included), and the worker's whole-stream replay alone."""

    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, STREAM, project=None)

    app = TuningApp(SqliteStore(path), make)
    redraw: list[float] = []
    worker: list[float] = []
    quick: list[float] = []
    rng = random.Random(5)
    async with app.run_test(size=(160, 50)) as pilot:
        screen: TuningScreen | None = None
        for _ in range(600):
            await pilot.pause(0.05)
            if isinstance(app.screen, TuningScreen) and app.screen.kept is not None and app.screen.curve:
                screen = app.screen
                break
        assert screen is not None, "the editor did not load"
        calls = len(screen.curve.sequences) if screen.curve else 0
        for i in range(edits):
            field, value = rng.choice([("observation_window", str(rng.choice([2, 3, 4, 6, 8, 12, 15, 20]))),
                                       ("soft_cap_chars", str(rng.choice([40_000, 100_000, 200_000, 300_000]))),
                                       ("min_tail_turns", str(rng.choice([1, 2, 4, 6])))])  # fmt: skip
            screen.redraw_ms = screen.quick_ms = None
            box = screen.query_one(f"#knob-{field}", Input)
            if box.value == value:
                value = str(int(value) + 1 + i % 3)
            box.value = value
            for _ in range(2000):
                await pilot.pause(0.005)
                if screen.redraw_ms is not None:
                    break
            if screen.redraw_ms is not None and screen.last_ms is not None and screen.quick_ms is not None:
                redraw.append(screen.redraw_ms)
                worker.append(screen.last_ms)
                quick.append(screen.quick_ms)
    return quick, redraw, worker, calls


async def replay_one(path: Path, project: Path) -> float:
    reader = await open_reader(SqliteStore(path))
    t0 = time.perf_counter()
    async for _ in replay_store(reader, project=project):
        pass
    await reader.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", type=Path, help="an existing store for 2 and 3 (default: generate one)")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--stream-events", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--no-sweep", action="store_true")
    a = ap.parse_args()
    sh = shared()
    project = sh / "oracle" / "coding_default" / "project"
    with tempfile.TemporaryDirectory() as tmp:
        long = Path(tmp) / "long.db"
        n = asyncio.run(write_long_stream(long, a.stream_events))
        scan = min(bare_scan(long, STREAM) for _ in range(3))
        quick, redraw, worker, calls = asyncio.run(bench_editor(long, a.edits))
        ms = scan * 1000
        print(f"1. knob change on a {n}-event stream ({calls} agent calls), {len(redraw)} edits; bare scan of the "
              f"stream {ms:.0f} ms\n"
              f"   a) edit -> selected call re-rendered and drawn: p50 {statistics.median(quick):.1f} ms, "
              f"p95 {p95(quick):.1f} ms (aim < 50 ms) = {p95(quick) / ms:.2f}x the scan\n"
              f"   b) edit -> exact what-if of the whole stream drawn (curve): p50 {statistics.median(redraw):.0f} ms, "
              f"p95 {p95(redraw):.0f} ms = {p95(redraw) / ms:.1f}x the scan (worker replay alone p50 "
              f"{statistics.median(worker):.0f} ms)")  # fmt: skip

        store = a.store
        if store is None:
            store = Path(tmp) / "big.db"
            t0 = time.perf_counter()
            make = [sys.executable, str(sh / "tools" / "make_big_store.py"), str(store), "--events", str(a.events)]
            subprocess.run([*make, "--from", "coding_default"], check=True, stdout=subprocess.DEVNULL)
            print(f"   generated {store.name}: {a.events} events in {time.perf_counter() - t0:.1f} s")
        full = min(bare_scan(store) for _ in range(2))
        one = asyncio.run(replay_one(store, project))
        profiles: list[tuple[str, ContextKnobs | None]] = [
            ("recorded", None),
            ("chat", PROFILES["chat"]),
            ("eval", PROFILES["eval"]),
        ]
        t0 = time.perf_counter()
        cmp = run_comparison(
            SqliteStore(store), project, profiles, model=None, tick=lambda f, s: None, cancelled=lambda: False
        )
        three = time.perf_counter() - t0
        print(f"2. whole-store replay under 3 profiles: {three:.1f} s ({cmp.profiles[0].total.calls} calls each) vs "
              f"bare scan {full:.1f} s: {three / full:.1f}x the scan; one profile alone (replay_store) {one:.1f} s, "
              f"so 3 profiles cost {three / one:.2f}x one")  # fmt: skip
        if not a.no_sweep:
            t0 = time.perf_counter()
            result = run_sweep(SqliteStore(store), project, DEFAULT_WINDOWS, DEFAULT_SOFT_CAPS, tick=lambda f, s: None,
                               cancelled=lambda: False)  # fmt: skip
            grid = time.perf_counter() - t0
            per = grid / len(result.points)
            print(f"3. sweep {len(DEFAULT_WINDOWS)}x{len(DEFAULT_SOFT_CAPS)} = {len(result.points)} points: "
                  f"{grid:.1f} s vs bare scan {full:.1f} s: {grid / full:.1f}x the scan, "
                  f"{per:.2f} s per point ({per / one:.2f}x one replay)")  # fmt: skip


if __name__ == "__main__":
    main()
