"""The store interface every backend implements, and where a STORE argument points.

A STORE is a `.db` file, a project folder (`<dir>/.zymi/events.db`, or what its `project.yml`
`store:` names), or a `postgres://` URL. Readers never write; writers write exactly as zymi.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from zymi_tui.events.envelope import BadRow, Event, StoredEvent
from zymi_tui.events.hashchain import ChainRow


class StoreError(Exception):
    """A store cannot be opened or read. The message is one line meant for a person."""


class StoreLocked(StoreError):
    """Another process held the store locked for longer than a reader waits (the tail retries)."""


@dataclass(frozen=True, slots=True)
class StreamInfo:
    stream_id: str
    count: int
    first_global_id: int
    last_global_id: int


@dataclass(frozen=True, slots=True)
class Page:
    """Events read in global order; `last_global_id` is the highest row id scanned (bad rows included)."""

    events: list[StoredEvent]
    last_global_id: int
    rows_scanned: int


RawRow = tuple[int, str, int, str]  # (global id, stream id, sequence, the stored `data` text)


@dataclass(frozen=True, slots=True)
class RowPage:
    """Rows as stored, not decoded; `last_global_id` and `rows_scanned` as in `Page`."""

    rows: list[RawRow]
    last_global_id: int
    rows_scanned: int


class EventReader(Protocol):
    """Read-only access to an event store. Pages by global id; never loads a whole store."""

    label: str
    problems: list[BadRow]

    async def close(self) -> None: ...
    async def count(self) -> int: ...
    async def max_global_id(self) -> int: ...
    async def streams(self) -> list[StreamInfo]: ...
    async def read_after(self, after_global_id: int, limit: int) -> Page: ...
    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]: ...
    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]: ...
    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]: ...
    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage: ...
    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]: ...
    async def chain_rows(self, stream_id: str) -> list[ChainRow]: ...
    def chain_scan(self) -> AsyncIterator[list[tuple[str, ChainRow]]]:
        """Every stream's chain rows, in batches; each stream's rows in ascending global id (how a
        backend orders streams among themselves is its own: one pass over the table, or by stream)."""
        ...

    async def stream_heads(self) -> dict[str, tuple[int, str]]: ...


class EventWriter(Protocol):
    """Appends events exactly as zymi does: per-stream sequence, v2 hash chain, stream head."""

    label: str

    async def close(self) -> None: ...
    async def append(self, event: Event) -> StoredEvent: ...
    async def checkpoint(self) -> None: ...


async def rows_from_events(
    reader: EventReader, after_global_id: int, limit: int, *, stream_id: str | None, tag: str | None
) -> RowPage:
    """`read_rows` for a reader that only reads decoded events: the same rows, through its decoder."""
    if tag is not None or stream_id is not None:
        if tag is not None:
            found = await reader.read_kind_page(tag, stream_id=stream_id, after_global_id=after_global_id, limit=limit)
        else:
            assert stream_id is not None
            found = await reader.read_stream(
                stream_id, include_steps=True, after_global_id=after_global_id, limit=limit
            )
        last, scanned = (found[-1].global_id if found else after_global_id), len(found)
    else:
        page = await reader.read_after(after_global_id, limit)
        found, last, scanned = page.events, page.last_global_id, page.rows_scanned
    return RowPage([(se.global_id, se.event.stream_id, se.event.sequence, se.data) for se in found], last, scanned)


async def chain_by_stream(reader: EventReader) -> AsyncIterator[list[tuple[str, ChainRow]]]:
    """`chain_scan` as one `chain_rows` read per stream."""
    for info in await reader.streams():
        yield [(info.stream_id, row) for row in await reader.chain_rows(info.stream_id)]


STEP_MARK = ":step:"


def step_prefix(run_stream: str) -> str:
    return run_stream + STEP_MARK


def run_of(stream_id: str) -> str:
    """The run stream a step sub-stream belongs to (`<run>:step:<id>` -> `<run>`)."""
    return stream_id.split(STEP_MARK, 1)[0]


def step_of(stream_id: str) -> str | None:
    return stream_id.split(STEP_MARK, 1)[1] if STEP_MARK in stream_id else None


def is_postgres_url(store: str) -> bool:
    return store.startswith(("postgres://", "postgresql://"))


def redact_url(url: str) -> str:
    """`postgres://user:secret@host/db?password=x` -> `postgres://user:***@host/db?password=***`."""
    url = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


_ENV = re.compile(r"\$\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}")


def _project_store_setting(root: Path) -> str | None:
    """`store:` from `<root>/project.yml`, with `${env.VAR}` resolved (docs/engine.md#project-file)."""
    project = root / "project.yml"
    if not project.is_file():
        return None
    import yaml

    try:
        doc = yaml.safe_load(project.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None  # a broken project.yml does not stop us from opening the default store
    value = doc.get("store") if isinstance(doc, dict) else None
    if not isinstance(value, str) or value.strip() in ("", "sqlite"):
        return None

    def env(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise StoreError(f"project.yml store: `${{env.{m.group(1)}}}` is not set in the environment")
        return os.environ[m.group(1)]

    return _ENV.sub(env, value.strip())


def project_postgres_url(root: Path) -> str | None:
    """The postgres:// URL `<root>/project.yml` names as its `store:` (`${env.VAR}` resolved), else None."""
    setting = _project_store_setting(root)
    return setting if setting and is_postgres_url(setting) else None


_NOT_FILES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))  # fmt: skip


def stat_store_path(path: Path) -> os.stat_result | None:
    """`os.stat` of a STORE path (None when nothing is there), with each reason it cannot be one
    as a StoreError: a symlink loop, a folder we may not enter, a FIFO or a device (never opened:
    opening a FIFO blocks until a writer comes)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StoreError(f"symlink loop at {path}: its links point at each other, not at a store") from None
        if e.errno == errno.EACCES:
            raise StoreError(
                f"cannot open {path}: permission denied (a folder on the way cannot be entered by this user)"
            ) from None
        raise StoreError(f"cannot open {path}: {e.strerror}") from None
    for test, what in _NOT_FILES:
        if test(st.st_mode):
            raise StoreError(f"{path} is {what}, not an SQLite store: pass a .db file or a project folder")
    return st


def resolve_store(store: str | None, *, cwd: Path | None = None) -> str:
    """Turn a STORE argument into a `.db` path or a postgres URL, with a clear error if none."""
    here = cwd or Path.cwd()
    if store and is_postgres_url(store):
        return store
    target = Path(store).expanduser() if store else here
    if stat_store_path(target) is None:
        raise StoreError(
            f"no event store at {target}: no such file or folder. "
            "Pass a .db file, a project folder, or a postgres:// URL"
        )
    if target.is_file():
        return str(target)
    setting = _project_store_setting(target)
    if setting:
        if is_postgres_url(setting):
            return setting
        if setting.startswith("sqlite:"):
            return str(target / setting[len("sqlite:") :])
        raise StoreError(f"unsupported store URL `{redact_url(setting)}` in {target / 'project.yml'}")
    db = target / ".zymi" / "events.db"
    if stat_store_path(db) is None or not db.is_file():
        raise StoreError(
            f"no event store in {target}: expected {db}. "
            "Run a pipeline there first, or pass the .db file / project folder to open"
        )
    return str(db)


async def open_reader(store: str | None, *, cwd: Path | None = None) -> EventReader:
    """Open a store for reading; raises StoreError with a one-line reason."""
    location = resolve_store(store, cwd=cwd)
    if is_postgres_url(location):
        from zymi_tui.events.postgres import PostgresReader

        return await PostgresReader.open(location)
    from zymi_tui.events.sqlite import SqliteReader

    return await SqliteReader.open(location)


async def open_writer(store: str, *, cwd: Path | None = None) -> EventWriter:
    """Open (creating if needed) a store for appending, exactly as zymi writes."""
    if is_postgres_url(store):
        from zymi_tui.events.postgres import PostgresWriter

        return await PostgresWriter.open(store)
    from zymi_tui.events.sqlite import SqliteWriter

    return await SqliteWriter.open(store)
