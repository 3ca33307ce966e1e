"""How the dashboard opens the chat (suggested MainScreen binding: `d` "Demo chat / chat").

The chat runs on the dashboard's project; without one, or on the bundled sample (never written to),
on a new demo project in a temporary folder.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from textual.app import App

from zymi_tui.events.location import StoreLocation
from zymi_tui.project.locate import project_store
from zymi_tui.project.reader import is_project
from zymi_tui.tui.chat.launch import push_chat


def writable_project(project: Path | None) -> Path | None:
    """`project` if the chat may write to it: a project folder that is not inside the installed package."""
    if project is None or not is_project(project):
        return None
    package = Path(str(resources.files("zymi_tui"))).resolve()
    return None if project.resolve().is_relative_to(package) else project


async def open_chat(
    app: App[Any], project: Path | None, store: StoreLocation, stream: str = "term"
) -> tuple[str | None, str]:
    """Push the chat (F4 comes back) on the dashboard's project, writing into the dashboard's `store` (so its
    turns appear there); without a project it may write to, on a new demo project and its own store.
    Returns (an error line or None, the line saying where the chat writes, full path)."""
    from zymi_tui.engine.providers.demo_workspace import write_demo_project

    target = writable_project(project)
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="zymi-tui-demo-"))
        write_demo_project(target, "demo")
        where = f"chat on a new demo project in {target}: it writes to {project_store(target)} (not this store)"
        return await push_chat(app, target, stream), where
    return await push_chat(app, target, stream, store=store), f"chat on {target}: it writes to {store} (this store)"
