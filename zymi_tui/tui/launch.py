"""Where the dashboard opens: a STORE or -d DIR, the current folder, or the sample store we ship."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from zymi_tui.events.store import StoreError, resolve_store
from zymi_tui.tui.app import Target
from zymi_tui.tui.source import infer_project

OPEN_YOUR_OWN = "open your own with `zymi-tui observe PATH` (a .db file or a zymi project folder)"


def sample_store() -> tuple[Path, Path | None] | None:
    """The sample store shipped in zymi_tui/data/sample/ (its events.db and project folder), if present."""
    root = Path(str(resources.files("zymi_tui"))) / "data" / "sample"
    if not root.is_dir():
        return None
    for db in sorted(root.rglob("events.db")):
        project = infer_project(None, str(db))
        return db, project
    return None


def choose_target(store: str | None, run: str | None, *, cwd: Path | None = None, bare: bool = False) -> Target:
    """Resolve what to open; raises StoreError (one line) when nothing can be opened."""
    here = cwd or Path.cwd()
    if store is None and bare:
        try:
            resolved = resolve_store(None, cwd=here)
        except StoreError:
            sample = sample_store()
            if sample is None:
                raise StoreError(
                    f"no event store in {here} (expected .zymi/events.db) and the sample store is not "
                    f"installed: {OPEN_YOUR_OWN}"
                ) from None
            db, project = sample
            banner = f"SAMPLE store (no store in {here}): {OPEN_YOUR_OWN}; press d for the demo chat"
            return Target(str(db), project, run, banner)
        return Target(resolved, infer_project(str(here), resolved), run)
    resolved = resolve_store(store, cwd=here)
    return Target(resolved, infer_project(store, resolved), run)
