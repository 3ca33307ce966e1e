"""A replay's decoded events set down in a temporary file, to be replayed again without the store.

From the size at which `advise`'s pass one keeps no decoded events (memory stays flat), its pass two read
the store again and decoded every row a second time (JSON, checked strictly, on a reader's thread). Set down
here instead, each page of events is encoded with msgpack as pass one decodes them (~0.1 s of CPU per 100k
events) and written to an unnamed temporary file (no memory of the process's own: the page cache's; beside
the store where it can be: a temporary folder may be a `tmpfs`, memory), then read back a page at a time and
decoded with no checks to make (they were made). An event comes back equal to the one set down (`==`): its
envelope as plain values, its payload as its kind's struct, a message field (`MESSAGE_FIELDS`) as the tagged
value zymi writes (`dump_message`), decoded by the hook the store's rows are decoded with. An event that
cannot be encoded (an integer past 64 bits in a free-form field), or a page the file cannot take (its disk
full), leaves the file `broken` (and dropped): its reader reads the store again, as before.

Pages are read with `os.pread` (no shared file offset), so a process forked from the writer reads them too."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import msgspec
from msgspec.structs import replace

from zymi_tui.events import kinds as k
from zymi_tui.events.messages import decode_hook, dump_message
from zymi_tui.events.replay_view import ReplayEvent, ReplayKind
from zymi_tui.file_swap import write_all

PREFIX = "zymi-tui-replay-"  # (a name seen only where the system cannot make a file with none)
SPILL_PAGE = 256  # events encoded and written together
KINDS: tuple[type[Any], ...] = ReplayKind.__args__
KIND_INDEX = {cls: i for i, cls in enumerate(KINDS)}
MESSAGE_FIELDS: dict[type[Any], str] = {k.LlmCallCompleted: "response_message", k.UserMessageReceived: "content"}
_Row = tuple[int, str, int, str, str, str | None, int, msgspec.Raw]  # the last: the kind's payload (none: nil)


class SpilledEvents:
    """Events `add`ed in global order, read back as pages (`pages`); `close` drops the file."""

    def __init__(self, folder: Path | None = None) -> None:
        """In `folder` (a store's: on its disk, which holds the store) or, where none is given or no file can
        be made in it, in the temporary folder (OSError: not there either)."""
        self._file = _unnamed_file(folder)
        self._fd = self._file.fileno()
        self._encoder = msgspec.msgpack.Encoder()
        self._held: list[ReplayEvent] = []
        self._size = 0
        # per page written: where it starts in the file, its length, its last event's global id
        self._starts: list[int] = []
        self._lengths: list[int] = []
        self._last_ids: list[int] = []
        self.broken = False

    def add(self, se: ReplayEvent) -> None:
        held = self._held
        held.append(se)
        if len(held) >= SPILL_PAGE:
            self._write()

    def finish(self) -> None:
        """The events held written (once every event is added)."""
        if self._held:
            self._write()

    def _write(self) -> None:
        held, self._held = self._held, []
        if self.broken:
            return
        try:
            data = self._encoder.encode([_row(se) for se in held])
            write_all(self._fd, data)
        except (OverflowError, TypeError, ValueError, msgspec.EncodeError, OSError):
            self.broken = True
            self._file.close()  # (what it holds is of no use now)
            return
        self._starts.append(self._size)
        self._lengths.append(len(data))
        self._last_ids.append(held[-1].global_id)
        self._size += len(data)

    def pages(self, after: int = 0) -> Iterator[list[ReplayEvent]]:
        """The events after the global id `after`, a page at a time (the first page may hold earlier ones:
        its reader skips them, or stops at an id of its own)."""
        assert not self.broken and not self._held
        headers = msgspec.msgpack.Decoder(list[_Row])
        decoders = [msgspec.msgpack.Decoder(cls, dec_hook=decode_hook) for cls in KINDS]
        first = next((i for i, last in enumerate(self._last_ids) if last > after), len(self._last_ids))
        for start, length in zip(self._starts[first:], self._lengths[first:], strict=True):
            data = os.pread(self._fd, length, start)
            yield [
                ReplayEvent(gid, stream, seq, ts, source, corr, None if kind < 0 else decoders[kind].decode(raw))
                for gid, stream, seq, ts, source, corr, kind, raw in headers.decode(data)
                if gid > after
            ]

    def close(self) -> None:
        self._held = []
        self._file.close()


def _unnamed_file(folder: Path | None) -> IO[bytes]:
    import tempfile  # (here: `replay --json` loads no more than it needs; tempfile loads random)

    if folder is not None:
        try:
            return tempfile.TemporaryFile(prefix=PREFIX, dir=folder)
        except OSError:
            pass  # (a folder one may not write in, a read-only disk)
    return tempfile.TemporaryFile(prefix=PREFIX)


def _row(se: ReplayEvent) -> tuple[Any, ...]:
    kind = se.kind
    if kind is None:
        return (se.global_id, se.stream_id, se.sequence, se.timestamp, se.source, se.correlation_id, -1, None)
    cls = type(kind)
    field = MESSAGE_FIELDS.get(cls)
    if field is not None:
        message = getattr(kind, field)
        if message is not None:  # (as zymi writes it: the struct alone does not say which message it is)
            kind = replace(kind, **{field: dump_message(message)})
    return (se.global_id, se.stream_id, se.sequence, se.timestamp, se.source, se.correlation_id, KIND_INDEX[cls], kind)
