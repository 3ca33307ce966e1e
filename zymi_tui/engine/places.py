"""Where a path really is, and whether the agent's tools may read or write it (README "Security").

Every path is resolved from the folder it is used in (the project root, or the shell's working folder)
through `..` and every symbolic link, and judged on both spellings: the one written and the real file.

- a read or write of a secret (the contracts' deny patterns, `~/.ssh/*`, `/proc/*/environ`) is denied;
- `/dev/tcp/…`, `/dev/udp/…` (bash's network redirections) and block devices are denied;
- a read outside the project root asks (the few harmless devices aside);
- a write must land in an `allowed_dirs` folder, really (else it asks, as `write_file` does in zymi),
  and never in the project's own files (the store, `project.yml`, `agents/`, `pipelines/`, `.git/`)
  without asking, whatever `allowed_dirs` says;
- a recursive reader reads every file under its roots: a secret there denies, a link out asks.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from zymi_tui.engine.config import FileWriteContract

Decision = tuple[str, str]  # ("allow" | "approve" | "deny", reason)
ALLOW: Decision = ("allow", "")

SECRET_DENY = (
    "*.env", ".env", ".env.*", "*.key", "*.pem", "*.pfx", "*.p12", "id_rsa", "id_dsa", "id_ecdsa",
    "id_ed25519", ".netrc", ".pypirc", ".npmrc", "credentials", "*.secret",
)  # fmt: skip
PROTECTED = ("project.yml", "agents", "pipelines", ".git", ".zymi")  # the project's own files


class UnderFolder:
    """A pattern of paths in one system folder (`/dev/`, `/proc/`), compiled the first time a path in that
    folder is matched: most paths a run judges are not, and compiling these six at import cost a `run`
    ~5.7 M instructions (benchmarks/bench_engine.py --instructions)."""

    __slots__ = ("_compiled", "folder", "source")

    def __init__(self, folder: str, rest: str) -> None:
        self.folder, self.source = folder, "^" + re.escape(folder) + rest
        self._compiled: re.Pattern[str] | None = None

    def match(self, path: str) -> bool:
        """Whether `path` matches from its start (as `re.match`); never without the folder's prefix."""
        if not path.startswith(self.folder):
            return False
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled.match(path) is not None


# whole names (a prefix would let `/dev/fd/../../etc/shadow` through)
HARMLESS_READ = UnderFolder("/dev/", r"(?:null|zero|random|urandom|stdin|tty|fd/\d+)$")
HARMLESS_WRITE = UnderFolder("/dev/", r"(?:null|stdout|stderr|tty|fd/\d+)$")
MAX_TREE = 20000  # files a recursive reader's roots may hold and still be checked one by one
BLOCK_DEVICE = UnderFolder(
    "/dev/", r"(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|disk\d|sr\d)"
)
NETWORK = UnderFolder("/dev/", r"(?:tcp|udp)(?:/|$)")
_PROC_SECRET = UnderFolder("/proc/", r"[^/]+/(?:task/[^/]+/)?(?:environ|mem)$")
_PROC_VIEW = UnderFolder("/proc/", r"[^/]+/(?:task/[^/]+/)?(?:root|cwd|map_files)(?:/|$)")  # another process's tree
_RUST_META = set("\\.+*?()|[]{}^$#&-~")


def rust_escape(text: str) -> str:
    return "".join("\\" + c if c in _RUST_META else c for c in text)


def contract_glob(pattern: str) -> re.Pattern[str]:
    """A contract pattern as zymi compiles it (its text is the reason a denial gives)."""
    return re.compile("^" + rust_escape(pattern).replace("\\*", ".*").replace("\\?", ".") + "$")


def normalize_components(path: str) -> list[str]:
    absolute = path.startswith("/")
    out: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not absolute:
                out.append("..")
        else:
            out.append(comp)
    return out


def secret_place(path: str) -> bool:
    """A process's environment or memory, or anything in an `.ssh` folder."""
    return _PROC_SECRET.match(path) or "/.ssh/" in f"/{path}"


def _block_device(path: str, real: Path) -> bool:
    if BLOCK_DEVICE.match(path) or BLOCK_DEVICE.match(str(real)):
        return True
    try:
        return stat.S_ISBLK(os.stat(real).st_mode)
    except OSError:
        return False


def _never_through(path: str, real: Path | None) -> Decision | None:
    """A path no read or write may go through, as written or resolved: a network socket, or a process's
    view of the file system."""
    if NETWORK.match(path) or (real is not None and NETWORK.match(str(real))):
        return "deny", f"Blocked: network connection through {path}"
    if _PROC_VIEW.match(path) or (real is not None and _PROC_VIEW.match(str(real))):
        return "deny", f"Blocked: a process's view of the file system through {path}"
    return None


class Places(msgspec.Struct, frozen=True):
    root: Path  # resolved
    deny: tuple[re.Pattern[str], ...]
    allowed_dirs: tuple[str, ...]
    protected: tuple[Path, ...]  # resolved

    @classmethod
    def of_contract(cls, root: Path, file_write: FileWriteContract, store: Path | None) -> Places:
        """A project's places under its `contracts.file_write` (the gate's and the sandbox's, the same)."""
        return cls.make(root, file_write.deny_patterns, file_write.allowed_dirs, store)

    @classmethod
    def make(cls, root: Path, deny_patterns: Iterable[str], allowed_dirs: Iterable[str], store: Path | None) -> Places:
        real = root.resolve()
        own = [real / p for p in PROTECTED]
        if store is not None:
            real_store = store.resolve()
            own += [real_store.with_name(real_store.name + tail) for tail in ("", "-wal", "-shm", "-journal")]
        deny = tuple(contract_glob(p) for p in (*SECRET_DENY, *deny_patterns))
        return cls(real, deny, tuple(allowed_dirs), tuple(own))

    def resolve(self, path: str, cwd: Path | None = None) -> Path | None:
        """Where `path` really points, from `cwd` (default: the project root); None: nowhere (a link
        loop, a NUL byte)."""
        try:
            return ((cwd or self.root) / path).resolve()
        except (OSError, ValueError, RuntimeError):
            return None

    def inside(self, real: Path) -> bool:
        return real.is_relative_to(self.root)

    def pattern(self, path: str) -> str | None:
        """The deny pattern `path` matches as written (whole or last component), if any."""
        norm = ("/" if path.startswith("/") else "") + "/".join(normalize_components(path))
        base = norm.rsplit("/", 1)[-1]
        return next((rx.pattern for rx in self.deny if rx.match(norm) or rx.match(base)), None)

    def secret(self, path: str, real: Path) -> str | None:
        """Why `path` (really `real`) is a secret: a deny pattern, or `secret file`; None if it is not."""
        if secret_place(str(real)) or secret_place(path):
            return "secret file"
        inside = real.relative_to(self.root).as_posix() if self.inside(real) else str(real)
        return self.pattern(path) or self.pattern(inside)

    def read(self, path: str, cwd: Path | None = None) -> Decision:
        """A read of `path` from `cwd`."""
        return self.judged_read(path, cwd)[0]

    def judged_read(self, path: str, cwd: Path | None = None) -> tuple[Decision, Path | None]:
        """A read of `path` from `cwd`, and the real file judged (resolved once: the read tool opens it)."""
        real = self.resolve(path, cwd)
        return self._read(path, real), real

    def _read(self, path: str, real: Path | None) -> Decision:
        if HARMLESS_READ.match(path):
            return ALLOW
        blocked = _never_through(path, real)
        if blocked is not None:
            return blocked
        if real is None:
            return "deny", f"File read denied (unresolvable path): {path}"
        if _block_device(path, real):
            return "deny", f"Blocked: block device read: {path}"
        rx = self.secret(path, real)
        if rx is not None:
            return "deny", f"File read denied ({rx}): {path}"
        if path.startswith("/proc/"):  # `self` there is the shell, not this process: never judged as resolved
            return "approve", f"reads {path}, outside the project"
        if not self.inside(real) and not HARMLESS_READ.match(str(real)):
            return "approve", f"reads {real}, outside the project"
        return ALLOW

    def write(self, path: str, cwd: Path | None = None, *, shell: bool = False) -> Decision:
        """A write of `path` from `cwd`: the file_write contract (`shell`: by a shell command, which
        may also write to the terminal's devices)."""
        if shell and HARMLESS_WRITE.match(path):
            return ALLOW
        real = self.resolve(path, cwd)
        blocked = _never_through(path, real)
        if blocked is not None:
            return blocked
        if real is None:
            return "deny", f"File write denied (unresolvable path): {path}"
        if _block_device(path, real):
            return "deny", "Blocked: Disk overwrite"
        rx = self.secret(path, real)
        if rx is not None:
            return "deny", f"File write denied ({rx}): {path}"
        return self.placed(path, real)

    def placed(self, path: str, real: Path) -> Decision:
        """Asks unless `real` is in an allowed folder and not one of the project's own files."""
        if any(real == own or real.is_relative_to(own) for own in self.protected):
            return "approve", f"writes {real}: the project's own files (store, project.yml, agents, pipelines, .git)"
        if not self.allowed_dirs:
            return "approve", f"No allowed_dirs configured, file write requires approval: {path}"
        for d in self.allowed_dirs:
            folder = self.resolve(d)
            if folder is not None and real.is_relative_to(folder):
                return ALLOW
        return "approve", f"File write outside allowed directories: {path}"

    def read_tree(self, path: str, cwd: Path | None = None) -> Decision:
        """A recursive read of `path` from `cwd`: the root itself, then every file and link under it."""
        first = self.read(path, cwd)
        real = self.resolve(path, cwd)
        if first[0] == "deny" or real is None or not real.is_dir():
            return first
        worst, seen = first, 0
        for folder, dirs, files in os.walk(real):
            for name in (*dirs, *files):
                seen += 1
                if seen > MAX_TREE:
                    return "approve", f"more than {MAX_TREE} files under {path}: too many to check"
                found = self._tree_entry(Path(folder) / name)
                if found[0] == "deny":
                    return found
                if found[0] == "approve" and worst[0] == "allow":
                    worst = found
        return worst

    def _tree_entry(self, entry: Path) -> Decision:
        shown = entry.relative_to(self.root).as_posix() if self.inside(entry) else str(entry)
        rx = self.pattern(shown)
        if rx is not None or secret_place(str(entry)):
            return "deny", f"File read denied ({rx or 'secret file'}): {shown}"
        if entry.is_symlink():
            return self.read(str(entry))
        return ALLOW
