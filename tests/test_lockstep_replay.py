"""The what-if knob sets of one pass replayed in lockstep (`replay/lockstep.py`: one replayer fed each event
once, each build rendered per knob set, a set parted before its first own compaction or a failed build it
sees otherwise) give exactly the figures of each knob set replayed alone by its own replayer, the replay's
own figures (`replay_groups(figures_only=False)`: no sharing at all), call by call; and `advise` gives the
same advice, byte for byte, either way. The comparison is shown to catch a wrong sharing condition."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, SCENARIOS, cloned_runs
from zymi_tui.context import splice
from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.kinds import WorkflowNodeCompleted
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay import lockstep
from zymi_tui.replay.advice import advise, to_json
from zymi_tui.replay.compare import collect_calls, profile_runs
from zymi_tui.replay.costs import load_prices
from zymi_tui.replay.figures import CallFigure, ProfileRun
from zymi_tui.replay.store_replay import recorded_knobs, replay_groups, replay_many

ROOT = Path(__file__).resolve().parent.parent
STORES = [(ORACLE / s / "events.db", ORACLE / s / "project") for s in SCENARIOS] + [
    (p / "events.db", p / "project") for p in sorted((ROOT / "sample_stores").iterdir()) if (p / "events.db").exists()
]


def _knob_sets(base: ContextKnobs) -> list[tuple[str, ContextKnobs | None]]:
    """The recorded knobs, and what-if sets around them: windows, forget, tails, soft caps low enough to
    compact at different calls (each one's own compactions: the parting), hard caps that fail builds."""
    soft, hard = base.soft_cap_chars, base.hard_cap_chars
    raw: list[dict[str, Any]] = []
    for w in (1, 2, 3, 5, 10, 64):
        raw.append({"observation_window": w})
    for f in (1, 2, 4, 8):
        raw.append({"forget_after_turns": f})
    for t in (1, 2):
        raw.append({"min_tail_turns": t, "soft_cap_chars": max(1, soft // 4)})
    for m in (0.1, 0.25, 0.5, 0.75, 1.5):
        raw.append({"soft_cap_chars": max(1, int(soft * m)), "hard_cap_chars": max(hard, int(soft * m))})
    for m in (0.2, 0.5, 0.9):
        raw.append({"hard_cap_chars": max(1, int(hard * m)), "soft_cap_chars": max(1, int(hard * m))})
        raw.append({"hard_cap_chars": max(1, int(hard * m)), "soft_cap_chars": max(1, int(hard * m * 0.6))})
    raw.append({"observation_window": 1, "forget_after_turns": 2, "soft_cap_chars": max(1, soft // 8)})
    out: list[tuple[str, ContextKnobs | None]] = [("recorded", None)]
    current = {
        "observation_window": base.observation_window, "soft_cap_chars": soft, "hard_cap_chars": hard,
        "min_tail_turns": base.min_tail_turns, "forget_after_turns": base.forget_after_turns,
    }  # fmt: skip
    for i, change in enumerate(raw):
        out.append((f"k{i}", make_knobs({**current, **change}, f"test {i}")))
    return out


async def _figures(db: Path, project: Path | None, *, lockstep_on: bool) -> list[list[CallFigure]]:
    """Every knob set's call figures, replayed in one pass (lockstep) or each alone (the oracle)."""
    base = recorded_knobs(project)
    profiles = _knob_sets(base)
    reader = await open_reader(SqliteStore(db))
    try:
        runs: list[ProfileRun] = profile_runs(profiles, base)
        if lockstep_on:
            calls = replay_groups(reader, project=project, knobs=[k for _, k in profiles], figures_only=True)
            await collect_calls(calls, runs, last_global_id=0, progress=None, label="")
        else:
            for i, (_, k) in enumerate(profiles):
                alone = profile_runs([profiles[i]], base)
                calls = replay_groups(reader, project=project, knobs=[k], figures_only=False)
                await collect_calls(calls, alone, last_global_id=0, progress=None, label="")
                runs[i] = alone[0]
        return [run.calls for run in runs]
    finally:
        await reader.close()


def _differences(db: Path, project: Path | None) -> list[str]:
    together = asyncio.run(_figures(db, project, lockstep_on=True))
    alone = asyncio.run(_figures(db, project, lockstep_on=False))
    assert len(together) == len(alone)
    out = []
    for i, (a, b) in enumerate(zip(together, alone, strict=True)):
        if a != b:
            first = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            out.append(f"{db.parent.name} knob set {i}: {len(a)} vs {len(b)} figures, first difference at {first}")
    return out


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Runs one after another (the replayers go idle between them: parted sets join again)."""
    tmp = tmp_path_factory.mktemp("lockstep")
    return cloned_runs(tmp, 6, "coding_compaction"), ORACLE / "coding_compaction" / "project"


@pytest.mark.parametrize(("db", "project"), STORES, ids=[s[0].parent.name for s in STORES])
def test_lockstep_figures_equal_each_knob_set_replayed_alone(db: Path, project: Path) -> None:
    assert _differences(db, project) == []


def test_lockstep_figures_equal_on_many_runs(many_runs: tuple[Path, Path]) -> None:
    assert _differences(*many_runs) == []


def test_lockstep_parts_and_joins_on_these_stores(
    monkeypatch: pytest.MonkeyPatch, many_runs: tuple[Path, Path]
) -> None:
    """The stores above exercise the parting and the joining (else the comparison would prove little)."""
    parted: list[int] = []
    joined: list[int] = []
    part, join = lockstep.LockstepReplayer.part, lockstep.LockstepReplayer.join

    def counting_part(self: lockstep.LockstepReplayer, members: list[int]) -> lockstep.LockstepReplayer:
        parted.append(len(members))
        return part(self, members)

    def counting_join(self: lockstep.LockstepReplayer, other: lockstep.LockstepReplayer) -> None:
        joined.append(len(other.members))
        join(self, other)

    monkeypatch.setattr(lockstep.LockstepReplayer, "part", counting_part)
    monkeypatch.setattr(lockstep.LockstepReplayer, "join", counting_join)
    asyncio.run(_figures(*many_runs, lockstep_on=True))
    assert len(parted) >= 6 and len(joined) >= 6


@contextmanager
def _mutant(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[None]:
    """A deliberately wrong sharing condition."""
    with monkeypatch.context() as m:
        if name == "never parts":
            m.setattr(lockstep.LockstepReplayer, "_compacting", lambda self, ctx, figures: [])
        elif name == "window ignored":  # members told apart by their forget cut only
            bounds = splice.bounds

            def unmasked(k: ContextKnobs, n_turns: int, ends: Any) -> tuple[int, int, int]:
                first, cut, _ = bounds(k, n_turns, ends)
                return first, cut, cut

            m.setattr(lockstep, "bounds", unmasked)
        elif name == "failed build shared":  # members kept together at a failed step's build
            diverging = lockstep.LockstepReplayer.diverging

            def together(self: Any, se: Any) -> list[list[int]]:
                parts = diverging(self, se)
                return [] if isinstance(se.kind, WorkflowNodeCompleted) else parts

            m.setattr(lockstep.LockstepReplayer, "diverging", together)
        elif name == "previous call ignored":  # prefix reuse shared by members whose previous call differed
            orig = lockstep.LockstepReplayer._on_call

            def first_prev(self: Any, se: Any, st: Any, kind: Any) -> None:
                prev = self._prev.get(se.stream_id)
                if prev:
                    one = next(iter(prev.values()))
                    for i in prev:
                        prev[i] = one
                orig(self, se, st, kind)

            m.setattr(lockstep.LockstepReplayer, "_on_call", first_prev)
        elif name == "memory change ignored":  # Layer A and B taken as the previous call's whatever they are
            m.setattr(lockstep, "same_head", lambda prev, cur: True)
        yield


MUTANTS = ["never parts", "window ignored", "failed build shared", "previous call ignored", "memory change ignored"]


@pytest.mark.parametrize("name", MUTANTS)
def test_a_wrong_sharing_condition_is_caught(
    monkeypatch: pytest.MonkeyPatch, name: str, many_runs: tuple[Path, Path]
) -> None:
    found = []
    with _mutant(monkeypatch, name):
        for db, project in [*STORES, many_runs]:
            found += _differences(db, project)
    assert found, f"the mutant '{name}' went unnoticed"


async def _advice_json(db: Path, project: Path | None, model: str | None) -> str:
    reader = await open_reader(SqliteStore(db))
    try:
        prices = load_prices(None)
        advice = await advise(reader, project, prices=prices, model=model, workers=1)
        return json.dumps(to_json(advice), indent=1, ensure_ascii=False)
    finally:
        await reader.close()


@pytest.mark.parametrize("model", [None, "gpt-4o", "claude-3-5-haiku-20241022"])
def test_advice_identical_with_and_without_lockstep(monkeypatch: pytest.MonkeyPatch, model: str | None) -> None:
    """The whole advice (every figure it prints) with the candidates in lockstep and each replayed alone."""
    with_lockstep = [asyncio.run(_advice_json(db, project, model)) for db, project in STORES]
    from zymi_tui.replay.advice import pass_two

    def alone(reader: Any, **kwargs: Any) -> Any:  # each candidate's rows made whole, so none shared in lockstep
        return replay_groups(reader, **{**kwargs, "figures_only": False})

    monkeypatch.setattr(pass_two, "replay_groups", alone)
    without = [asyncio.run(_advice_json(db, project, model)) for db, project in STORES]
    assert with_lockstep == without


def test_advice_identical_with_pass_two_from_pass_ones_spilled_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker on a store past the pool's size: pass one keeps no event in memory, pass two replays
    them from the file pass one set them down in (`SpilledEvents`)."""
    from zymi_tui.replay.advice import pass_two, run
    from zymi_tui.replay.spilled_events import SpilledEvents

    kept = [asyncio.run(_advice_json(db, project, "gpt-4o")) for db, project in STORES]
    read_again: list[bool] = []

    def spy(reader: Any, **kwargs: Any) -> Any:
        read_again.append(isinstance(kwargs["events"], SpilledEvents))
        return replay_groups(reader, **kwargs)

    monkeypatch.setattr(run, "WHATIF_POOL_MIN_EVENTS", 0)
    monkeypatch.setattr(pass_two, "replay_groups", spy)
    streamed = [asyncio.run(_advice_json(db, project, "gpt-4o")) for db, project in STORES]
    assert read_again and all(read_again)
    assert kept == streamed


async def _grouped_and_flat(db: Path, project: Path | None) -> tuple[list[tuple[list[int], int]], list[int], int]:
    """replay_groups' (members, row id) and replay_many's knob-set indices, over the same knob sets."""
    profiles = _knob_sets(recorded_knobs(project))
    knobs = [k for _, k in profiles]
    reader = await open_reader(SqliteStore(db))
    try:
        groups = [
            (list(members), id(row))
            async for members, row in replay_groups(reader, project=project, knobs=knobs, figures_only=True)
        ]
        flat = [i async for i, _ in replay_many(reader, project=project, knobs=knobs, figures_only=True)]
    finally:
        await reader.close()
    return groups, flat, len(profiles)


@pytest.mark.parametrize("store", STORES[:3], ids=lambda s: s[0].parent.name)
def test_a_row_seen_alike_is_handed_out_once(store: tuple[Path, Path]) -> None:
    """A row that several knob sets see alike comes once, with all of them (not once per set), and the
    groups flattened are replay_many's rows, set by set, in the same order."""
    groups, flat, sets = asyncio.run(_grouped_and_flat(*store))
    assert [i for members, _ in groups for i in members] == flat
    assert any(len(members) > 1 for members, _ in groups)  # what-if sets shared a class
    assert all(0 <= i < sets for members, _ in groups for i in members)
