"""Knobs, profiles and the bad-input paths of `replay` / `context`."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from tests.conftest import ORACLE
from zymi_tui.cli import main
from zymi_tui.context.knobs import PROFILES, ContextKnobs, KnobError, project_knobs, resolve_knobs
from zymi_tui.project.reader import read_project


def test_profiles_have_the_documented_values() -> None:
    assert PROFILES["coding"] == ContextKnobs(
        observation_window=10, soft_cap_chars=400_000, hard_cap_chars=600_000, min_tail_turns=4
    )
    chat = PROFILES["chat"]
    assert (chat.observation_window, chat.soft_cap_chars, chat.hard_cap_chars, chat.min_tail_turns) == (
        2,
        40_000,
        80_000,
        2,
    )
    assert chat.forget_after_turns == 12
    assert PROFILES["eval"].forget_after_turns is None
    assert (PROFILES["eval"].observation_window, PROFILES["eval"].soft_cap_chars) == (4, 60_000)


def test_project_knobs_are_read_from_runtime_context() -> None:
    assert project_knobs(read_project(ORACLE / "chat_profile" / "project")) == PROFILES["chat"]
    assert project_knobs(read_project(ORACLE / "coding_default" / "project")) == ContextKnobs()
    hard = project_knobs(read_project(ORACLE / "hard_cap" / "project"))
    assert (hard.soft_cap_chars, hard.hard_cap_chars, hard.min_tail_turns) == (3000, 6000, 2)


def test_bad_project_value_names_key_value_and_rule(tmp_path: Path) -> None:
    (tmp_path / "project.yml").write_text(
        "name: p\nruntime:\n  context:\n    soft_cap_chars: 900\n    hard_cap_chars: 100\n"
    )
    with pytest.raises(KnobError, match=r"runtime.context: hard_cap_chars=100: must be >= soft_cap_chars \(900\)"):
        project_knobs(read_project(tmp_path))
    (tmp_path / "project.yml").write_text("name: p\nruntime:\n  context:\n    observation_window: lots\n")
    with pytest.raises(KnobError, match="observation_window='lots'"):
        project_knobs(read_project(tmp_path))


def test_set_and_profile_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = ContextKnobs()
    k = resolve_knobs(base, "chat", ["observation_window=5", "forget_after_turns=off"])
    assert (k.observation_window, k.forget_after_turns, k.soft_cap_chars) == (5, None, 40_000)
    monkeypatch.setenv("ZYMI_TUI_CONFIG_DIR", str(tmp_path))
    (tmp_path / "profiles.yml").write_text("tight:\n  soft_cap_chars: 1000\n  hard_cap_chars: 2000\n")
    tight = resolve_knobs(base, "tight", [])
    assert (tight.soft_cap_chars, tight.hard_cap_chars, tight.observation_window) == (1000, 2000, 10)
    (tmp_path / "profiles.yml").write_text("broken:\n  soft_cap_chars: -1\n")
    with pytest.raises(KnobError, match="profile `broken`: soft_cap_chars=-1"):
        resolve_knobs(base, "broken", [])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--set", "observation_window=x"], "observation_window='x': not an integer"),
        (["--set", "hard_cap_chars=5"], "hard_cap_chars=5: must be >= soft_cap_chars"),
        (["--profile", "nope"], "unknown profile; known profiles: chat, coding, eval"),
        (["--set", "window=3"], "unknown knob `window`"),
    ],
)
def test_bad_knobs_exit_2_with_one_line(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(ORACLE / "memory" / "events.db"), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unknown_stream_and_sequence_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    db = str(ORACLE / "memory" / "events.db")
    assert main(["context", db, "--stream", "nope", "--seq", "1"]) == 2
    assert "--stream nope: not a step stream" in capsys.readouterr().err
    assert main(["context", db, "--step-stream", "nope:step:x", "--seq", "1"]) == 2
    assert "--step-stream nope:step:x: no such step stream in the store" in capsys.readouterr().err
    stream = "pipeline-main-ab5751d3-5c06-4c86-8551-3db7a8e2d782:step:keep"
    assert main(["context", db, "--stream", stream, "--seq", "2"]) == 2
    assert "its LlmCallStarted sequences are: 1, 5, 9" in capsys.readouterr().err


def test_store_without_project_or_calls_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from tests.conftest import copy_store

    db = copy_store(ORACLE / "memory" / "events.db", tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("DELETE FROM events WHERE stream_id LIKE '%:step:%'")
    assert main(["replay", str(db)]) == 2
    assert "no project beside the store and no recorded LLM call" in capsys.readouterr().err


def test_knobs_are_frozen_hashable_pickled_and_replaced() -> None:
    knobs = ContextKnobs(soft_cap_chars=5)
    assert {knobs: 1}[ContextKnobs(soft_cap_chars=5)] == 1 and knobs != ContextKnobs()
    assert pickle.loads(pickle.dumps(knobs)) == knobs == copy.deepcopy(knobs)
    with pytest.raises(AttributeError):
        knobs.soft_cap_chars = 3  # type: ignore[misc]
    assert knobs.replaced(hard_cap_chars=7 * 10**5).values() == {
        "observation_window": 10, "soft_cap_chars": 5, "hard_cap_chars": 700_000, "min_tail_turns": 4,
        "forget_after_turns": None,
    }  # fmt: skip
    with pytest.raises(ValueError, match="must be >= soft_cap_chars"):
        knobs.replaced(hard_cap_chars=4)
