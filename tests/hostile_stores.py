"""Hostile event stores for the TUI tests: the oracle's compaction run rewritten with content a person
really has (markup-like text, terminal escapes, RTL and emoji, NUL, a 5 MB tool result), plus unknown
kinds, a broken chain, an empty store and a store with only a chat stream.

Each store is written by our SQLite writer (valid hash chains, except the broken one on purpose),
with the oracle scenario's project folder beside it when it has one.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from tests.conftest import ORACLE
from zymi_tui.events.kinds import ContextCompacted, Event, UnknownKind, parse_kind
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.stored import StoredEvent

MARKUP = " [/x] [bold]b[/bold] [[a]] [link=https://example.com]l[/link] [compacted history] [[script:m5]] сообщение"
ESCAPES = " \x1b[2J\x1b[H\x1b[41;97mRED\x1b[0m \x1b]0;pwned\x07 \x9b31m \x1b[?1049l"
UNICODE = " مرحبا \u202eevil\u202c 👨\u200d👩\u200d👧 🇫🇷 e\u0301\u0301 漢字 \u200f"
NUL = " a\x00b\x00"
BIG = 5 * 1024 * 1024

# payload keys whose value must stay as recorded (ids and names that other events or the project refer to)
KEEP = {"call_id", "tool_call_id", "id", "role", "pipeline", "node_id", "step_id", "agent", "model", "provider",
        "type", "type_name", "decided_by", "stream_id", "parent_stream_id", "fork_at_step"}  # fmt: skip

HOSTILE = ["markup", "escapes", "unicode", "nul", "huge_result", "unknown_kinds", "broken_chain", "empty",
           "chat_only"]  # fmt: skip
LONG_ID = "-مرحبا-漢字-\u202eevil\u202c-\x1b[2J-" + "0123456789" * 8  # put after every run id by "long_ids"
# also made by make_store (not in HOSTILE: every row of those reads): the run's first row (its
# PipelineRequested) and its first ToolCallCompleted cut short
UNREADABLE = "unreadable_rows"
UNREADABLE_KINDS = ("pipeline_requested", "tool_call_completed")
SOURCE = "coding_compaction"  # compactions, masking, a project folder


def _walk(value: Any, f: Callable[[str], str], key: str = "") -> Any:
    if isinstance(value, str):
        return value if key in KEEP else f(value)
    if isinstance(value, list):
        return [_walk(v, f, key) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, f, k) for k, v in value.items()}
    return value


def rewrite(ev: Event, f: Callable[[str], str]) -> Event:
    """The event with `f` applied to every text of its payload (ids and names kept)."""
    data = _walk(ev.kind.to_data(), f)
    try:
        kind = parse_kind(ev.kind.type_name, data)
    except ValueError:  # a field that must parse (a number as text, an enum): keep the event as it was
        return ev
    return msgspec.structs.replace(ev, kind=kind)


async def _read(db: Path) -> list[StoredEvent]:
    reader = await SqliteReader.open(db)
    try:
        events: list[StoredEvent] = []
        after = 0
        while True:
            page = await reader.read_after(after, 5000)
            events += page.events
            if page.rows_scanned == 0:
                return events
            after = page.last_global_id
    finally:
        await reader.close()


async def _write(db: Path, events: list[Event]) -> None:
    writer = await SqliteWriter.open(db)
    try:
        for ev in events:
            await writer.append(ev)
    finally:
        await writer.close()


def _huge(events: list[Event]) -> list[Event]:
    out, done = [], False
    for ev in events:
        if not done and ev.kind.type_name == "ToolCallCompleted":
            ev, done = rewrite(ev, lambda s: s + ("x" * 99 + "\n") * (BIG // 100)), True
        out.append(ev)
    return out


def _unknown(events: list[Event]) -> list[Event]:
    out = []
    for i, ev in enumerate(events):
        out.append(ev)
        if i % 10 == 3:
            kind = UnknownKind(type_name="FutureThingHappened", data={"note": "[/x] from the future", "n": i})
            out.append(Event.new(ev.stream_id, kind, "future", ev.correlation_id, timestamp_ns=ev.timestamp_ns))
    return out


async def make_store(name: str, root: Path, source: str = SOURCE) -> tuple[Path, Path | None]:
    """Write hostile store `name` (from oracle scenario `source`) under `root`; returns (events.db, project)."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "events.db"
    project: Path | None = root / "project"
    shutil.copytree(ORACLE / source / "project", root / "project")
    events = [se.event for se in await _read(ORACLE / source / "events.db")]
    text = {"markup": MARKUP, "escapes": ESCAPES, "unicode": UNICODE, "nul": NUL}
    if name in text:
        suffix = text[name]
        runs = {ev.stream_id.split(":")[0] for ev in events}
        renamed = {s: s.replace("pipeline-main-", f"pipeline-main{suffix.strip()[:12]}-") for s in runs}

        def rename(stream: str) -> str:
            run, _, rest = stream.partition(":")
            return renamed[run] + (":" + rest if rest else "")

        events = [msgspec.structs.replace(rewrite(ev, lambda s, x=suffix: s + x), stream_id=rename(ev.stream_id))
                  for ev in events]  # fmt: skip
    elif name == "long_ids":  # every run's id 100+ cells long, with RTL, wide and control characters

        def longer(stream: str) -> str:
            run, sep, rest = stream.partition(":")
            return run + LONG_ID + sep + rest

        events = [msgspec.structs.replace(ev, stream_id=longer(ev.stream_id)) for ev in events]
    elif name == "huge_result":
        events = _huge(events)
    elif name == "unknown_kinds":
        events = _unknown(events)
    elif name in ("broken_chain", UNREADABLE):
        pass
    elif name == "grew":  # one compaction whose summary came back larger than what it replaced
        seen = 0
        for i, ev in enumerate(events):
            if isinstance(ev.kind, ContextCompacted):
                seen += 1
                if seen == 3:
                    events[i] = msgspec.structs.replace(ev, kind=msgspec.structs.replace(ev.kind, bytes_saved=-1204))
    elif name == "empty":
        events = []
        project = None
        shutil.rmtree(root / "project")
    elif name == "chat_only":
        chat = [se.event for se in await _read(ORACLE / "chat_profile" / "events.db")]
        events = [ev for ev in chat if ":step:" not in ev.stream_id]
        shutil.rmtree(root / "project")
        project = None
    else:
        raise ValueError(name)
    await _write(db, events)
    if name == "broken_chain":
        with contextlib.closing(sqlite3.connect(db)) as c, c:  # tamper with one row: its hash no longer matches
            c.execute("UPDATE events SET data = replace(data, 'read_file', 'rm_rf_all') WHERE id = "
                      "(SELECT MIN(id) FROM events WHERE data LIKE '%read_file%')")  # fmt: skip
    if name == UNREADABLE:
        with contextlib.closing(sqlite3.connect(db)) as c, c:  # their JSON cut short: no reader can decode them
            for tag in UNREADABLE_KINDS:
                c.execute("UPDATE events SET data = substr(data, 1, 40) WHERE id = "
                          "(SELECT MIN(id) FROM events WHERE kind_tag = ?)", (tag,))  # fmt: skip
    return db, project


def unreadable_row_ids(db: Path) -> list[int]:
    """The ids of the rows UNREADABLE cut short (the first of each of UNREADABLE_KINDS)."""
    with contextlib.closing(sqlite3.connect(db)) as c:
        return [c.execute("SELECT MIN(id) FROM events WHERE kind_tag = ?", (t,)).fetchone()[0]
                for t in UNREADABLE_KINDS]  # fmt: skip


def make_store_sync(name: str, root: Path) -> tuple[Path, Path | None]:
    return asyncio.run(make_store(name, root))
