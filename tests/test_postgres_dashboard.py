"""The dashboard on a Postgres store: opens, never shows the password, keeps following new events."""

from __future__ import annotations

import html
import re
import urllib.parse

from tests.waiting import pilot_until
from zymi_tui.events.factory import open_writer
from zymi_tui.events.kinds import Event, PipelineRequested
from zymi_tui.events.location import location_of
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.target import Target

from .test_postgres_helpers import pg_url

__all__ = ["pg_url"]


def screen_text(app: DashboardApp) -> str:
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def request(url: str, stream: str, task: str) -> None:
    writer = await open_writer(location_of(url))
    try:
        await writer.append(Event.new(stream, PipelineRequested(pipeline="main", inputs={"task": task}), "test"))
    finally:
        await writer.close()


async def test_dashboard_follows_a_postgres_store(pg_url: str) -> None:
    await request(pg_url, "run-one", "first task")
    password = urllib.parse.urlsplit(pg_url).password
    assert password
    app = DashboardApp(Target(location_of(pg_url), None, None))
    async with app.run_test(size=(160, 45)) as pilot:

        async def shown(what: str) -> str:
            await pilot_until(pilot, lambda: what in screen_text(app), f"{what!r} on the screen")
            return screen_text(app)

        text = await shown("first task")
        assert "first task" in text
        assert password not in text and "zymi:***@" in text
        await request(pg_url, "run-two", "second task")  # another process would do the same
        assert "second task" in await shown("second task")
