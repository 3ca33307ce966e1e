"""`events --all --raw` of a large SQLite store on two cores: pages by id range, the even ones made by the
caller, the odd ones by a process of its own (`python -m zymi_tui.events.raw_pair`), written in turn.

Both processes read and check their pages (`raw_lines.page_lines`) at once; each writes its page to the same
stdout when its turn comes, so no page crosses a pipe and each process holds one page at most. The turn is a
byte: the caller sends one on the partner's stdin after writing a page (and flushing it); the partner then
writes its page and answers on a pipe of its own: `w` written, `d` declined (the caller writes that page the
row-at-a-time way, whose checks report bad rows), `p` stdout closed (`| head`). The partner runs in a session
of its own (Ctrl-C reaches the caller, which ends it) and ends at once when its stdin closes (the caller
ended, however it ended), so it is never left behind.

Rows appended after the pages' end (`upto`, read first) are left to the caller's own listing.

    python -m zymi_tui.events.raw_pair URI UPTO PAGE ANSWER_FD   # odd pages of ids (0, UPTO], PAGE ids each
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from collections.abc import Awaitable, Callable

from zymi_tui.cores import usable_cores
from zymi_tui.events.raw_lines import page_lines

PAIR_IDS = 50_000  # a table whose ids reach this is listed by two processes (below, a process costs more)
_RANGE = "SELECT id, stream_id, sequence, CAST(data AS BLOB) FROM events WHERE id > ? AND id <= ? ORDER BY id"
_BUSY_MS = 200
WRITTEN, DECLINED, CLOSED = b"w", b"d", b"p"


def pair_ids() -> int:
    """PAIR_IDS, or ZYMI_TUI_RAW_PAIR_IDS (the tests lower it to pair a small store)."""
    return int(os.environ.get("ZYMI_TUI_RAW_PAIR_IDS", PAIR_IDS))


def paired(upto: int) -> bool:
    """Whether a listing of ids up to `upto` is made by two processes: a large table, two cores, and a stdout
    that is a file descriptor (not a terminal, where lines are escaped one by one)."""
    if upto < max(pair_ids(), 2) or usable_cores() < 2:
        return False
    try:
        return not os.isatty(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout in memory (tests), or closed
        return False


def open_pages(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
    return conn


def range_lines(conn: sqlite3.Connection, after: int, upto: int) -> bytes | None:
    """The `--raw` lines of the ids in (after, upto], or None when the page is left to the row-at-a-time way
    (`page_lines` declines it, or SQLite could not read it as text: the caller's reader explains)."""
    try:
        rows = conn.execute(_RANGE, (after, upto)).fetchall()
    except sqlite3.Error:
        return None
    return page_lines(rows)


def _write(made: bytes) -> None:
    sys.stdout.flush()  # lines written as text before (a declined page) go first
    out = sys.stdout.buffer
    out.write(made)
    out.flush()


class PartnerEnded(Exception):
    """The partner process ended before its page was written (killed, or failed): the output is cut short."""


class PairedPages:
    """The caller's side: `run` writes every page of ids (0, upto] in order."""

    def __init__(self, uri: str, upto: int, page: int) -> None:
        self.upto, self.page = upto, page
        import subprocess  # here: the partner process, which imports this module, starts none

        answer_r, answer_w = os.pipe()
        self.answers = os.fdopen(answer_r, "rb", buffering=0)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, uri, str(upto), str(page), str(answer_w)],
                stdin=subprocess.PIPE,
                pass_fds=(answer_w,),
                start_new_session=True,  # Ctrl-C is the caller's to handle: it ends this process
            )
        except BaseException:
            self.answers.close()
            raise
        finally:
            os.close(answer_w)
        try:
            self.conn = open_pages(uri)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            self.answers.close()
            raise

    async def run(self, slow: Callable[[int, int], Awaitable[None]], at: Callable[[int], None]) -> None:
        """Write each page: ours made here, the partner's by it in its turn; `slow(after, upto)` writes a page
        either declined, `at(id)` follows the progress."""
        pages = -(-self.upto // self.page)
        for k in range(0, pages, 2):
            lo, hi = k * self.page, min((k + 1) * self.page, self.upto)
            made = range_lines(self.conn, lo, hi)  # made while the partner writes page k - 1
            if k > 0:
                await self._partners_turn(k - 1, slow, at)
            if made is None:
                await slow(lo, hi)
            else:
                _write(made)
            at(hi)
            if k + 1 < pages:
                self._pass_turn()
        if pages % 2 == 0 and pages > 0:
            await self._partners_turn(pages - 1, slow, at)

    def _pass_turn(self) -> None:
        sys.stdout.flush()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"t")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it ended: its answer says how
            pass

    async def _partners_turn(
        self, k: int, slow: Callable[[int, int], Awaitable[None]], at: Callable[[int], None]
    ) -> None:
        answer = self.answers.read(1)
        lo, hi = k * self.page, min((k + 1) * self.page, self.upto)
        if answer == CLOSED:
            raise BrokenPipeError(32, "Broken pipe")
        if answer == DECLINED:
            await slow(lo, hi)
        elif answer != WRITTEN:
            status = self.proc.wait()
            raise PartnerEnded(f"the process writing every other page ended with status {status}")
        at(hi)

    def close(self) -> None:
        """End the partner (at once if it is still running) and release the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        self.answers.close()
        self.conn.close()


def main(argv: list[str]) -> int:
    """The partner: the odd pages, each written when the caller passes the turn."""
    uri, upto, page, answer_fd = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    answers = os.fdopen(answer_fd, "wb", buffering=0)
    conn = open_pages(uri)
    turns = sys.stdin.buffer
    for k in range(1, -(-upto // page), 2):
        made = range_lines(conn, k * page, min((k + 1) * page, upto))
        if not turns.read(1):  # the caller ended
            return 0
        try:
            if made is not None:
                _write(made)
            answers.write(DECLINED if made is None else WRITTEN)
        except BrokenPipeError:
            with contextlib.suppress(BrokenPipeError):  # the caller ended too
                answers.write(CLOSED)
            os._exit(0)  # stdout cannot be flushed at exit: nothing more is said
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
