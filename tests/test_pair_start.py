"""How the two-process exports start and leave their partner (commands/export_pair.py, lhar_pair.py,
otel_pair.py), seen from the outside: real processes.

- The partner is forked from the caller, its modules loaded (an audit hook in the caller sees `os.fork`
  and no `subprocess.Popen`), and its part is taken; with `ZYMI_TUI_PAIR_SPAWN` set, or a store of
  `FORK_BELOW` ids or more, it is spawned; either way the folder holds what one process writes.
- A caller killed by SIGKILL while its partner works leaves no hidden part folder: the partner removes
  its own once it finds its caller gone.
- An export into a folder removes the part folders of earlier exports whose caller is gone (its pid is
  in the name), and nothing else: not a live caller's, not a name without a pid, not a link.
- otel's partner keeps its spans beside the output file (its file system), not in $TMPDIR."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cloned_runs
from tests.test_lhar_pair import tree

ROOT = Path(__file__).parent.parent
# the CLI in a process of its own; the caller's partner starts (fork / spawn of a pair module) noted in
# a file, and, for otel, where the partner's spans were kept
FORKS_NOTED = """
import os, sys
marks = sys.argv[1]
def note(line):
    with open(marks, "a") as f:
        f.write(line + "\\n")
def hook(event, args):
    if event == "os.fork":
        note("fork")
    elif event == "subprocess.Popen" and any("_pair" in str(a) for a in args[1]):
        note("spawn")
sys.addaudithook(hook)
"""
PROBE = (
    FORKS_NOTED
    + """
from zymi_tui.commands import export_pair
if os.environ.get("PROBE_FORK_BELOW"):
    export_pair.FORK_BELOW = int(os.environ["PROBE_FORK_BELOW"])
from zymi_tui.commands import otel_pair
write_to = otel_pair.SpansPartner.write_to
def noted(self, lines):
    note("spans " + os.readlink(f"/proc/self/fd/{self.out.fileno()}"))
    write_to(self, lines)
otel_pair.SpansPartner.write_to = noted
from zymi_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""
)
PAIRED = {"ZYMI_TUI_LHAR_PAIR_EVENTS": "1", "ZYMI_TUI_OTEL_PAIR_EVENTS": "1"}
ONE = {"ZYMI_TUI_LHAR_PAIR_EVENTS": "1000000000", "ZYMI_TUI_OTEL_PAIR_EVENTS": "1000000000"}
PARTS = ".zymi-tui-lhar-part-"

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir() or not hasattr(os, "fork"), reason="Linux")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ZYMI_TUI_PAIR_SPAWN"}
    return {**env, **extra}


def probe(marks: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-c", PROBE, str(marks), *argv]
    return subprocess.run(cmd, capture_output=True, env=_env(env), cwd=ROOT, timeout=300)


def _marks(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="module")
def six_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cloned_runs(tmp_path_factory.mktemp("pair_start"), 6, "coding_compaction")


def test_the_partner_is_forked_and_spawned_only_when_told(six_runs: Path, tmp_path: Path) -> None:
    one = probe(tmp_path / "one.marks", ONE, "export", str(six_runs), "--format", "lhar", "-o", f"{tmp_path}/one/")
    assert one.returncode == 0 and _marks(tmp_path / "one.marks") == []
    expected = tree(tmp_path / "one")
    assert len(expected) == 6
    spawned = (("spawn", {"ZYMI_TUI_PAIR_SPAWN": "1"}), ("spawn", {"PROBE_FORK_BELOW": "2"}))  # (a larger store)
    for k, (how, extra) in enumerate((("fork", {}), *spawned)):
        marks = tmp_path / f"{k}.marks"
        done = probe(marks, PAIRED | extra, "export", str(six_runs), "--format", "lhar", "-o", f"{tmp_path}/{k}/")
        assert done.returncode == 0, done.stderr
        assert _marks(marks) == [how]  # one partner, started so
        assert tree(tmp_path / str(k)) == expected  # (no hidden folder left either)
        assert done.stderr.decode().replace(f"{tmp_path}/{k}", "F") == one.stderr.decode().replace(
            f"{tmp_path}/one", "F"
        )


def test_otel_partner_keeps_its_spans_beside_the_output(six_runs: Path, tmp_path: Path) -> None:
    """$TMPDIR is another folder: the partner's (unlinked) file is in the output's folder all the same."""
    (tmp_path / "system_tmp").mkdir()
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "spans.jsonl"
    env = PAIRED | {"TMPDIR": str(tmp_path / "system_tmp")}
    for how, extra in (("fork", {}), ("spawn", {"ZYMI_TUI_PAIR_SPAWN": "1"})):
        marks = tmp_path / f"{how}.marks"
        done = probe(marks, env | extra, "export", str(six_runs), "--format", "otel", "-o", str(out))
        assert done.returncode == 0, done.stderr
        got = _marks(marks)
        assert got[0] == how and len(got) == 2
        assert got[1].startswith(f"spans {tmp_path / 'out'}/"), got  # (a file of no name there: "#N (deleted)")
        assert got[1].endswith(" (deleted)")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_an_export_removes_only_stale_part_folders(six_runs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    dead = _dead_pid()
    stale = folder / f"{PARTS}{dead}-abc123"
    stale.mkdir()
    (stale / "pipeline-main-x.lhar").write_text("{}\n")
    live = folder / f"{PARTS}{os.getpid()}-def456"  # (this test's process runs)
    live.mkdir()
    unnamed = folder / f"{PARTS}k2j4x9q1"  # (no pid in the name: not known to be ours)
    unnamed.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("kept\n")
    link = folder / f"{PARTS}{dead}-link"
    link.symlink_to(elsewhere)
    not_a_folder = folder / f"{PARTS}{dead}-file"
    not_a_folder.write_text("a file\n")
    done = probe(tmp_path / "m", PAIRED, "export", str(six_runs), "--format", "lhar", "-o", f"{folder}/")
    assert done.returncode == 0, done.stderr
    left = sorted(p.name for p in folder.iterdir() if p.name.startswith(PARTS))
    assert left == sorted(p.name for p in (live, unnamed, link, not_a_folder))
    assert (elsewhere / "keep").read_text() == "kept\n"
    assert len([p for p in folder.iterdir() if p.suffix == ".lhar"]) == 6


def test_a_killed_caller_leaves_no_part_folder(tmp_path: Path) -> None:
    """SIGKILL to the caller as soon as its partner runs (a child of the caller's); the partner, its
    parent gone at one of its looks, must remove its folder and stop. (A caller killed before its
    partner starts leaves the folder to the next export: the test above.)"""
    db = cloned_runs(tmp_path, 60, "coding_compaction")
    folder = tmp_path / "out"
    folder.mkdir()
    argv = [sys.executable, "-m", "zymi_tui", "export", str(db), "--format", "lhar", "-o", f"{folder}/"]
    caller = subprocess.Popen(argv, env=_env(PAIRED), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = Path(f"/proc/{caller.pid}/task/{caller.pid}/children")
    try:
        deadline = time.monotonic() + 120
        while not children.read_text().split():
            assert caller.poll() is None, "the export ended before its partner was seen"
            assert time.monotonic() < deadline
            time.sleep(0.001)
        os.kill(caller.pid, signal.SIGKILL)
    finally:
        caller.kill()
        caller.wait()
    assert any(p.name.startswith(PARTS) for p in folder.iterdir())  # (the partner's, made before it)
    deadline = time.monotonic() + 60
    while any(p.name.startswith(PARTS) for p in folder.iterdir()):
        assert time.monotonic() < deadline, sorted(p.name for p in folder.iterdir())
        time.sleep(0.05)
