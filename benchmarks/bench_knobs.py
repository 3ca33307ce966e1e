"""The knob editor as a person times it: keys typed into the real `zymi-tui tune` process on a
pseudo-terminal, its output read by a terminal emulator (pyte), the clock stopped when the new
figures are on the emulated screen.

    .venv/bin/python benchmarks/bench_knobs.py                       # makes a 10k-event stream in /tmp
    .venv/bin/python benchmarks/bench_knobs.py --store S.db --project P --stream RUN:step:STEP

Per edit (a one-digit knob typed into a cleared field, ≥ 30 edits): the time from writing the key
to the pty until
  a) the selected call's new figures (its what-if bytes and delta) and the diff's counts are on
     screen, and
  b) the whole stream's exact what-if is drawn (the status line with its peak and compactions).
The expected figures are computed before the timing by `replay_store` under the same knobs (the
full replay), so a stale or wrong screen never stops the clock. Baseline, alternated with the
edits in the same run: a bare sqlite3 + json.loads scan of the stream's rows. Prints p50/p95 and
the ratio to the baseline's median. `--against ZYMI_TUI` opens a second editor (an older checkout)
beside ours and types every edit into both in turn (who goes first alternates), so before and after
share one run's load: each gets p50 (min) and p95, and the ratio ours / against. `--before` waits
for what an older editor shows (no diff counts in the title, the exact what-if marked by the
summary alone), to time a checkout from before.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import re
import select
import shlex
import shutil
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pyte

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs, replay_store
from zymi_tui.tui.tuning.model import diff_contexts

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "tests" / "oracle" / "coding_default" / "project"
STREAM = "chat-long:step:work"
KNOB_COLUMN = 40  # the editor's knob column, left of the view
# the editors run from here: `python -m zymi_tui` (an --against wrapper) puts the current folder first
# on sys.path, so started from a checkout it would import that checkout's package, not the one meant
NEUTRAL_DIR = tempfile.gettempdir()
LIMIT_S = 120.0  # one edit that takes longer is reported as a failure, not waited for


@dataclass(frozen=True)
class Expected:
    """What the screen must show once an edit is done (from a full replay under the same knobs)."""

    knobs: ContextKnobs
    chars: int
    delta: int
    changed: int
    same: int
    peak: int
    compactions: int

    def figures(self) -> str:
        return f"{self.chars:,} bytes ({self.delta:+,})"

    def diff_counts(self) -> str:
        return f"{self.changed} changed, {self.same} unchanged"

    def whole(self) -> str:
        return f"peak {self.peak:,} bytes, {self.compactions} compaction"


def agent(calls: list[CallContext]) -> list[CallContext]:
    return [c for c in calls if not c.is_compaction and not c.hard_cap_failure]


async def replay(store: Path, project: Path, stream: str, knobs: ContextKnobs | None) -> list[CallContext]:
    reader = await open_reader(SqliteStore(store))
    try:
        return [c async for c in replay_store(reader, project=project, knobs=knobs, streams=[stream])]
    finally:
        await reader.close()


def expect(store: Path, project: Path, stream: str, recorded: list[CallContext], knobs: ContextKnobs) -> Expected:
    calls = asyncio.run(replay(store, project, stream, knobs))
    before = agent(recorded)[-1]
    after = next(c for c in agent(calls) if c.sequence == before.sequence)
    assert before.rendered is not None and after.rendered is not None
    diff = diff_contexts(before.rendered, after.rendered)
    ys = [c.rendered.chars for c in agent(calls) if c.rendered is not None and not c.rendered.hard_cap_exceeded]
    return Expected(
        knobs,
        after.rendered.chars,
        after.rendered.chars - before.rendered.chars,
        len(diff.changes),
        diff.unchanged,
        max(ys, default=0),
        sum(c.is_compaction for c in calls),
    )


def bare_scan(store: Path, stream: str) -> float:
    t0 = time.perf_counter()
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    for (data,) in con.execute("SELECT data FROM events WHERE stream_id = ? ORDER BY sequence", (stream,)):
        json.loads(data)
    con.close()
    return time.perf_counter() - t0


class Terminal:
    """`zymi-tui` on a pty; its output interpreted by pyte as a terminal would show it."""

    def __init__(self, args: list[str], cols: int, rows: int) -> None:
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        self.proc = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, cwd=NEUTRAL_DIR
        )  # fmt: skip
        os.close(slave)
        self.fd = master

    def lines(self) -> list[str]:
        return list(self.screen.display)

    def poll(self, timeout: float) -> bool:
        """Wait up to `timeout` for output and take all of it in; whether the screen may have changed."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return False
        self.stream.feed(os.read(self.fd, 1 << 16))
        while select.select([self.fd], [], [], 0)[0]:  # the rest of the frame
            self.stream.feed(os.read(self.fd, 1 << 16))
        return True

    def text(self) -> str:
        """The screen as one line of words, the knob column (40 cells wide) first and then the view, so
        that a figure wrapped over two rows of one column still matches."""
        lines = self.lines()
        columns = [line[: KNOB_COLUMN - 1] for line in lines] + [line[KNOB_COLUMN:] for line in lines]
        return re.sub(r"\s+", " ", " ".join(columns))

    def wait_for(self, *needles: str, limit: float = LIMIT_S) -> float | None:
        """Read output until every needle is on screen; the time it took, or None after `limit`."""
        t0 = time.perf_counter()
        if all(n in self.text() for n in needles):
            return 0.0
        while time.perf_counter() - t0 < limit:
            if self.poll(0.5) and all(n in self.text() for n in needles):
                return time.perf_counter() - t0
        return None

    def key(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def keys(self, data: str) -> None:
        """Keys one by one, reading the output between them (not timed)."""
        for ch in data:
            self.key(ch)
            self.wait_for("\x00", limit=0.1)

    def close(self) -> None:
        try:
            self.key("\x11")  # ctrl+q
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the app and anything it started
            self.proc.wait()
        finally:
            os.close(self.fd)


class TmuxTerminal(Terminal):
    """`zymi-tui` in a tmux pane: tmux (native code) interprets its output, as a terminal would; a
    control-mode client says when the pane got output, and the pane's text is then read back
    (`capture-pane`). pyte, in this process, spent more CPU parsing each edit's frames than the app
    spent making them, on the same two cores."""

    def __init__(self, args: list[str], cols: int, rows: int) -> None:
        self.cols = cols
        self.tmux = ["tmux", "-L", f"bench-knobs-{os.getpid()}-{id(self)}", "-f", "/dev/null"]
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        command = " ".join(shlex.quote(a) for a in args)
        subprocess.run([*self.tmux, "new-session", "-d", "-s", "b", "-x", str(cols), "-y", str(rows),
                        "-c", NEUTRAL_DIR, command], check=True, env=env)  # fmt: skip
        subprocess.run([*self.tmux, "set-option", "-g", "window-size", "manual"], check=True)
        self.control = subprocess.Popen(
            [*self.tmux, "-C", "attach-session", "-t", "b"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.control.stdin is not None and self.control.stdout is not None
        self.fd = self.control.stdout.fileno()
        self.pending = b""
        self.captured: list[str] = [""] * rows
        self.answer: list[str] | None = None

    def _command(self, line: str) -> None:
        assert self.control.stdin is not None
        self.control.stdin.write(line.encode() + b"\n")
        self.control.stdin.flush()

    def _read(self, timeout: float) -> tuple[bool, list[str] | None]:
        """Read what the control client has: (the pane got output, a capture's lines if one came)."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return False, None
        self.pending += os.read(self.fd, 1 << 16)
        *lines, self.pending = self.pending.split(b"\n")
        output, captured = False, None
        for raw in lines:
            line = raw.decode(errors="replace")
            if self.answer is not None:
                if line.startswith(("%end", "%error")):
                    captured, self.answer = self.answer, None
                else:
                    self.answer.append(line)
            elif line.startswith("%begin"):
                self.answer = []
            elif line.startswith("%output"):
                output = True
        return output, captured

    def _capture(self) -> None:
        """The pane's text, read again while more output came in during the capture (that output's
        notice is taken here: without a second capture the rest of a frame written in two pieces
        stayed unseen until the next output, the cursor's blink half a second later)."""
        more = True
        while more:
            more = False
            self._command("capture-pane -p -t b")
            while True:
                output, captured = self._read(5.0)
                more = more or output
                if captured is not None:
                    self.captured = captured
                    break

    def lines(self) -> list[str]:
        return self.captured

    def poll(self, timeout: float) -> bool:
        output, _ = self._read(timeout)
        if not output:
            return False
        while self._read(0)[0]:  # the rest of the frame
            pass
        self._capture()
        return True

    def key(self, data: str) -> None:
        self._command("send-keys -t b -H " + " ".join(f"{b:02x}" for b in data.encode()))

    def close(self) -> None:
        self.key("\x11")  # ctrl+q
        time.sleep(0.5)
        subprocess.run([*self.tmux, "kill-server"], check=False, stderr=subprocess.DEVNULL)
        self.control.wait(timeout=10)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def plan_edits(n: int) -> list[tuple[str, int]]:
    """One-digit values for observation_window and min_tail_turns, never the same twice in a row."""
    windows, tails = [3, 6, 2, 8, 4, 9, 5, 7], [2, 6, 3, 8, 1, 5, 7, 9]
    edits: list[tuple[str, int]] = []
    for i in range(n):
        edits.append(("observation_window", windows[i % 8]) if i % 3 != 2 else ("min_tail_turns", tails[i % 8]))
    return edits


FIELDS = ["observation_window", "soft_cap_chars", "hard_cap_chars", "min_tail_turns", "forget_after_turns"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", type=Path, help="default: a 10k-event step stream made by make_long_run.py")
    ap.add_argument("--project", type=Path, default=PROJECT)
    ap.add_argument("--stream", default=STREAM)
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--soft-cap", type=int, default=150_000, help="typed first, so that compactions happen")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--before", action="store_true", help="wait for what an older editor shows")
    ap.add_argument("--expected", type=Path, help="a JSON file keeping the expected figures between runs (same store)")
    ap.add_argument("--zymi-tui", default=str(Path(sys.executable).with_name("zymi-tui")))
    ap.add_argument(
        "--terminal",
        choices=["tmux", "pyte"],
        default="tmux" if shutil.which("tmux") else "pyte",
        help="what interprets the editor's output: tmux (native; default when installed) or pyte (in this process)",
    )
    ap.add_argument("--against", help="another zymi-tui (an older checkout) edited in turn with ours, in the same run")
    a = ap.parse_args()
    cols, rows = (int(x) for x in a.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        store = a.store
        if store is None:
            store = Path(tmp) / "long.db"
            make = [sys.executable, str(ROOT / "benchmarks" / "make_long_run.py"), str(store), "--events", "16200"]
            subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        (n_events,) = con.execute("SELECT count(*) FROM events WHERE stream_id = ?", (a.stream,)).fetchone()
        con.close()

        recorded_k = recorded_knobs(a.project)
        recorded = asyncio.run(replay(store, a.project, a.stream, None))
        current = {f: getattr(recorded_k, f) for f in FIELDS}
        current["soft_cap_chars"] = a.soft_cap
        plan: list[tuple[str, int, Expected]] = []
        t0 = time.perf_counter()
        cached = json.loads(a.expected.read_text()) if a.expected and a.expected.exists() else {}
        for name, value in plan_edits(a.edits):
            current[name] = value
            knobs = ContextKnobs(**current)
            key = json.dumps(current, sort_keys=True)
            if key in cached:
                exp = Expected(knobs, *cached[key])
            else:
                exp = expect(store, a.project, a.stream, recorded, knobs)
                cached[key] = [exp.chars, exp.delta, exp.changed, exp.same, exp.peak, exp.compactions]
            plan.append((name, value, exp))
        if a.expected:
            a.expected.write_text(json.dumps(cached))
        print(f"{a.edits} edits' expected figures from full replays in {time.perf_counter() - t0:.0f} s")

        tune = ["tune", str(store.resolve()), "--project", str(a.project.resolve()), "--step-stream", a.stream]
        tmux = a.terminal == "tmux"
        sessions = [Session("ours", [a.zymi_tui, *tune], cols, rows, tmux=tmux)]
        if a.against:
            against = str(Path(a.against).resolve()) if Path(a.against).exists() else a.against
            sessions.append(Session("against", [against, *tune], cols, rows, tmux=tmux))
        scans: list[float] = []
        failed = unseen = 0
        try:
            for session in sessions:
                session.open(len(agent(recorded)), a.soft_cap)
            previous: Expected | None = None
            for n, (name, value, exp) in enumerate(plan):
                same_a = previous is not None and (previous.figures(), previous.diff_counts()) == (
                    exp.figures(),
                    exp.diff_counts(),
                )
                same_b = previous is not None and previous.whole() == exp.whole()
                previous = exp
                scans.append(bare_scan(store, a.stream))
                unseen += same_a or same_b  # the screen shows these figures already: not seen
                for session in sessions[n % 2 :] + sessions[: n % 2]:  # who goes first alternates
                    times = session.edit(name, value, exp, before=a.before)
                    if times is None:
                        failed += 1
                    elif not (same_a or same_b):
                        session.quick.append(times[0] * 1000)
                        session.whole.append((times[0] + times[1]) * 1000)
        finally:
            for session in sessions:
                session.close()

    if not sessions[0].quick:
        sys.exit("no edit finished")
    base = statistics.median(scans) * 1000
    print(f"knob editor on a {n_events:,}-event stream ({len(agent(recorded))} agent calls), {cols}x{rows}, "
          f"{len(sessions[0].quick)} edits timed per editor ({failed} failed, {unseen} not timed: same figures "
          f"as the edit before);\nbaseline: bare sqlite3+json.loads scan of the stream, "
          f"median {base:.0f} ms (min {min(scans) * 1000:.0f})")  # fmt: skip
    for label, attr, aim in (
        ("a) key -> selected call's figures + diff painted", "quick", 50),
        ("b) key -> whole-stream exact what-if painted   ", "whole", 150),
    ):
        for session in sessions:
            xs: list[float] = getattr(session, attr)
            print(f"   {label} [{session.label:7}]: p50 {statistics.median(xs):.0f} ms (min {min(xs):.0f}), "
                  f"p95 {p95(xs):.0f} ms (aim p95 < {aim} ms) = p95 {p95(xs) / base:.2f}x the scan")  # fmt: skip
        if len(sessions) == 2:
            ours, theirs = (getattr(x, attr) for x in sessions)
            print(f"      ours / against, same run: p50 {statistics.median(ours) / statistics.median(theirs):.2f}x, "
                  f"p95 {p95(ours) / p95(theirs):.2f}x")  # fmt: skip


class Session:
    """One editor on its own pty, driven edit by edit; its timings."""

    def __init__(self, label: str, args: list[str], cols: int, rows: int, *, tmux: bool) -> None:
        self.label = label
        self.term = TmuxTerminal(args, cols, rows) if tmux else Terminal(args, cols, rows)
        self.focused = "observation_window"
        self.quick: list[float] = []
        self.whole: list[float] = []

    def open(self, calls: int, soft_cap: int) -> None:
        term = self.term
        assert term.wait_for("call ", "agent call") is not None, f"{self.label}: the editor did not open"
        assert term.wait_for(f"{calls}/{calls}") is not None, f"{self.label}: calls not loaded"
        term.key("\t")  # the profile select -> the first knob
        term.wait_for("\x00", limit=0.3)
        self.goto("soft_cap_chars")
        term.keys("\x7f" * 12 + str(soft_cap))
        assert term.wait_for(f"soft {soft_cap},") is not None, f"{self.label}: the soft cap was not typed"

    def goto(self, name: str) -> None:
        step = FIELDS.index(name) - FIELDS.index(self.focused)
        for _ in range(abs(step)):
            self.term.key("\t" if step > 0 else "\x1b[Z")
            self.term.wait_for("\x00", limit=0.3)
        self.focused = name

    def edit(self, name: str, value: int, exp: Expected, *, before: bool) -> tuple[float, float] | None:
        """Clear the field (invalid: nothing recomputed), type the digit; the times until a) and b)."""
        term = self.term
        self.goto(name)
        term.keys("\x7f" * 2)
        assert term.wait_for(f"{name}='': not an integer;") is not None, f"{self.label}: {name} not cleared"
        term.key(str(value))
        if before:
            t_quick = term.wait_for(exp.figures())
            t_whole = term.wait_for(f"what-if (estimated): {exp.figures()}")
        else:
            t_quick = term.wait_for(exp.figures(), exp.diff_counts())
            t_whole = term.wait_for(exp.whole(), exp.figures())
        if t_quick is None or t_whole is None:
            print(
                f"{self.label}: edit {name}={value}: expected figures not shown within {LIMIT_S:.0f} s", file=sys.stderr
            )
            print(term.text()[-1500:], file=sys.stderr)
            return None
        return t_quick, t_whole

    def close(self) -> None:
        self.term.close()


if __name__ == "__main__":
    main()
