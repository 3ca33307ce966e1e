"""A bad project as a person meets it: `zymi-tui run` in a real process says one line on stderr naming the
file, the key path and what was wrong, exits 2, and shows no traceback; the real zymi refuses the same
project (at load, or when it builds the provider)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import zymi_bin, zymi_tui_bin
from tests.waiting import LIMIT

PIPELINE = "name: p\nsteps:\n  - id: s\n    agent: a\n    task: hello\n"
AGENT = "name: a\n"
LLM = "llm: {provider: openai, model: m}\n"

CASES = {
    "wrong type": (
        {"project.yml": f"name: t\n{LLM}defaults: {{max_tokens: '12'}}\n"},
        "project.yml",
        ['defaults.max_tokens: expected an integer, got the string "12"'],
    ),
    "negative knob": (
        {"project.yml": f"name: t\n{LLM}runtime:\n  context: {{observation_window: -1}}\n"},
        "project.yml",
        ["runtime.context", "observation_window=-1: must be an integer >= 0"],
    ),
    "unknown provider": (
        {"project.yml": "name: t\nllm: {provider: nope, model: m}\n"},
        "project.yml",
        ["llm.provider: unknown provider `nope` — expected one of: openai, anthropic"],
    ),
    "missing field": (
        {"project.yml": f"name: t\n{LLM}", "agents/a.yml": "description: no name\n"},
        "agents/a.yml",
        ["missing field `name`"],
    ),
    "unknown tool kind": (
        {
            "project.yml": f"name: t\n{LLM}",
            "tools/t.yml": "name: t\ndescription: d\nparameters: {}\nimplementation: {kind: ftp, url: x}\n",
        },
        "tools/t.yml",
        ['implementation.kind: the string "ftp" is not one of the accepted values: http, shell'],
    ),
    "a newline in the value": (
        {"project.yml": f'name: t\n{LLM}defaults: {{max_tokens: "a\\nb"}}\n'},
        "project.yml",
        ['defaults.max_tokens: expected an integer, got the string "a\\nb"'],
    ),
    "a list given a string": (
        {"project.yml": f"name: t\n{LLM}policy: {{enabled: true, allow: 'ls *'}}\n"},
        "project.yml",
        ['policy.allow: expected a list, got the string "ls *"'],
    ),
}


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"pipelines/p.yml": PIPELINE, "agents/a.yml": AGENT, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_config_is_one_line_naming_file_key_and_rule(tmp_path: Path, case: str) -> None:
    files, file, words = CASES[case]
    root = make(tmp_path / "project", files)
    done = subprocess.run(
        [zymi_tui_bin(), "run", "p", "--dir", str(root)], capture_output=True, text=True, timeout=LIMIT, cwd=tmp_path
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and str(root / file) in lines[0], lines[0]
    for said in words:
        assert said in lines[0], lines[0]
    zymi = zymi_bin()
    if zymi is not None:  # the real zymi refuses it too, at the same stage
        theirs = subprocess.run(
            [zymi, "run", "p", "--dir", str(root), "--no-venv"], capture_output=True, text=True, timeout=LIMIT
        )
        stage = "unknown provider `nope`" if case == "unknown provider" else "failed to load project"
        assert theirs.returncode != 0 and stage in theirs.stderr, theirs.stderr
