"""Where the store is and which project describes it, decided once per process.

The store, from a STORE argument or `-d DIR` (default: the current folder):
  - a `postgres://` / `postgresql://` URL;
  - a file: that SQLite file;
  - a folder whose `project.yml` names a `store:` (`sqlite:<path>` from the folder, or a URL);
  - a folder holding `.zymi/events.db` (zymi's own layout), else one holding `events.db`.

The project (the folder holding `project.yml`), first match wins:
  1. `--project DIR` (it must hold a project.yml);
  2. the folder the STORE argument named, when it holds a project.yml;
  3. for a SQLite store `<root>/.zymi/events.db`: `<root>`;
  4. the folder holding the `.db` file, when it holds a project.yml;
  5. a `project/` folder beside the `.db` file (the layout of recorded examples).
Nothing found: no project; commands then say what they inferred, or refuse with --strict.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from zymi_tui.events.location import POSTGRES_SCHEMES, PostgresStore, SqliteStore, StoreLocation, redact_url
from zymi_tui.events.store import StoreError, stat_store_path
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.reader import PROJECT_FILE, is_project, read_project_doc, store_setting

DEFAULT_DB = Path(".zymi") / "events.db"


class Located(NamedTuple):
    """A resolved store and the project folder that describes it (None: no project found)."""

    store: StoreLocation
    project: Path | None


def project_store(root: Path) -> StoreLocation:
    """Where the project at `root` records its runs: its `store:` setting, else `<root>/.zymi/events.db`.

    A project.yml that cannot be read names no store (the default one is used)."""
    try:
        doc = read_project_doc(root)
    except ProjectError:
        doc = {}
    setting = store_setting(doc, root / PROJECT_FILE)
    if setting is None:
        return SqliteStore(root / DEFAULT_DB)
    if setting.startswith(POSTGRES_SCHEMES):
        return PostgresStore(setting)
    if setting.startswith("sqlite:"):
        return SqliteStore(root / setting[len("sqlite:") :])
    raise ProjectError(f"unsupported store URL `{redact_url(setting)}` in {root / PROJECT_FILE}")


def locate_store(store: str | None, *, cwd: Path | None = None) -> StoreLocation:
    """A STORE argument (or the current folder) as a store to read; StoreError (one line) when there is none."""
    if store and store.startswith(POSTGRES_SCHEMES):
        return PostgresStore(store)
    target = Path(store).expanduser() if store else (cwd or Path.cwd())
    if stat_store_path(target) is None:
        raise StoreError(
            f"no event store at {target}: no such file or folder. "
            "Pass a .db file, a project folder, or a postgres:// URL"
        )
    if target.is_file():
        return SqliteStore(target)
    if is_project(target):
        found = project_store(target)
        if isinstance(found, PostgresStore) or found.path != target / DEFAULT_DB or found.path.is_file():
            return found
    for db in (target / DEFAULT_DB, target / "events.db"):
        if stat_store_path(db) is not None and db.is_file():
            return SqliteStore(db)
    raise StoreError(
        f"no event store in {target}: expected {target / DEFAULT_DB} or {target / 'events.db'}. "
        "Run a pipeline there first, or pass the .db file / project folder to open"
    )


def find_project(store: StoreLocation, *, named: str | None = None, explicit: str | Path | None = None) -> Path | None:
    """The project folder describing `store` (rules in the module docstring); `named` is the STORE argument."""
    if explicit is not None:
        folder = Path(explicit).expanduser()
        if not is_project(folder):
            raise ProjectError(f"--project {explicit}: no project.yml in that folder; accepted: a zymi project folder")
        return folder
    if named and not named.startswith(POSTGRES_SCHEMES) and Path(named).is_dir() and is_project(Path(named)):
        return Path(named)
    if not isinstance(store, SqliteStore):
        return None
    folder = store.path.parent
    for candidate in (folder.parent if folder.name == ".zymi" else None, folder, folder / "project"):
        if candidate is not None and is_project(candidate):
            return candidate
    return None


def locate(store: str | None, *, project: str | Path | None = None, cwd: Path | None = None) -> Located:
    """The store a command reads and the project that describes it, from its STORE / -d / --project."""
    here = cwd or Path.cwd()
    location = locate_store(store, cwd=here)
    return Located(location, find_project(location, named=store or str(here), explicit=project))
