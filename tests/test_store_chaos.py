"""Chaos on one store (issue 29): writers ours and zymi's, readers, kill -9 and SIGINT at random moments,
a few short rounds, each followed by the invariants of `tests/chaos.py`. The seed is printed; replay a
failing one with `ZYMI_TUI_CHAOS_SEED=<seed>` (the longer soak: benchmarks/soak_store.py)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.chaos import chaos

from .conftest import requires_zymi

pytestmark = requires_zymi

ROUNDS = 8
SECONDS = 20.0  # no round starts after this: the test takes this and one round at most


def test_chaos_rounds_keep_every_event_and_a_sound_store(tmp_path: Path) -> None:
    seed = int(os.environ.get("ZYMI_TUI_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"chaos seed {seed} (replay: ZYMI_TUI_CHAOS_SEED={seed})")
    rounds = chaos(tmp_path / "project", seed, rounds=ROUNDS, seconds=SECONDS)
    for r in rounds:
        if r.problems:
            pytest.fail(f"seed {seed}, {r.summary()}:\n" + "\n".join(r.problems), pytrace=False)
    assert sum(r.runs_ok for r in rounds) > 0 and sum(r.appended for r in rounds) > 0, f"seed {seed}: nothing written"
