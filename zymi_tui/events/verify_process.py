"""The whole-store check (`verify_store`) of a SQLite store, in a process of its own, summed up.

The dashboard runs its hash-chain check here: on a core of its own (its hashing and decoding never take
the interpreter lock the screen needs), from the dashboard's start (`chain_freshness.start_check`; not once
every run is listed), and in memory of its own (a check holds each stream's last hash and the heads table:
never added to the dashboard's peak; figures in docs/performance-notes.md). What comes back is one JSON line:
the streams checked, the first problem of each run whose chain fails (`ChainSummary`), and SQLite's findings.

The process reads its stdin and exits when it closes: a dashboard that quits, or dies, ends its check.

    python -m zymi_tui.events.verify_process STORE.db   # prints the summary as a JSON line
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from zymi_tui.events.store import StoreError, run_of

NICENESS = 10  # added to the check process's (a nice of 10 weighs ~1/10 of one of 0 on a shared core)


@dataclass(frozen=True, slots=True)
class ChainSummary:
    """What the dashboard shows of a check: `broken` maps a run's stream to its first failing stream's problem."""

    streams: int
    broken: dict[str, str] = field(default_factory=dict)
    damage: list[str] = field(default_factory=list)


def summed_up(verdicts: list[tuple[str, str | None]], damage: list[str]) -> ChainSummary:
    """(stream, problem or None) per stream, sorted by stream id, as a `ChainSummary`."""
    broken: dict[str, str] = {}
    for stream, problem in verdicts:
        if problem is not None:
            broken.setdefault(run_of(stream), f"{stream}: {problem}")
    return ChainSummary(len(verdicts), broken, damage)


async def check_store(path: Path) -> ChainSummary:
    from zymi_tui.events.factory import open_reader
    from zymi_tui.events.location import SqliteStore
    from zymi_tui.events.verify import verify_store

    reader = await open_reader(SqliteStore(path))
    try:
        report = await verify_store(reader)
    finally:
        await reader.close()
    return summed_up([(v.stream_id, v.problem) for v in report.verdicts], report.damage)


class CheckProcess:
    """`check_store` run by `python -m zymi_tui.events.verify_process`; `result` waits for it (call it from a
    worker thread), `stop` ends it early."""

    def __init__(self, path: Path) -> None:
        # (a pipe left unread could fill and stop the process); closed in `stop`
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
        )

    def result(self) -> ChainSummary:
        """The summary, or StoreError (its one line) when the check could not be done, or was stopped. The
        pipes are closed on the way out (they are this thread's: `stop`, from any thread, only kills)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            out = self.proc.stdout.read()  # (its stdin stays open until then: the process ends when it closes)
            self.proc.wait()
            self.errors.seek(0)
            err = self.errors.read()
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout, self.errors):
                pipe.close()
        try:
            got = json.loads(out.decode("utf-8", "replace").splitlines()[-1])
        except (IndexError, ValueError):
            lines = err.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"it ended with status {self.proc.returncode}"
            raise StoreError(f"the hash-chain check stopped: {why}") from None
        if "error" in got:
            raise StoreError(str(got["error"]))
        return ChainSummary(int(got["streams"]), dict(got["broken"]), list(got["damage"]))

    def stop(self) -> None:
        """End the check now (its `result` then raises StoreError)."""
        if self.proc.poll() is None:
            self.proc.kill()


def _exit_when_stdin_closes() -> None:
    """The parent's end of our stdin closes when it exits (or dies): so do we, whatever is being read."""

    def watch() -> None:
        while os.read(0, 4096):  # (not sys.stdin: its lock, held here, would stop the interpreter's exit)
            pass
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m zymi_tui.events.verify_process STORE.db", file=sys.stderr)
        return 2
    _exit_when_stdin_closes()
    # below the dashboard and the process reading its runs list, which start at the same moment: the check
    # takes the CPU they leave (a core of its own on an idle machine), never theirs (the runs are drawn
    # first), and a check is never sooner than the CPU it needs, whenever it starts
    os.nice(NICENESS)
    try:
        summary = asyncio.run(check_store(Path(argv[0])))
    except StoreError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    print(json.dumps({"streams": summary.streams, "broken": summary.broken, "damage": summary.damage}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
