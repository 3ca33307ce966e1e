"""What the dashboard opens: a resolved store, the project folder that describes it, and a banner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zymi_tui.events.location import StoreLocation


@dataclass(frozen=True)
class Target:
    store: StoreLocation
    project: Path | None = None
    run: str | None = None
    banner: str | None = None
