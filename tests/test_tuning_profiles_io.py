"""Saved profiles, the runtime.context block, and apply-to-project as a text edit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zymi_tui.replay.profiles_io import (
    ProfileFileError,
    apply_edit,
    plan_apply,
    runtime_context_block,
    save_profile,
)

CHAT = {
    "observation_window": 2,
    "soft_cap_chars": 40000,
    "hard_cap_chars": 80000,
    "min_tail_turns": 2,
    "forget_after_turns": 12,
}
EVALISH = {
    **CHAT,
    "observation_window": 4,
    "soft_cap_chars": 60000,
    "hard_cap_chars": 100000,
    "forget_after_turns": None,
}

PROJECT = """\
name: demo   # my bot
version: "0.1"

# the model
llm:
  model: gpt-4o

runtime:
    # tuned by hand on 2026-11-01
    context:
        observation_window: 10   # keep ten
        soft_cap_chars: 400000
        # hard cap left at default
    other_setting: true

connectors: []  # none yet
"""


def test_block_is_the_engine_yaml() -> None:
    assert runtime_context_block(CHAT) == (
        "runtime:\n  context:\n    observation_window: 2\n    soft_cap_chars: 40000\n    hard_cap_chars: 80000\n"
        "    min_tail_turns: 2\n    forget_after_turns: 12\n"
    )
    parsed = yaml.safe_load(runtime_context_block(EVALISH))
    assert parsed == {
        "runtime": {
            "context": {"observation_window": 4, "soft_cap_chars": 60000, "hard_cap_chars": 100000, "min_tail_turns": 2}
        }
    }


def test_save_adds_and_replaces_in_profiles_file(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yml"
    path.write_text("# mine\nbig:  # huge caps\n  soft_cap_chars: 900000\n  hard_cap_chars: 990000\n")
    assert save_profile("my-chat", CHAT, reserved=("chat",), path=path) == path
    save_profile("big", EVALISH, path=path)
    assert yaml.safe_load(path.read_text()) == {
        "big": {"observation_window": 4, "soft_cap_chars": 60000, "hard_cap_chars": 100000, "min_tail_turns": 2},
        "my-chat": CHAT,
    }
    assert path.read_text().startswith("# mine\n")
    with pytest.raises(ProfileFileError, match="built in"):
        save_profile("chat", CHAT, reserved=("chat",), path=path)
    with pytest.raises(ProfileFileError, match="profile name"):
        save_profile("../evil", CHAT, path=path)


def test_apply_edits_in_place_keeping_comments(tmp_path: Path) -> None:
    project = tmp_path / "project.yml"
    project.write_text(PROJECT)
    edit = plan_apply(project, CHAT)
    assert project.read_text() == PROJECT  # planning writes nothing
    assert edit.new_text == PROJECT.replace(
        "        observation_window: 10   # keep ten\n        soft_cap_chars: 400000\n",
        "        observation_window: 2  # keep ten\n        soft_cap_chars: 40000\n        hard_cap_chars: 80000\n"
        "        min_tail_turns: 2\n        forget_after_turns: 12\n",
    )
    backup = apply_edit(edit)
    assert backup.read_text() == PROJECT
    assert project.read_text() == edit.new_text
    assert yaml.safe_load(project.read_text())["runtime"]["other_setting"] is True


def test_apply_adds_block_when_absent(tmp_path: Path) -> None:
    project = tmp_path / "project.yml"
    project.write_text("name: x\nllm:\n  model: m  # comment\n")
    edit = plan_apply(project, EVALISH)
    assert edit.new_text == "name: x\nllm:\n  model: m  # comment\n\n" + runtime_context_block(EVALISH)
    project.write_text("name: x\nruntime:\n  shell: bash\n")
    edit = plan_apply(project, CHAT)
    assert yaml.safe_load(edit.new_text) == {"name": "x", "runtime": {"context": CHAT, "shell": "bash"}}


def test_apply_refuses_flow_style_and_stale_plans(tmp_path: Path) -> None:
    project = tmp_path / "project.yml"
    project.write_text("runtime: {context: {observation_window: 3}}\n")
    with pytest.raises(ProfileFileError, match="inline"):
        plan_apply(project, CHAT)
    project.write_text(PROJECT)
    edit = plan_apply(project, CHAT)
    project.write_text(PROJECT + "# touched\n")
    with pytest.raises(ProfileFileError, match="changed on disk"):
        apply_edit(edit)
    assert not (tmp_path / "project.yml.bak").exists()
