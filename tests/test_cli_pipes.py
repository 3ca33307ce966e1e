"""A closed pipe is a normal end: every subcommand piped into `head -1` (bash, `set -o pipefail`, as a script
runs it) exits 0 with nothing on stderr; a full-screen one says in one line that it needs a terminal. And the
command line's own wording: a command's unknown option is refused with that command's usage, its help fits an
80-column terminal and names the options its usage shows."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui_support import scenario_copy, sql
from tests.waiting import LIMIT
from zymi_tui.commands import COMMANDS

ZYMI_TUI = [sys.executable, "-m", "zymi_tui"]


def piped(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    line = " ".join(shlex.quote(a) for a in [*ZYMI_TUI, *args])
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line} </dev/null | head -1"],
        cwd=cwd, capture_output=True, text=True, timeout=LIMIT, env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("pipes")
    db = scenario_copy("coding_compaction", tmp)
    run = str(sql(db, "SELECT stream_id FROM events WHERE kind_tag = 'pipeline_requested' LIMIT 1")[0][0])
    step = str(sql(db, "SELECT stream_id FROM events WHERE kind_tag = 'llm_call_started' LIMIT 1")[0][0])
    seq = str(sql(db, "SELECT sequence FROM events WHERE kind_tag = 'llm_call_started' LIMIT 1")[0][0])
    project = tmp / "project-new"
    project.mkdir()
    subprocess.run([*ZYMI_TUI, "init"], cwd=project, check=True, capture_output=True, timeout=LIMIT)
    subprocess.run([*ZYMI_TUI, "run", "main", "-i", "task=hello"], cwd=project, check=True, capture_output=True)
    ran = subprocess.run([*ZYMI_TUI, "runs", "--raw"], cwd=project, check=True, capture_output=True, text=True)
    fork = ran.stdout.split("pipeline-main-", 1)[1][:36]
    lhar = tmp / "run.lhar"
    subprocess.run([*ZYMI_TUI, "export", str(db), "--format", "lhar", "-r", run, "-o", str(lhar)], check=True,
                   capture_output=True, timeout=LIMIT)  # fmt: skip
    return {"db": str(db), "run": run, "step": step, "seq": seq, "project": str(project), "tmp": str(tmp),
            "fork": f"pipeline-main-{fork}", "lhar": str(lhar)}  # fmt: skip


# every subcommand, with arguments that make it print (most print far more than the pipe holds)
LINES: dict[str, list[str]] = {
    "events": ["events", "{db}", "--all"],
    "events -l 5": ["events", "{db}", "-l", "5"],
    "runs": ["runs", "{db}", "--turns"],
    "verify": ["verify", "{db}"],
    "replay": ["replay", "{db}"],
    "context": ["context", "{db}", "--step-stream", "{step}", "--seq", "{seq}"],
    "compare": ["compare", "{db}", "--profiles", "recorded,chat,eval"],
    "sweep": ["sweep", "{db}", "--workers", "1"],
    "rent": ["rent", "{db}", "-r", "{run}"],
    "find": ["find", "the", "{db}", "--step-stream", "{step}"],
    "advise": ["advise", "{db}"],
    "export lhar": ["export", "{db}", "--format", "lhar"],
    "export otel": ["export", "{db}", "--format", "otel"],
    "chat": ["chat", "-d", "{project}"],
    "demo": ["demo", "{tmp}/demo"],
    "run": ["run", "main", "-d", "{project}", "-i", "task=hello"],
    "init": ["init"],  # in a new folder (below)
    "resume": ["resume", "{fork}", "--from-step", "process", "--dry-run", "-d", "{project}"],
    "migrate": ["migrate", "{db}", "{tmp}/migrated.db"],
    "policy": ["policy", "check", "-d", "{project}", "ls .", "echo hi", "wc -l project.yml"],
    "import": ["import", "{lhar}", "-d", "{tmp}/imported"],
    "collect": ["collect", "--help"],  # a server: serves until stopped
    "serve-web": ["serve-web", "--help"],  # a server: serves until stopped
    "serve": ["serve", "--help"],  # a server: serves until stopped
}
FULL_SCREEN = {"observe": ["observe", "{db}"], "tune": ["tune", "{db}"]}


def test_every_subcommand_is_tried() -> None:
    assert {line.split()[0] for line in [*LINES, *FULL_SCREEN]} == {c.name for c in COMMANDS}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_closed_pipe_is_a_normal_end(name: str, where: dict[str, str]) -> None:
    cwd = Path(where["tmp"], "init-here" if name == "init" else "")
    cwd.mkdir(exist_ok=True)
    done = piped([a.format(**where) for a in LINES[name]], cwd)
    assert done.returncode == 0, (done.returncode, done.stderr)
    if name == "migrate":  # its progress bar is on stderr; nothing else may be
        assert "━" in done.stderr and "rror" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    else:
        assert done.stderr == "", done.stderr
    assert done.stdout.strip(), "nothing was printed"


@pytest.mark.parametrize("name", sorted(FULL_SCREEN))
def test_a_full_screen_command_into_a_pipe_says_it_needs_a_terminal(name: str, where: dict[str, str]) -> None:
    done = piped([a.format(**where) for a in FULL_SCREEN[name]], Path(where["tmp"]))
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout[:300])
    assert done.stderr == f"zymi-tui: error: {name} needs a terminal (stdin and stdout must be a TTY)\n"


def test_a_run_whose_reader_went_away_still_ends_recorded(where: dict[str, str]) -> None:
    """`run main | head -1`: the run goes on to its end, its output dropped; it is not left `running`."""
    project = Path(where["project"])
    done = piped(["run", "main", "-d", str(project), "-i", "task=hello again"], project)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    runs = subprocess.run([*ZYMI_TUI, "runs", str(project)], capture_output=True, text=True, check=True)
    row = next(line for line in runs.stdout.splitlines() if "hello again" in line)
    assert row.startswith("ok "), runs.stdout


def test_an_unknown_option_is_refused_with_the_commands_own_usage(where: dict[str, str]) -> None:
    done = subprocess.run([*ZYMI_TUI, "events", where["db"], "--bogus"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: zymi-tui events "), done.stderr
    assert done.stderr.splitlines()[-1] == "zymi-tui events: error: unrecognized arguments: --bogus"


def test_an_unknown_profile_of_compare_is_named_by_its_option(where: dict[str, str]) -> None:
    done = subprocess.run(
        [*ZYMI_TUI, "compare", where["db"], "--profiles", "chat,nope"], capture_output=True, text=True
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("zymi-tui: error: --profiles 'nope': unknown profile"), done.stderr


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_help_fits_80_columns_and_names_only_options_of_its_usage(name: str) -> None:
    done = subprocess.run([*ZYMI_TUI, name, "--help"], capture_output=True, text=True, env={**os.environ,
                          "COLUMNS": "80"})  # fmt: skip
    assert done.returncode == 0
    assert [line for line in done.stdout.splitlines() if len(line) > 80] == []
    usage, _, rest = done.stdout.partition("\n\n")
    description = rest.split("positional arguments:")[0].split("options:")[0]
    named = {w.strip("`,.;:()[]").split("=")[0] for w in description.split() if w.strip("`(").startswith("--")}
    assert [w for w in named if w not in usage] == [], "the description names options its usage does not show"
