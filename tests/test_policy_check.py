"""`zymi-tui policy check`, run as a user runs it, on the escape project of tests/test_engine_escapes.py:
the verdicts of the escape table and the plain commands, JSON lines, exit codes, errors and --help."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.test_engine_escapes import ESCAPES, PLAIN, make_project
from tests.test_engine_failures import BIN
from tests.waiting import LIMIT

WORD = {"denied": "deny", "requires_approval": "ask", "approved": "approve"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("check"))


def check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), "policy", "check", *args], capture_output=True, text=True, timeout=LIMIT, cwd=cwd)


def test_the_escape_table_as_json_lines(root: Path) -> None:
    commands = [c for c, _ in ESCAPES]
    done = check("--json", "-d", str(root), *commands)
    assert done.returncode == 1, done.stderr  # some verdict is not approve
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["command"] for r in rows] == commands
    assert [r["verdict"] for r in rows] == [WORD[kind] for _, kind in ESCAPES]
    assert all(set(r) == {"command", "verdict", "reason"} and r["reason"] for r in rows)


def test_plain_commands_are_approved_and_exit_0(root: Path) -> None:
    done = check("--json", *PLAIN, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [json.loads(line)["verdict"] for line in done.stdout.splitlines()] == ["approve"] * len(PLAIN)


def test_file_tools_read_and_write(root: Path) -> None:
    done = check("-d", str(root), "--json", "--read", "output/envlink", "--read", "output/notes.txt",
                 "--write", "project.yml", "--write", "output/new.txt")  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows == [
        {"read": "output/envlink", "verdict": "deny", "reason": "File read denied (^.*\\.env$): output/envlink"},
        {"read": "output/notes.txt", "verdict": "approve", "reason": ""},
        {"write": "project.yml", "verdict": "ask", "reason": rows[2]["reason"]},
        {"write": "output/new.txt", "verdict": "approve", "reason": ""},
    ]
    assert "project's own files" in rows[2]["reason"]


def test_plain_text_names_each_verdict(root: Path) -> None:
    done = check("-d", str(root), "cat .e*", "ls .")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("deny    cat .e*  File read denied") and lines[1] == "approve ls ."


def test_errors_are_one_line_exit_2(tmp_path: Path, root: Path) -> None:
    nothing = check("-d", str(root))
    assert nothing.returncode == 2 and len(nothing.stderr.strip().splitlines()) == 1, nothing.stderr
    no_project = check("-d", str(tmp_path), "ls .")
    assert no_project.returncode == 2 and "no project.yml" in no_project.stderr
    assert "Traceback" not in nothing.stderr + no_project.stderr


def test_help_says_what_it_does() -> None:
    done = subprocess.run([str(BIN), "policy", "check", "--help"], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0
    for word in ("--json", "--read PATH", "--write PATH", "approve", "ask", "deny", "exit status", "-d DIR"):
        assert word in done.stdout, word
