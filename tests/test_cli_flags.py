"""One meaning per flag across commands, help text for every one, and errors that name the flag typed."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_store, oracle_db, zymi_tui_bin
from tests.waiting import LIMIT
from zymi_tui.cli import build_parser
from zymi_tui.commands import COMMANDS

STEP = "chat-42:step:reply"  # the oracle chat's one step stream


def command_parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = sub.choices[name]
    return chosen


def options() -> list[tuple[str, argparse.Action]]:
    """(command, action) for every argument of every subcommand, help flags aside."""
    return [
        (spec.name, action)
        for spec in COMMANDS
        for action in command_parser(spec.name)._actions
        if not isinstance(action, argparse._HelpAction)
    ]


def test_every_option_of_every_command_has_help() -> None:
    found = options()
    assert len({c for c, _ in found}) == len(COMMANDS) and len(found) > 100
    missing = [
        f"{command} {'/'.join(a.option_strings) or a.dest}"
        for command, a in found
        if not a.help or (a.help == argparse.SUPPRESS and not _has_visible_twin(command, a))
    ]
    assert missing == []


def _has_visible_twin(command: str, hidden: argparse.Action) -> bool:
    """A hidden option is an old spelling: the same value must have a visible spelling."""
    return any(
        a.dest == hidden.dest and a.help not in (None, argparse.SUPPRESS)
        for c, a in options()
        if c == command and a is not hidden
    )


def test_each_visible_flag_means_one_thing_everywhere() -> None:
    meaning: dict[str, set[str]] = {}
    for _, a in options():
        if a.help != argparse.SUPPRESS:
            for flag in a.option_strings:
                meaning.setdefault(flag, set()).add(a.dest)
    assert {f: d for f, d in meaning.items() if len(d) > 1} == {}
    assert meaning["-r"] == meaning["--run"] == {"run"}
    assert meaning["--step-stream"] == {"step_stream"}
    assert meaning["-d"] == meaning["--dir"] == {"dir"}


@pytest.mark.parametrize("command", ["observe", "events", "runs", "verify", "replay", "context", "compare",
                                     "sweep", "rent", "find", "tune", "run", "serve", "resume", "chat"])  # fmt: skip
def test_every_command_that_reads_a_project_takes_dash_d(command: str) -> None:
    assert {"-d", "--dir"} <= {f for c, a in options() if c == command for f in a.option_strings}


@pytest.mark.parametrize("command", ["observe", "events", "replay", "context", "compare", "sweep", "rent", "find",
                                     "tune", "chat", "demo"])  # fmt: skip
def test_a_run_stream_is_dash_r_everywhere(command: str) -> None:
    runs = [a for c, a in options() if c == command and a.dest == "run" and a.help != argparse.SUPPRESS]
    assert len(runs) == 1 and runs[0].option_strings == ["-r", "--run"] and runs[0].metavar == "RUN"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=LIMIT)


@pytest.fixture(scope="module")
def chat_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_store(oracle_db("chat_profile"), tmp_path_factory.mktemp("flags"))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["find", "xyz", "{db}", "--stream", "nope"], "--stream nope:"),
        (["find", "xyz", "{db}", "--step-stream", "nope:step:x"], "--step-stream nope:step:x:"),
        (["rent", "{db}", "--stream", "chat-42"], "--stream chat-42: not a step stream"),
        (["rent", "{db}", "-r", "nope"], "-r nope: no such run stream"),
        (["rent", "{db}", "--run", "nope"], "--run nope: no such run stream"),
        (["context", "{db}", "-r", "chat-42", "--step", "x", "--seq", "1"], "--step x: run chat-42 has no such step"),
        (["replay", "{db}", "-r", "nope"], "-r nope: no such run stream"),
        (["events", "{db}", "-s", "nope"], None),  # zymi's spelling still works: an empty listing, exit 0
    ],
)  # fmt: skip
def test_errors_name_the_flag_the_user_typed(chat_db: Path, args: list[str], named: str | None) -> None:
    done = cli(*(a.replace("{db}", str(chat_db)) for a in args))
    if named is None:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stdout
    assert named in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_step_stream_by_run_and_step(chat_db: Path) -> None:
    """`-r RUN` alone picks the run's only step stream; `--step-stream`, `--stream` and `-r RUN --step` agree."""
    ways = (["--step-stream", STEP], ["--stream", STEP], ["-r", "chat-42"], ["-r", "chat-42", "--step", "reply"])
    outs = [cli("find", "Привет", str(chat_db), *how, "--json").stdout for how in ways]
    assert outs[0] and outs[0].count("\n") > 10
    assert outs == [outs[0]] * 4


def test_replay_and_context_take_dash_d_and_dash_r(chat_db: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".zymi").mkdir(parents=True)
    (project / ".zymi" / "events.db").write_bytes(chat_db.read_bytes())
    for name in ("project.yml", "agents", "pipelines"):
        src = oracle_db("chat_profile").parent / "project" / name
        dst = project / name
        if src.is_dir():
            dst.mkdir()
            for f in src.iterdir():
                (dst / f.name).write_bytes(f.read_bytes())
        else:
            dst.write_bytes(src.read_bytes())
    whole = cli("replay", "-d", str(project), "--json").stdout.splitlines()
    one = cli("replay", "-d", str(project), "-r", "chat-7", "--json").stdout.splitlines()
    assert 0 < len(one) < len(whole)
    calls = [line for line in one if '"totals": true' not in line]
    assert calls and all('"stream_id": "chat-7:step:reply"' in line for line in calls)
    a = cli("context", "-d", str(project), "--step-stream", STEP, "--seq", "1", "--json")
    b = cli("context", "-d", str(project), "-r", "chat-42", "--seq", "1", "--json")
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout


def test_chat_help_says_what_it_does_without_a_chat_pipeline() -> None:
    done = cli("chat", "--help")
    text = " ".join(done.stdout.split())
    assert "default: `chat`; in a project without one: its only pipeline, said so" in text
