"""Runs as zymi's readers pair them, and each chat turn as a run of its own.

A zymi *run* is a stream holding a `PipelineRequested`: the first one gives pipeline, inputs
and start; the first `PipelineCompleted` of the same pipeline gives status and duration
(cli/runs_data.rs). A chat stream served by `zymi serve` therefore shows as one run; a *turn*
pairs each `PipelineRequested` with the `PipelineCompleted` of its correlation id instead.
Only the three bookkeeping kinds are read (through the kind index), never the whole store, and
of those the envelope's few fields a run shows (`row_envelope`), not whole events.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zymi_tui.events.kind_json import read_kind
from zymi_tui.events.kinds import PipelineCompleted, PipelineRequested, ResumeForked
from zymi_tui.events.row_envelope import LeanError, run_envelope
from zymi_tui.events.store import EventReader, RawRow
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.events.timestamps import format_timestamp, parse_timestamp_ns
from zymi_tui.events.writers import Writer, store_writers

RUN_TAGS = ["pipeline_requested", "pipeline_completed", "resume_forked"]
INTERRUPTED = "interrupted"
_RUN_TYPES = frozenset({"PipelineRequested", "PipelineCompleted", "ResumeForked"})
PAGE = 5000


@dataclass(frozen=True, slots=True)
class Fork:
    parent_stream_id: str
    fork_at_step: str


@dataclass(frozen=True, slots=True)
class RunSummary:
    stream_id: str
    pipeline: str
    correlation_id: str | None
    started_ns: int
    duration_ms: int | None
    status: str  # "running" | "ok" | "FAIL" (zymi's labels) | "interrupted" (running, and no writer alive)
    inputs: dict[str, str]
    error: str | None
    final_output: str | None
    fork: Fork | None
    request_global_id: int
    turn: int  # 1-based index of this request on its stream (always 1 for zymi's pairing)
    turns_on_stream: int
    # the row id of its request when that row cannot be read: pipeline (unless its completion names it),
    # inputs and start are then unknown; the start shown is that of the stream's next readable row
    unreadable_request: int | None = None

    @property
    def prompt(self) -> str:
        if self.unreadable_request is not None:
            return f"⚠ its request (row {self.unreadable_request}) is unreadable: inputs unknown"
        return render_inputs(self.inputs)

    @property
    def glyph(self) -> str:
        return {"running": "◷", "ok": "✓", INTERRUPTED: "↯"}.get(self.status, "✗")

    def zymi_raw(self) -> dict[str, object]:
        """The object `zymi runs --raw` prints (keys sorted, as serde_json's map does)."""
        fork = None
        if self.fork:
            fork = {"fork_at_step": self.fork.fork_at_step, "parent_stream_id": self.fork.parent_stream_id}
        raw: dict[str, object] = {
            "duration_ms": self.duration_ms,
            "error": self.error,
            "fork": fork,
            "pipeline": self.pipeline,
            "prompt": render_inputs(self.inputs),
            "started_at": format_timestamp(self.started_ns, zulu=False),
            "status": self.status,
            "stream_id": self.stream_id,
        }
        if self.unreadable_request is not None:  # not a field of zymi's (zymi stops at such a row)
            raw["unreadable_request_row"] = self.unreadable_request
        return raw


def render_inputs(inputs: dict[str, str]) -> str:
    """`k=v` pairs sorted; a value over 40 characters is cut to its first 40 UTF-8 *bytes* (floored
    to a character boundary) plus `…`, exactly as runs_data.rs `render_inputs` does."""
    parts = []
    for k, v in inputs.items():
        short = v.encode()[:40].decode(errors="ignore") + "…" if len(v) > 40 else v
        parts.append(f"{k}={short}")
    return " ".join(sorted(parts))


@dataclass(frozen=True, slots=True)
class _Mark:
    """One bookkeeping event: its global id, envelope and the payload fields a run needs."""

    global_id: int
    env: Any  # `lean.run_envelope`
    ns: int  # its timestamp
    fields: PipelineRequested | PipelineCompleted | ResumeForked


def _outcome(done: _Mark | None, started: int) -> tuple[str, int | None, str | None, str | None]:
    """Status, duration, error and final output of a run started at `started` and ended by `done`."""
    if done is None:
        return "running", None, None, None
    d = done.fields
    assert isinstance(d, PipelineCompleted)
    return "ok" if d.success else "FAIL", (done.ns - started) // 1_000_000, d.error, d.final_output


class _Shared:
    """One object for each distinct value of the fields runs repeat (a stream's id and pipeline on each of its
    turns, the inputs, output and error a chat's turns share): equal fields of the summaries are one object in
    memory, and once in a pickle (it writes an object it has already written as a reference: the dashboard's
    runs are read by a child process). A summary's inputs are read, never changed, so equal ones share a dict."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._inputs: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    def text(self, value: str) -> str:
        return self._texts.setdefault(value, value)

    def maybe(self, value: str | None) -> str | None:
        return None if value is None else self._texts.setdefault(value, value)

    def inputs(self, value: dict[str, str]) -> dict[str, str]:
        key = tuple(value.items())
        found = self._inputs.get(key)
        if found is None:
            found = self._inputs[key] = {self.text(k): self.text(v) for k, v in key}
        return found


def _summary(req: _Mark, done: _Mark | None, fork: Fork | None, turn: int, turns: int, shared: _Shared) -> RunSummary:
    r = req.fields
    assert isinstance(r, PipelineRequested)
    status, duration, error, final = _outcome(done, req.ns)
    return RunSummary(
        stream_id=shared.text(req.env.stream_id), pipeline=shared.text(r.pipeline),
        correlation_id=req.env.correlation_id, started_ns=req.ns, duration_ms=duration, status=status,
        inputs=shared.inputs(r.inputs), error=shared.maybe(error), final_output=shared.maybe(final), fork=fork,
        request_global_id=req.global_id, turn=turn, turns_on_stream=turns,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Unread:
    """A request row that cannot be read: its row id, stream (its column) and the time of the stream's
    next readable row (0 when none reads)."""

    global_id: int
    stream_id: str
    ns: int


def _unread_summary(
    req: _Unread, done: _Mark | None, fork: Fork | None, turn: int, turns: int, shared: _Shared
) -> RunSummary:
    """A run (or turn) whose request row cannot be read: listed all the same, marked as such."""
    pipeline = done.fields.pipeline if done is not None and isinstance(done.fields, PipelineCompleted) else "?"
    status, duration, error, final = _outcome(done, req.ns)
    return RunSummary(
        stream_id=shared.text(req.stream_id), pipeline=shared.text(pipeline), correlation_id=None,
        started_ns=req.ns, duration_ms=duration if req.ns else None, status=status, inputs=shared.inputs({}),
        error=shared.maybe(error), final_output=shared.maybe(final),
        fork=fork, request_global_id=req.global_id, turn=turn, turns_on_stream=turns,
        unreadable_request=req.global_id,
    )  # fmt: skip


Tagged = tuple[RawRow, str]  # a row and the kind tag it was read by


async def _bookkeeping(reader: EventReader, stream_id: str | None = None) -> list[Tagged]:
    """The rows of the three bookkeeping kinds, in global order, as stored: of the whole store, or of
    one run stream (and its step streams)."""
    rows: list[Tagged] = []
    for tag in RUN_TAGS:
        cursor = 0
        while True:
            page = await reader.read_rows(cursor, PAGE, tag=tag, stream_id=stream_id)
            rows += [(row, tag) for row in page.rows]
            cursor = page.last_global_id
            if page.rows_scanned < PAGE:
                break
    rows.sort()
    return rows


@dataclass
class _Marks:
    """Per stream, its bookkeeping events that read, and the request rows that did not."""

    read: dict[str, list[_Mark]]
    unread: dict[str, list[_Unread]]


async def _marks(reader: EventReader, rows: list[Tagged]) -> _Marks:
    """Per stream, its bookkeeping events; a row that cannot be read is reported and skipped, and a
    request row among them kept as unread (its run is listed all the same)."""
    marks = _Marks({}, {})
    for (gid, stream_id, seq, data), tag in rows:
        try:
            env = run_envelope(data)
            if env.kind.type not in _RUN_TYPES:
                continue  # the kind_tag column names a bookkeeping kind its JSON does not hold
            fields: Any = read_kind(env)
            mark = _Mark(gid, env, parse_timestamp_ns(env.timestamp), fields)
        except (LeanError, ValueError) as e:
            reader.problems.append(BadRow(gid, stream_id, seq, str(e)))
            if tag == RUN_TAGS[0]:
                unread = _Unread(gid, stream_id, await _next_time(reader, stream_id, gid))
                marks.unread.setdefault(stream_id, []).append(unread)
            continue
        marks.read.setdefault(env.stream_id, []).append(mark)
    return marks


async def _next_time(reader: EventReader, stream_id: str, after: int) -> int:
    """The timestamp of the first row of `stream_id` (or its steps) after row `after` that reads; 0 if none
    of the next page does."""
    page = await reader.read_rows(after, 64, stream_id=stream_id)
    for _, _, _, data in page.rows:
        try:
            return parse_timestamp_ns(run_envelope(data).timestamp)
        except (LeanError, ValueError):
            continue
    return 0


def with_liveness(runs: list[RunSummary], writers: list[Writer] | None) -> list[RunSummary]:
    """`runs` with each one that has no end row and no live process that may be writing it (`writers`,
    events/writers.py) marked interrupted; as they are when `writers` is None (not observable)."""
    if writers is None:
        return runs
    return [
        replace(r, status=INTERRUPTED)
        if r.status == "running" and not any(w.may_write(r.pipeline, r.started_ns) for w in writers)
        else r
        for r in runs
    ]


def _live(reader: EventReader, runs: list[RunSummary]) -> list[RunSummary]:
    """Liveness applied where it can be observed: a SQLite store (its file), with a run still open."""
    path = getattr(reader, "path", None)
    if not isinstance(path, Path) or not any(r.status == "running" for r in runs):
        return runs
    return with_liveness(runs, store_writers(path))


async def list_runs(reader: EventReader, *, turns: bool = False) -> list[RunSummary]:
    """Runs, newest first. `turns=False` pairs as zymi does; `turns=True` gives one entry per request."""
    return _live(reader, _summaries(await _marks(reader, await _bookkeeping(reader)), turns))


async def newest_runs(reader: EventReader, n: int, *, turns: bool = False) -> tuple[list[RunSummary], bool]:
    """The runs of the streams holding the newest `n` requests (by global id), as `list_runs` gives them,
    and whether that is every run of the store. Read from the end: the request rows of a growing tail of
    the store (kind index), then each of those streams' bookkeeping rows (stream index), so the cost
    follows `n`, not the store. Each stream's runs are exact; a stream whose requests are all older than
    those may still sort among them (a clock set back), which only the whole list shows."""
    top = await reader.max_global_id()
    window = max(n, 1) * 64
    while True:
        after = max(top - window, 0)
        requests: list[RawRow] = []
        cursor = after
        while True:
            page = await reader.read_rows(cursor, PAGE, tag=RUN_TAGS[0])
            requests += page.rows
            cursor = page.last_global_id
            if page.rows_scanned < PAGE:
                break
        if len(requests) >= n or after == 0:
            break
        window *= 4
    newest = requests[-n:] if n > 0 else []
    streams = dict.fromkeys(stream for _, stream, _, _ in reversed(newest))
    rows: list[Tagged] = []
    for stream in streams:
        rows += await _bookkeeping(reader, stream)
    rows = sorted(set(rows))  # a step stream's rows are read with its run's too
    whole = after == 0 and len(requests) <= n
    return _live(reader, _summaries(await _marks(reader, rows), turns)), whole


def _summaries(marks: _Marks, turns: bool) -> list[RunSummary]:
    out: list[RunSummary] = []
    shared = _Shared()
    for stream in dict.fromkeys([*marks.read, *marks.unread]):
        out += _stream_runs(marks.read.get(stream, []), marks.unread.get(stream, []), turns, shared)
    out.sort(key=lambda r: (r.started_ns, r.request_global_id), reverse=True)
    return out


def _stream_runs(marks: list[_Mark], unread: list[_Unread], turns: bool, shared: _Shared) -> list[RunSummary]:
    """The run of one stream (zymi's pairing), or its turns."""
    requests = [m for m in marks if isinstance(m.fields, PipelineRequested)]
    if not requests and not unread:
        return []
    fork = next(
        (Fork(k.parent_stream_id, k.fork_at_step) for m in marks if isinstance(k := m.fields, ResumeForked)),
        None,
    )
    completions = [m for m in marks if isinstance(m.fields, PipelineCompleted)]
    count = len(requests) + len(unread)
    if not turns:
        if unread and (not requests or unread[0].global_id < requests[0].global_id):
            return [_unread_summary(unread[0], next(iter(completions), None), fork, 1, count, shared)]
        first = requests[0]
        name = first.fields.pipeline  # type: ignore[union-attr]
        done = next((c for c in completions if c.fields.pipeline == name), None)  # type: ignore[union-attr]
        return [_summary(first, done, fork, 1, count, shared)]
    by_correlation: dict[str | None, _Mark] = {}
    for c in completions:
        by_correlation.setdefault(c.env.correlation_id, c)
    # an unread request's correlation id is unknown: it takes a completion no readable request claims
    claimed = {r.env.correlation_id for r in requests}
    unclaimed = [c for c in completions if c.env.correlation_id not in claimed]
    out: list[RunSummary] = []
    ordered: list[_Mark | _Unread] = sorted([*requests, *unread], key=lambda r: r.global_id)
    for i, req in enumerate(ordered, 1):
        first_fork = fork if i == 1 else None
        if isinstance(req, _Unread):
            out.append(_unread_summary(req, unclaimed.pop(0) if unclaimed else None, first_fork, i, count, shared))
        else:
            out.append(_summary(req, by_correlation.get(req.env.correlation_id), first_fork, i, count, shared))
    return out


def turn_ranges(run: Sequence[StoredEvent], turn_cids: Collection[str]) -> dict[str, range]:
    """Global-id ranges of the chat turns of one run stream (`run`: its events in global order).

    A turn holds the events from its `UserMessageReceived` up to the next turn's: it starts at the
    connector's message just before its first correlated event, whatever correlation id that message
    carries (a connector may give it none), else at its first event carrying its correlation id. It
    ends where the next turn starts, so uncorrelated events (shell sessions, a step stream's
    compaction) go to the turn they happened in.
    """
    starts: dict[str, int] = {}
    prev: StoredEvent | None = None
    for se in run:
        cid = se.event.correlation_id
        if cid is not None and cid in turn_cids and cid not in starts:
            opened_by_message = prev is not None and prev.event.tag == "user_message_received"
            starts[cid] = prev.global_id if opened_by_message and prev is not None else se.global_id
        prev = se
    ordered = sorted((g, c) for c, g in starts.items())
    return {c: range(g, ordered[i + 1][0] if i + 1 < len(ordered) else 1 << 62) for i, (g, c) in enumerate(ordered)}
