"""Where the dashboard opens: a STORE or -d DIR, the current folder, or the sample store we ship."""

from __future__ import annotations

from pathlib import Path

from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import StoreError
from zymi_tui.project.locate import Located, find_project, locate
from zymi_tui.tui.target import Target

OPEN_YOUR_OWN = "open your own with `zymi-tui observe PATH` (a .db file or a zymi project folder)"


def sample_store() -> Located | None:
    """The sample store shipped in zymi_tui/data/sample/ (its events.db and project folder), if present."""
    from importlib import resources  # only for bare `zymi-tui` without a store (~1 ms of every observe's start)

    root = Path(str(resources.files("zymi_tui"))) / "data" / "sample"
    if not root.is_dir():
        return None
    for db in sorted(root.rglob("events.db")):
        store = SqliteStore(db)
        return Located(store, find_project(store))
    return None


def choose_target(
    store: str | None, run: str | None, *, project: str | None = None, cwd: Path | None = None, bare: bool = False
) -> Target:
    """Resolve what to open; raises StoreError / ProjectError (one line) when nothing can be opened."""
    here = cwd or Path.cwd()
    if store is None and bare:
        try:
            found = locate(None, project=project, cwd=here)
        except StoreError:
            sample = sample_store()
            if sample is None:
                raise StoreError(
                    f"no event store in {here} (expected .zymi/events.db or events.db) and the sample store is not "
                    f"installed: {OPEN_YOUR_OWN}"
                ) from None
            banner = f"SAMPLE store (no store in {here}): open yours with `zymi-tui observe PATH`; d: the demo chat."
            return Target(sample.store, sample.project, run, banner)
        return Target(found.store, found.project, run)
    found = locate(store, project=project, cwd=here)
    return Target(found.store, found.project, run)
