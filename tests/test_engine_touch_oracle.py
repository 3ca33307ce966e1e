"""The gate decides on what a command will touch; strace says what it did touch. Each command of the
escape table and the plain list (tests/test_engine_escapes.py) that is safe to run is run for real by
bash under `strace -f`, in the project `zymi-tui init` made, and the files it really opened and the
connections it really tried are held against the verdict the gate gave before it ran:

- it opened the secret (`.env`, through any spelling or link) -> the verdict was deny, or asked
  because the command's effect could not be told from its words (a POSIX class, a file list);
- it opened a sensitive file outside the project (`/etc/shadow`, the test's `secret.txt`, a
  `/proc/*/environ`) -> the verdict was not approve;
- it opened a file for writing outside `allowed_dirs` (or into the project's own files) -> not approve;
- it tried a network connection -> not approve.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NO_STRACE
from tests.test_engine_escapes import ESCAPES, PLAIN, make_project
from zymi_tui.engine.loader import load_workspace
from zymi_tui.engine.policy import Contracts

STRACE = shutil.which("strace")
NOT_RUN = {  # would harm the machine, not the throwaway project
    ":(){ :|:& };:",  # a fork bomb
    "echo x > /dev/sda",  # /dev is shared: as root this makes a file there
    "head -c 100 /dev/sda",
}
_OPEN = re.compile(r'^\d+\s+(?:open|openat|openat2|creat)\((?:AT_FDCWD|\d+), "([^"]*)", ([A-Z_|]+)[^)]*\)\s+=\s+\d+')
_CONNECT = re.compile(r"^\d+\s+connect\(\d+, \{sa_family=AF_INET6?")
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
HARMLESS = {"/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr"}
UNTOLD = ("only known when it runs", "named in another file", "not in its words", "cannot be parsed")


def touched(command: str, root: Path) -> tuple[list[Path], list[Path], bool]:
    """(files opened to read, files opened to write, a connection tried) by bash running `command`."""
    assert STRACE is not None
    log = root.parent / "strace.log"
    subprocess.run(
        [STRACE, "-f", "-qq", "-o", str(log), "-e", "trace=open,openat,openat2,creat,connect",
         "bash", "--norc", "--noprofile", "-c", command],
        cwd=root, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
    )  # fmt: skip
    reads: list[Path] = []
    writes: list[Path] = []
    connected = False
    for line in log.read_text().splitlines():
        connected = connected or bool(_CONNECT.match(line))
        m = _OPEN.match(line)
        if m is None:
            continue
        path = (root / m.group(1)).resolve()
        (writes if any(f in m.group(2) for f in WRITE_FLAGS) else reads).append(path)
    return reads, writes, connected


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Contracts]:
    root = make_project(tmp_path_factory.mktemp("oracle"))
    ws = load_workspace(root)
    return root, Contracts(ws.project.policy, ws.project.contracts.file_write, ws.root)


COMMANDS = [c for c, _ in ESCAPES if c not in NOT_RUN] + PLAIN


@pytest.mark.skipif(STRACE is None, reason=f"{NO_STRACE}: strace is not installed")
@pytest.mark.parametrize("command", COMMANDS)
def test_what_a_command_really_touched_agrees_with_its_verdict(project: tuple[Path, Contracts], command: str) -> None:
    root, contracts = project
    judged = contracts.shell_command(command)  # before it runs
    verdict = judged.kind
    reads, writes, connected = touched(command, root)
    base = root.parent
    secret = (root / ".env").resolve()
    sensitive = {Path("/etc/shadow"), (base / "secret.txt").resolve(), Path.home() / ".bash_history"}
    allowed = [(root / "output").resolve(), (root / "memory").resolve()]
    opened = reads + writes
    if secret in opened:
        untold = verdict == "requires_approval" and any(w in judged.why for w in UNTOLD)
        assert verdict == "denied" or untold, (command, verdict, judged.why)
    if any(p in sensitive or re.match(r"^/proc/\d+/environ$", str(p)) for p in opened):
        assert verdict != "approved", (command, verdict)
    outside = [p for p in writes if str(p) not in HARMLESS and not any(p.is_relative_to(d) for d in allowed)]
    if outside:
        assert verdict != "approved", (command, verdict, outside)
    if connected:
        assert verdict != "approved", (command, verdict)


@pytest.mark.skipif(STRACE is None, reason=f"{NO_STRACE}: strace is not installed")
def test_the_oracle_sees_what_it_must(project: tuple[Path, Contracts]) -> None:
    """The tracing itself works: a read of the secret, a write and a connection are all seen."""
    root, _ = project
    reads, _, _ = touched("cat .[e]nv > /dev/null", root)
    _, writes, _ = touched("echo x > output/oracle.txt", root)
    _, _, connected = touched("exec 3<>/dev/tcp/127.0.0.1/9 || true", root)
    assert (root / ".env").resolve() in reads
    assert (root / "output" / "oracle.txt").resolve() in writes
    assert connected
