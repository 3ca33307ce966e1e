"""The knob editor driven by keys: what it shows once the exact what-if is drawn equals what
`zymi-tui replay --set ... --json` (a separate process, the full replay) says for the same knobs,
also when a newer keystroke arrives while an older what-if is still running."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from typing import Any

import pytest
from textual import events
from textual.widgets import Input, Static

from tests.conftest import ORACLE
from tests.waiting import pilot_until, workers_idle
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import EventReader
from zymi_tui.tui.tuning import collector
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.diff_table import DiffTable
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.tuning.whatif import StreamWhatIf

NAME = "coding_compaction"
LABELS = {"observation_window": "window", "soft_cap_chars": "soft", "min_tail_turns": "min_tail"}  # the state line


def first_stream() -> str:
    stream: str = json.loads((ORACLE / NAME / "expected.json").read_text())[0]["stream_id"]
    return stream


def cli_replay(*sets: str) -> list[dict[str, Any]]:
    """The rows of the first stream from `zymi-tui replay --json --set ...`."""
    args = [sys.executable, "-m", "zymi_tui", "replay", str(ORACLE / NAME / "events.db"), "--project",
            str(ORACLE / NAME / "project"), "--json"]  # fmt: skip
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [r for r in rows if r.get("stream_id") == first_stream()]


def editor_app() -> TuningApp:
    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, first_stream(), project=ORACLE / NAME / "project")

    return TuningApp(SqliteStore(ORACLE / NAME / "events.db"), make)


async def loaded(app: TuningApp, pilot: Any) -> TuningScreen:
    await pilot_until(pilot, lambda: isinstance(app.screen, TuningScreen) and app.screen.ready, "the editor to load")
    screen = app.screen
    assert isinstance(screen, TuningScreen)
    return screen


def shown(screen: TuningScreen, widget: str) -> str:
    return str(screen.query_one(widget, Static).render())


@pytest.mark.parametrize(
    ("keys", "sets"),
    [
        # window 2, then the soft cap typed digit by digit (each digit a valid edit that starts a
        # what-if the next digit cancels): 3, 30, 300, 3000
        (["tab", "backspace", "backspace", "2", "tab", *["backspace"] * 6, "3", "0", "0", "0"],
         ["observation_window=2", "soft_cap_chars=3000"]),
        (["tab", "tab", "tab", "tab", "backspace", "1"], ["min_tail_turns=1"]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("here", [True, False], ids=["picked-call-made-on-the-key", "picked-call-from-the-worker"])
async def test_edits_by_keys_show_the_full_replays_figures(
    keys: list[str], sets: list[str], here: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the picked call's what-if is made while the key is handled (a stream that gets there
    within the editor's budget) or by the worker with the rest of the stream (one that does not)."""
    if not here:
        monkeypatch.setattr(TuningScreen, "picked_here", lambda self, knobs: None)
    rows = cli_replay(*sets)
    agents = [r for r in rows if r["kind"] == "agent"]
    want_curve = {r["sequence"]: (None if r["hard_cap_exceeded"] else r["chars"]) for r in agents}
    peak = max(c for c in want_curve.values() if c is not None)
    compactions = sum(r["kind"] == "compaction" for r in rows)
    last = agents[-1]

    app = editor_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await loaded(app, pilot)
        await pilot.press(*keys)
        done = f"exact what-if of all {len(agents)} calls: peak {peak:,} bytes, {compactions} compaction(s)"
        await pilot_until(pilot, lambda: done in shown(screen, "#elapsed"), f"'{done}' on screen")
        for s in sets:
            name, value = s.split("=")
            assert f"{LABELS[name]} {value}" in shown(screen, "#state")
        # the fields cleared by backspace (in error) and fixed by a digit: no error left on screen
        assert not screen.query(".knob.-invalid")
        assert all(not shown(screen, f"#err-{name}").strip() for name in LABELS)
        summary = shown(screen, "#summary")
        assert f"what-if (estimated): {last['chars']:,} bytes" in summary
        curve = screen.query_one(CurveView).curve
        assert curve is not None and curve.known is None
        assert dict(zip(curve.sequences, curve.what_if, strict=True)) == want_curve
        # the cyclic collector, held from the first key, runs again once the what-if is on screen
        await pilot_until(
            pilot, lambda: not screen.collector.held_since, "the collector released", limit=1.0
        )  # < 2 s hold
        assert gc.isenabled()


@pytest.mark.parametrize("wait_first", [True, False])
async def test_picking_another_call_shows_its_what_if(wait_first: bool) -> None:
    """PageUp after an edit (once the what-if is drawn, or while it runs): the summary shows the newly
    picked call's figures from the full replay."""
    sets = ["observation_window=2", "soft_cap_chars=3000"]
    keys = ["tab", "backspace", "backspace", "2", "tab", *["backspace"] * 6, "3", "0", "0", "0"]
    agents = [r for r in cli_replay(*sets) if r["kind"] == "agent"]
    n = len(agents)

    app = editor_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await loaded(app, pilot)
        await pilot.press(*keys)
        done = f"exact what-if of all {n} calls"
        if wait_first:
            await pilot_until(pilot, lambda: done in shown(screen, "#elapsed"), f"'{done}' on screen")
        await pilot.press("pageup", "pageup")
        want = f"what-if (estimated): {agents[-3]['chars']:,} bytes"
        await pilot_until(
            pilot,
            lambda: f"call {n - 2}/{n}" in shown(screen, "#summary") and want in shown(screen, "#summary"),
            f"'{want}' for call {n - 2}",
        )
        await pilot_until(pilot, lambda: done in shown(screen, "#elapsed"), f"'{done}' on screen")
        assert want in shown(screen, "#summary")


def cli_context(seq: int, *sets: str) -> list[tuple[str, int | None, str, int, str]]:
    """The call's context entries from `zymi-tui context --seq N --json [--set ...]` (a separate
    process): (layer, source seq, role, bytes, message as sent)."""
    args = [sys.executable, "-m", "zymi_tui", "context", str(ORACLE / NAME / "events.db"), "--project",
            str(ORACLE / NAME / "project"), "--step-stream", first_stream(), "--seq", str(seq), "--json"]  # fmt: skip
    for s in sets:
        args += ["--set", s]
    out = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return [
        (e["layer"], e["source_seq"], e["role"], e["bytes"], json.dumps(m, sort_keys=True))
        for e, m in zip(out["entries"], out["messages"], strict=True)
    ]


@pytest.mark.parametrize(
    ("keys", "sets"),
    [
        (["tab", "backspace", "backspace", "2", "tab", *["backspace"] * 6, "3", "0", "0", "0"],
         ["observation_window=2", "soft_cap_chars=3000"]),
        (["tab", "backspace", "backspace", "1"], ["observation_window=1"]),
    ],
)  # fmt: skip
async def test_the_diff_drawn_is_the_cli_contexts_difference(keys: list[str], sets: list[str]) -> None:
    """After edits (the soft cap typed digit by digit: each digit cancels the what-if before it), the
    diff table as drawn lists exactly the messages whose bytes or text differ between the picked
    call's recorded context and its context under the last knobs, both from the CLI."""
    last = [r for r in cli_replay(*sets) if r["kind"] == "agent"][-1]["sequence"]
    before, after = cli_context(last), cli_context(last, *sets)

    def keyed(entries: list[tuple[str, int | None, str, int, str]]) -> dict[tuple[str, str, str], tuple[int, str]]:
        return {(layer, str(seq) if seq is not None else f"#{i}", role): (size, text)
                for i, (layer, seq, role, size, text) in enumerate(entries)}  # fmt: skip

    old, new = keyed(before), keyed(after)
    changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
    want = {(*k, f"{old.get(k, (0, ''))[0]:,}→{new.get(k, (0, ''))[0]:,}") for k in changed}
    unchanged = len(old.keys() | new.keys()) - len(changed)

    app = editor_app()
    async with app.run_test(size=(160, 100)) as pilot:  # tall: every changed row on screen
        screen = await loaded(app, pilot)
        await pilot.press(*keys)
        done = "exact what-if of all"
        await pilot_until(pilot, lambda: done in shown(screen, "#elapsed"), f"'{done}' on screen")
        await pilot.pause()
        title = f"{len(changed)} changed, {unchanged} unchanged"
        assert title in shown(screen, "#diff-title")
        table = screen.query_one(DiffTable)
        assert len(changed) < table.size.height - 1
        lines = [table.render_line(y).text.split() for y in range(1, table.size.height)]
        drawn = {(w[1], w[2], w[3], w[4]) for w in lines if len(w) > 4}
        assert drawn == want


async def test_keys_that_come_together_edit_the_field_in_order() -> None:
    """Keys handed over in one go (one terminal read, or typed while an edit is being drawn): a
    backspace is applied where it was typed, not after the characters that followed it (Textual ran a
    field's bound keys once they had bubbled up to the app: textual#6605)."""
    app = editor_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await loaded(app, pilot)
        await pilot.press("tab")  # observation_window, its text selected
        field = screen.query_one("#knob-observation_window", Input)
        for key, char in [("backspace", None), ("2", "2"), ("backspace", None), ("3", "3")]:
            app.post_message(events.Key(key, char))  # as the driver posts the keys of one read
        await workers_idle(pilot)
        await pilot.pause()
        assert field.value == "3"
        assert "window 3" in shown(screen, "#state")


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


async def test_garbage_frozen_with_an_edit_is_reclaimed_once_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is alive when an edit is released is frozen out of the collector's walks; what of it has
    become garbage since is collected once the editor has been idle after `RECLAIM_EVERY` edits."""
    monkeypatch.setattr(collector, "RECLAIM_EVERY", 10_000)  # no reclaim while `cycle` is being frozen
    monkeypatch.setattr(collector, "RECLAIM_IDLE_S", 0.05)
    app = editor_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await loaded(app, pilot)
        cycle = _Cycle()
        gone = weakref.ref(cycle)
        # Under load each key may be an edit of its own: released once at least, `cycle` frozen alive.
        await pilot.press("tab", "backspace", "backspace", "2")
        await pilot_until(pilot, lambda: screen.collector.frozen_edits >= 1, "the first edit released")
        await workers_idle(pilot)
        del cycle  # garbage now, but frozen: no collection walks it
        gc.collect()
        assert gone() is not None
        monkeypatch.setattr(collector, "RECLAIM_EVERY", screen.collector.frozen_edits + 1)
        await pilot.press("backspace", "3")  # the next edit reaches RECLAIM_EVERY
        await pilot_until(pilot, lambda: gone() is None, "the frozen garbage reclaimed")
        assert screen.collector.frozen_edits == 0


async def test_a_failure_making_the_picked_call_on_the_key_leaves_it_to_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The picked call made within the key's handling runs on the UI thread: if it fails, the key is
    not lost and the app does not stop; the worker makes the what-if (and would show its own failure)."""

    def broken(self: Any, *args: Any, **kw: Any) -> None:
        raise RuntimeError("call_at broke")

    monkeypatch.setattr(StreamWhatIf, "call_at", broken)
    rows = cli_replay("observation_window=2")
    last = [r for r in rows if r["kind"] == "agent"][-1]
    app = editor_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await loaded(app, pilot)
        await pilot.press("tab", "backspace", "backspace", "2")
        want = f"what-if (estimated): {last['chars']:,} bytes"
        await pilot_until(pilot, lambda: want in shown(screen, "#summary"), "the worker's what-if drawn")
        assert screen.query_one("#knob-observation_window", Input).value == "2"
