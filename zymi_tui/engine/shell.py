"""Persistent shells, one per run stream (docs/engine.md#shell): state such as `cd` survives between commands."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from pathlib import Path

import msgspec

from zymi_tui.engine.config import ShellRuntime
from zymi_tui.engine.sandbox import shell_pid

MAX_OUTPUT = 1024 * 1024
# after each command, bash's globbing is put back to its defaults, the ones the policy expands words
# with (engine/shell_words.py): an earlier approved `shopt -s dotglob` cannot make `cat *` read `.env`
GLOB_DEFAULTS = (
    "shopt -u dotglob nocaseglob extglob globstar nullglob failglob 2>/dev/null; unset GLOBIGNORE 2>/dev/null; "
)
_rc = "__zymi_rc"
READ_CHUNK = 1 << 16
CLOSE_GRACE_S = 0.5  # a sandboxed shell's time to end by itself before its group is killed


class ShellError(Exception):
    pass


class ShellResult(msgspec.Struct):
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False


Read = tuple[str, str]


async def _both(out_task: asyncio.Task[Read], err_task: asyncio.Task[Read], timeout: float) -> tuple[Read, Read] | None:
    """Both readers' results; None if they are not done within `timeout` (they keep reading); the
    first reader's error as soon as it fails. (Not `wait_for(gather(...))`: cancelling that leaves a
    gathering future whose error nobody reads, which asyncio prints as a traceback.)"""
    done, _ = await asyncio.wait((out_task, err_task), timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    errors = [e for e in (task.exception() for task in done) if e is not None]
    if errors:
        raise errors[0]
    if len(done) < 2:
        return None
    return out_task.result(), err_task.result()


async def _reaped(proc: asyncio.subprocess.Process) -> int:
    """Wait until asyncio's child watcher has reaped `proc`, even if cancelled meanwhile (a cancelled
    wait leaves the process to be polled when its transport is closed, which races the watcher; see
    `ShellSession.start`). The cancellation is raised once the process is reaped."""
    waiting = asyncio.ensure_future(proc.wait())
    try:
        return await asyncio.shield(waiting)
    except asyncio.CancelledError:
        await waiting
        raise


class ShellSession:
    def __init__(self, proc: asyncio.subprocess.Process, shell_path: str, sandboxed: bool = False) -> None:
        self.proc = proc
        self.shell_path = shell_path
        self.lock = asyncio.Lock()
        self._rest: dict[asyncio.StreamReader, bytes] = {}
        self.sandboxed = sandboxed
        self._pid: int | None = None
        self.reset = GLOB_DEFAULTS if os.path.basename(shell_path) == "bash" else ""

    @property
    def pid(self) -> int:
        """The shell's own process (inside the sandbox: bwrap's grandchild, found once)."""
        if self._pid is None:
            self._pid = shell_pid(self.proc.pid) if self.sandboxed else self.proc.pid
        return self._pid

    def cwd(self) -> Path | None:
        """The folder the shell is in now (a `cd` persists between commands); None if unknown."""
        try:
            return Path(os.readlink(f"/proc/{self.pid}/cwd"))
        except OSError:
            return None

    @classmethod
    async def start(cls, config: ShellRuntime, cwd: Path, prefix: tuple[str, ...] = ()) -> ShellSession:
        """The shell, started under `prefix` (a sandbox's command line) when one is given."""
        args = [*prefix, config.shell_path]
        name = os.path.basename(config.shell_path)
        if config.interactive:
            args.append("-i")
        elif name in ("bash", "zsh"):
            args += ["--norc", "--noprofile"] if name == "bash" else ["--no-rcs"]
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *args,
                cwd=str(cwd),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled (Ctrl-C) while the shell was being spawned: let the spawn finish, then kill
            # the shell and wait for it here. Left to asyncio, the half-made process is closed by
            # closing its pipes and polling it, which can reap the shell before asyncio's child
            # watcher does, and the watcher then prints "Unknown child process pid N" on stderr.
            with contextlib.suppress(Exception):
                await cls(await spawn, config.shell_path, sandboxed=bool(prefix)).close()
            raise
        session = cls(proc, config.shell_path, sandboxed=bool(prefix))
        if prefix:
            try:
                await session.ready()
            except BaseException:  # Ctrl-C while the sandbox came up: it goes, as a half-spawned shell does
                await asyncio.shield(session.close())
                raise
        return session

    async def ready(self) -> None:
        """Wait until the sandboxed shell answers (so its pid, under bwrap's, can be found)."""
        hint = "`runtime.shell.sandbox: false` runs it bare"
        try:
            out = await self.run("true", 30)
        except (ShellError, OSError) as e:
            await self.close()
            raise ShellError(f"the sandboxed shell did not start ({e}); {hint}") from None
        if out.exit_code != 0 or out.timed_out:
            why = out.stderr.strip()[:200] or f"exit code {out.exit_code}"
            await self.close()
            raise ShellError(f"the sandboxed shell did not start ({why}); {hint}")

    async def _read_until(self, stream: asyncio.StreamReader, marker: str) -> tuple[str, str]:
        """What the stream carries before the marker's line (right-stripped), and the rest of that line.
        Read in chunks, not line by line (`seq 1 2000` was 2,000 reads); what follows the marker's line
        (a background job's late output) is kept for the next command, as reading by lines left it."""
        tag = marker.encode()
        buf = bytearray(self._rest.pop(stream, b""))
        searched = 0
        while True:
            at = buf.find(tag, searched)
            end = buf.find(b"\n", at) if at >= 0 else -1
            if end >= 0:
                if end + 1 < len(buf):
                    self._rest[stream] = bytes(buf[end + 1 :])
                text = buf[:at].decode("utf-8", errors="replace").rstrip()
                return text, buf[at + len(tag) : end].decode("utf-8", errors="replace").strip()
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                if at >= 0:  # the marker's line, cut short by the end of the stream
                    text = buf[:at].decode("utf-8", errors="replace").rstrip()
                    return text, buf[at + len(tag) :].decode("utf-8", errors="replace").strip()
                raise ShellError("shell session died unexpectedly")
            if at < 0:
                searched = max(0, len(buf) - len(tag) + 1)
            buf += chunk

    async def run(self, command: str, timeout: float) -> ShellResult:
        async with self.lock:
            assert self.proc.stdin and self.proc.stdout and self.proc.stderr
            if self.proc.returncode is not None:
                raise ShellError("shell session died unexpectedly")
            tag = f"__ZYMI_END_{uuid.uuid4()}__"
            end = f"printf '\\n{tag}%d\\n' \"${_rc}\"; printf '\\n{tag}\\n' >&2\n"
            script = f"{{ {command} ; }}; {_rc}=$?; {self.reset}{end}"
            self.proc.stdin.write(script.encode())
            await self.proc.stdin.drain()
            out_task = asyncio.ensure_future(self._read_until(self.proc.stdout, tag))
            err_task = asyncio.ensure_future(self._read_until(self.proc.stderr, tag))
            try:
                got = await _both(out_task, err_task, timeout)
                if got is not None:
                    (out, code), (err, _) = got
                    return ShellResult(int(code or 0), out, err)
                await self.kill_children()
                try:
                    got = await _both(out_task, err_task, 5)
                except ShellError:
                    got = None
                if got is None:
                    await self.close()
                    return ShellResult(124, "", "", timed_out=True)
                (out, _), (err, _) = got
                return ShellResult(124, out, err, timed_out=True)
            finally:
                out_task.cancel()
                err_task.cancel()

    async def kill_children(self) -> None:
        proc = await asyncio.create_subprocess_exec(
            "pkill", "-TERM", "-P", str(self.pid), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        await _reaped(proc)

    async def close(self) -> None:
        if self.sandboxed and self.proc.returncode is None and self.proc.stdin is not None:
            self.proc.stdin.close()  # the shell ends at its input's end, and bwrap, reaping it, after it
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), CLOSE_GRACE_S)
        if self.sandboxed:  # bwrap, its init and the shell share the group it leads (start_new_session):
            with contextlib.suppress(ProcessLookupError, PermissionError):  # all go, even one killed
                os.killpg(self.proc.pid, signal.SIGKILL)  # while it was still setting up its child
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        await _reaped(self.proc)
