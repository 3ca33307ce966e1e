"""What a replay reads of an event: its envelope and the payload of the kinds the context depends on.

A replay reads about half the rows of a store: a row of a kind below is decoded with msgspec in one
typed pass (`kind_json`) straight into the kind's struct (`kinds.LlmCallCompleted`, ...), so the context
builder sees one type whichever way an event reached it.
Every check `envelope.decode_event` makes is made here (the envelope as `row_envelope` checks it, a payload's
fields by type, strictly); a row these checks refuse, or whose kind is not a replay kind, is decoded by
`decode_event` itself, so a replay accepts, refuses and words a row exactly as a whole-event reader does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import msgspec

from zymi_tui.events import kinds as k
from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.kind_json import decode_row, plain_row_decoder, row_decoder
from zymi_tui.events.plain_forms import plain_timestamps, plain_uuids
from zymi_tui.events.row_envelope import DECODE_ERRORS
from zymi_tui.events.store import KindRow
from zymi_tui.events.stored import StoredEvent

ReplayKind = (
    k.PipelineRequested | k.PipelineCompleted | k.MemoryWritten | k.MemoryDeleted | k.WorkflowNodeStarted
    | k.WorkflowNodeCompleted | k.LlmCallStarted | k.LlmCallFailed | k.ToolCallCompleted | k.ContextCompacted
    | k.LlmCallCompleted | k.UserMessageReceived
)  # fmt: skip
REPLAY_TYPES = frozenset(cls.__name__ for cls in ReplayKind.__args__)  # the kinds' type names
TYPE_BY_TAG = {k.snake_tag(cls.__name__): cls.__name__ for cls in ReplayKind.__args__}  # by `kind_tag`


class ReplayEvent(msgspec.Struct, frozen=True):
    """An event as a replay (and the context builder) reads it; `kind` is None for the other kinds."""

    global_id: int
    stream_id: str
    sequence: int
    timestamp: str
    source: str
    correlation_id: str | None
    kind: ReplayKind | None


def decode_replay_row(type_name: str, global_id: int, sequence: int, data: str) -> ReplayEvent:
    """A stored row of the kind `type_name` (its `kind_tag` column) as a replay reads it. A row these
    strict checks refuse (or of another kind) is decoded by `decode_event`, which raises
    `EventDecodeError` for a row a whole-event reader refuses."""
    env = decode_row(type_name, data) if type_name in REPLAY_TYPES else None
    if env is None:
        return replay_event(StoredEvent(global_id, decode_event(data, sequence), data))
    kind: Any = env.kind.data
    return ReplayEvent(global_id, env.stream_id, sequence, env.timestamp, env.source, env.correlation_id, kind)


def replay_event(stored: StoredEvent) -> ReplayEvent:
    """The replay's view of a decoded event."""
    ev = stored.event
    kind: Any = ev.kind if ev.kind.type_name in REPLAY_TYPES else None
    return ReplayEvent(stored.global_id, ev.stream_id, ev.sequence, ev.timestamp, ev.source, ev.correlation_id, kind)


CHUNK = 256  # rows decoded, then their ids and timestamps checked, together


def replay_rows(rows: Iterable[KindRow], bad: Callable[[int, str, int, str], None]) -> Iterator[ReplayEvent]:
    """Rows with their kind tag (`EventReader.read_kinds_rows`) decoded a chunk at a time, as asked for, each
    exactly as `decode_replay_row` decodes it (its tag's type, strictly; else `decode_event`); a row a
    whole-event reader refuses is handed to `bad` (global id, stream id, sequence, why) and skipped.
    The same as `decode_replay_row` row by row, without its calls per row (a replay decodes every other
    row of a store): a chunk is decoded with its ids and timestamps as plain text and those are checked
    together (`plain_forms`); when any is of another form, each row holding one is decoded again
    with the envelope's patterns. A timestamp's ranges are checked once for a run of rows in the same second."""
    plain: dict[str, msgspec.json.Decoder[Any] | None] = {}
    strict: dict[str, msgspec.json.Decoder[Any] | None] = {}
    checked = ""  # the last timestamp (to the second) whose ranges were checked
    listed = rows if isinstance(rows, list) else list(rows)
    for at in range(0, len(listed), CHUNK):
        part = listed[at : at + CHUNK]
        envs = _decoded(part, plain, plain_row_decoder)
        if not _plain_forms(envs):  # any doubt: the patterns decide for each row in doubt
            doubted = [i for i, env in enumerate(envs) if env is not None and not _plain_forms([env])]
            for i, env in zip(doubted, _decoded([part[i] for i in doubted], strict, row_decoder), strict=True):
                envs[i] = env
        for (gid, stream_id, seq, _, data), env in zip(part, envs, strict=True):
            if env is not None:
                second = env.timestamp[:19]
                if second != checked:
                    try:
                        datetime.fromisoformat(second)  # the form is checked; this checks the ranges
                        checked = second
                    except ValueError:
                        env = None
            if env is not None:
                kind: Any = env.kind.data
                yield ReplayEvent(gid, env.stream_id, seq, env.timestamp, env.source, env.correlation_id, kind)
                continue
            try:
                se = replay_event(StoredEvent(gid, decode_event(data, seq), data))
            except EventDecodeError as e:
                bad(gid, stream_id, seq, str(e))
                continue
            yield se


def _decoded(
    part: list[KindRow],
    decoders: dict[str, msgspec.json.Decoder[Any] | None],
    make: Callable[[str], msgspec.json.Decoder[Any]],
) -> list[Any]:
    """Each row's envelope decoded by its tag's decoder (`make` of its type, made once): None for a row
    of another kind or one the decoder refuses."""
    envs: list[Any] = []
    for _, _, _, tag, data in part:
        try:
            decoder = decoders[tag]
        except KeyError:
            type_name = TYPE_BY_TAG.get(tag)
            decoder = decoders[tag] = None if type_name is None else make(type_name)
        env: Any = None
        if decoder is not None:
            try:
                env = decoder.decode(data)
            except DECODE_ERRORS:
                env = None
        envs.append(env)
    return envs


def _plain_forms(envs: list[Any]) -> bool:
    """Whether every id and timestamp of the decoded envelopes is of the form zymi writes."""
    read = [e for e in envs if e is not None]
    ids = [e.id for e in read]
    ids += [c for e in read if (c := e.correlation_id) is not None]
    ids += [c for e in read if (c := e.causation_id) is not None]
    return plain_uuids(ids) and plain_timestamps([e.timestamp for e in read])
