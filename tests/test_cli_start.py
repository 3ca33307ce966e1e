"""`--version` and `--help` import only the command table; a command imports only its own module."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui import commands
from zymi_tui.cli import build_parser
from zymi_tui.commands import COMMANDS

ORACLE = Path(__file__).resolve().parent / "oracle"
HEAVY = ("pydantic", "textual", "rich", "asyncio", "aiosqlite", "asyncpg", "httpx", "yaml", "zymi_tui.events")
# `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`): ~35 M instructions, a quarter of `--version`
HEAVY_STDLIB = ("dataclasses", "inspect")


def modules_after(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after `zymi-tui ARGV` (parsing only, the command not run)."""
    code = (
        "import sys\n"
        "from zymi_tui.cli import build_parser, chosen_command\n"
        f"argv = {list(argv)!r}\n"
        "try:\n"
        "    build_parser(chosen_command(argv)).parse_args(argv)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT, check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["bogus-command"]])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    loaded = modules_after(*argv)
    assert "zymi_tui.cli" in loaded
    assert not [m for m in loaded if m.startswith(HEAVY)]
    assert not [m for m in loaded if m.endswith("_cmds")]
    assert not [m for m in HEAVY_STDLIB if m in loaded]


def test_a_command_imports_its_own_module_only() -> None:
    loaded = modules_after("events", "--help")
    assert "zymi_tui.commands.store_cmds" in loaded
    assert not [m for m in loaded if m.endswith("_cmds") and m != "zymi_tui.commands.store_cmds"]
    assert not [m for m in loaded if m.startswith("textual")]


def modules_after_running(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after running `zymi-tui ARGV` to its end (exit 0)."""
    code = (
        "import sys\n"
        "from zymi_tui.cli import main\n"
        f"code = main({list(argv)!r})\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


# the kinds (events/kinds.py, msgspec structs) are the one declaration every reader derives from
LEAN_READERS = ("pydantic", "textual", "zymi_tui.events.envelope")


@pytest.mark.parametrize(
    "argv",
    [["runs"], ["runs", "--turns", "--raw"], ["verify"]],
    ids=" ".join,
)
def test_lean_readers_never_load_the_event_model(argv: list[str]) -> None:
    """Listing runs and checking the chain read a few fields (msgspec) or the raw columns: the
    whole-event reader (and pydantic, and Textual) is never imported, not even after the run."""
    store = str(ORACLE / "chat_profile" / "events.db")
    loaded = modules_after_running(argv[0], store, *argv[1:])
    assert "zymi_tui.events.sqlite_read" in loaded  # the store was really read
    assert not [m for m in loaded if m.startswith(LEAN_READERS)]


def test_a_whole_event_loads_the_reader_not_pydantic() -> None:
    """The check above can fail: showing events as text decodes them whole, with the kinds' msgspec
    structs: no pydantic."""
    loaded = modules_after_running("events", str(ORACLE / "chat_profile" / "events.db"), "-l", "3")
    assert "zymi_tui.events.envelope" in loaded
    assert not [m for m in loaded if m.startswith("pydantic")]


def test_an_engine_run_writes_events_without_pydantic(tmp_path: Path) -> None:
    """The engine makes its events in code (msgspec structs) and reads the project with msgspec: pydantic
    (~100 ms to import and build schemas; still installed beside us by other packages) is never loaded."""
    init = [sys.executable, "-m", "zymi_tui", "init", "-n", "fresh"]
    assert subprocess.run(init, cwd=tmp_path, capture_output=True, timeout=LIMIT).returncode == 0
    code = (
        "import sys\n"
        "from zymi_tui.cli import main\n"
        "code = main(['run', 'main', '-i', 'task=list the files'])\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout
    loaded = set(done.stderr.split())
    assert "zymi_tui.events.kinds" in loaded and "zymi_tui.engine.agent" in loaded
    assert not [m for m in loaded if m.startswith("pydantic")]


def test_every_command_module_is_in_the_table() -> None:
    on_disk = {info.name for info in pkgutil.iter_modules(commands.__path__) if info.name.endswith("_cmds")}
    assert on_disk == {spec.module for spec in COMMANDS}


@pytest.mark.parametrize("spec", COMMANDS, ids=lambda s: s.name)
def test_every_command_parses_and_has_a_handler(spec: commands.CommandSpec, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser(spec.name)
    with pytest.raises(SystemExit) as done:
        parser.parse_args([spec.name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: zymi-tui {spec.name}")
    actions = [a for a in parser._subparsers._group_actions if a.dest == "command"]  # type: ignore[union-attr]
    sub = actions[0].choices[spec.name]  # type: ignore[index]
    assert callable(sub.get_default("func"))
