"""Where a store is: a typed location, decided once and passed down instead of a plain string.

`SqliteStore(path)` is a SQLite file (it may not exist yet, for a writer); `PostgresStore(url)` is a
`postgres://` / `postgresql://` URL. Which location a command line or a project names is decided
in `zymi_tui.project.locate`; the backend for a location is chosen in `zymi_tui.events.factory`.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

POSTGRES_SCHEMES = ("postgres://", "postgresql://")


def redact_url(url: str) -> str:
    """`postgres://user:secret@host/db?password=x` -> `postgres://user:***@host/db?password=***`."""
    url = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


class SqliteStore(msgspec.Struct, frozen=True):
    path: Path

    def __str__(self) -> str:
        return str(self.path)


class PostgresStore(msgspec.Struct, frozen=True):
    url: str

    def __str__(self) -> str:
        return redact_url(self.url)


StoreLocation = SqliteStore | PostgresStore


def same_store(a: StoreLocation, b: StoreLocation) -> bool:
    """Whether two locations name one store (a SQLite file by its resolved path, a URL as written)."""
    if isinstance(a, SqliteStore) and isinstance(b, SqliteStore):
        return a.path.resolve() == b.path.resolve()
    return a == b


def location_of(text: str | Path) -> StoreLocation:
    """A postgres URL as a PostgresStore, anything else as the SQLite file it names (not resolved further)."""
    if isinstance(text, str) and text.startswith(POSTGRES_SCHEMES):
        return PostgresStore(text)
    return SqliteStore(Path(text).expanduser())
