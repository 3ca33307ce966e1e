"""Defence in depth under the shell policy: the agent's shell runs in bubblewrap when the machine allows.

In the sandbox the whole file system is read-only (the project too), `/tmp` is a private scratch
folder, the `allowed_dirs` of the file_write contract are the only writable places, there is no
network unless `runtime.shell.network: true`, a fresh `/proc` shows only the sandbox's own
processes, `/dev` holds only the harmless devices (no disk), and every capability is dropped. A
command the policy (or a human) let through still cannot write elsewhere or reach the network.

Where `bwrap` is absent or cannot run (no user namespaces, a seccomp profile forbidding them), the
shell runs as before and the start-up line says that the parser alone decides; `runtime.shell.sandbox:
false` turns the sandbox off on purpose.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import msgspec

from zymi_tui.engine.config import ShellRuntime

PROBE_TIMEOUT_S = 10.0
BASE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
ISOLATION = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--cap-drop", "ALL")


class Sandbox(msgspec.Struct, frozen=True):
    """The `bwrap` command line the shell is started under (empty: no sandbox) and the start-up line."""

    prefix: tuple[str, ...]
    line: str

    @property
    def active(self) -> bool:
        return bool(self.prefix)


@functools.cache
def bwrap_problem(bwrap: str | None) -> str | None:
    """Why `bwrap` cannot sandbox here (None: it can): tried once per process with the options used."""
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, *BASE, *ISOLATION, "--unshare-net", "true"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap failed to start: {e}"
    if done.returncode != 0:
        lines = (done.stderr or "").strip().splitlines()
        return f"bwrap cannot run here: {lines[-1] if lines else f'exit code {done.returncode}'}"
    return None


def writable_dirs(root: Path, allowed_dirs: list[str]) -> list[Path]:
    """The allowed_dirs as real folders (made when missing: the contract lets the agent write there)."""
    out: list[Path] = []
    for d in allowed_dirs:
        folder = (root / d).resolve()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if folder.is_dir() and folder not in out:
            out.append(folder)
    return out


def make_sandbox(root: Path, allowed_dirs: list[str], shell: ShellRuntime, protected: tuple[Path, ...] = ()) -> Sandbox:
    """The sandbox for a project's shell; `protected`: what stays read-only even inside an allowed
    folder (the project's own files: engine/places.py)."""
    if not shell.sandbox:
        return Sandbox((), "sandbox: off (runtime.shell.sandbox: false); the shell policy's parser alone decides")
    bwrap = shutil.which("bwrap")
    problem = bwrap_problem(bwrap)
    if problem is not None or bwrap is None:
        return Sandbox((), f"sandbox: none ({problem}); the shell policy's parser alone decides")
    real = root.resolve()
    binds: list[str] = ["--ro-bind", str(real), str(real)]
    dirs = writable_dirs(real, allowed_dirs)
    for folder in dirs:
        binds += ["--bind", str(folder), str(folder)]
    for own in protected:  # e.g. `allowed_dirs: ["."]`: project.yml, .git, the store stay read-only
        if own.exists() and any(own.is_relative_to(folder) for folder in dirs):
            binds += ["--ro-bind", str(own), str(own)]
    net = () if shell.network else ("--unshare-net",)
    prefix = (bwrap, *BASE, *binds, *ISOLATION, *net, "--chdir", str(real), "--")
    shown = ", ".join(os.path.relpath(d, real) if d.is_relative_to(real) else str(d) for d in dirs) or "none"
    network = "network allowed" if shell.network else "no network"
    return Sandbox(prefix, f"sandbox: bubblewrap (project read-only; writable: {shown}; {network})")


def shell_pid(pid: int) -> int:
    """The shell's own pid when `pid` is bwrap's (bwrap -> its init -> the shell), else `pid`."""
    here = pid
    for _ in range(3):
        try:
            comm = Path(f"/proc/{here}/comm").read_text().strip()
            children = Path(f"/proc/{here}/task/{here}/children").read_text().split()
        except OSError:
            return here
        if comm != "bwrap" or len(children) != 1:
            return here
        here = int(children[0])
    return here
