"""The dashboard's search box: it filters the runs list or the events list; a long run's events are searched
by a worker a page at a time."""

from __future__ import annotations

import time

from textual import on, work
from textual.widgets import Input
from textual.worker import get_current_worker

from zymi_tui.events.store import EventReader
from zymi_tui.tui.dashboard.filters import DashboardFilters
from zymi_tui.tui.dashboard.loaders import index_pages
from zymi_tui.tui.footers import OnceFooter
from zymi_tui.tui.messages import SearchHits
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.state.run_index import RunIndex
from zymi_tui.tui.widgets import EventsList, RunsList

SEARCH_SHOWN_S = 0.5  # a long run's search shows the hits found so far at most this often


class DashboardSearch(DashboardFilters):
    """The search of the focused list."""

    async def search_box(self) -> Input:
        """The search box, mounted (above the footer) the first time it is asked for: hidden until then, it is not
        made, styled and laid out before the first frame."""
        found = self.query("#search")
        if found:
            return found.only_one(Input)
        box = Input(placeholder="search (Enter to apply, Esc to clear)", id="search", disabled=True)
        await self.mount(box, before=self.query_one(OnceFooter))
        return box

    async def action_search(self) -> None:
        box = await self.search_box()
        self.searching = "runs" if isinstance(self.focused, RunsList) else "events"
        box.placeholder = f"search {self.searching} (Enter to apply, Esc to clear)"
        box.value = self.runs.search if self.searching == "runs" else self.events.search
        box.display = True
        box.disabled = False
        box.focus()

    @on(Input.Submitted, "#search")
    def search_submitted(self, msg: Input.Submitted) -> None:
        self.apply_search(msg.value)
        msg.input.display = False
        msg.input.disabled = True
        self.query_one(RunsList if self.searching == "runs" else EventsList).focus()

    def apply_search(self, text: str) -> None:
        if self.searching == "runs":
            self.runs.search = text
            self._rebuild_runs()
        else:
            self.events.search = text
            needle = text.lower().strip()
            if self.events.sparse and needle and self.selected is not None:  # a worker reads the pages
                self.events.search_hits = set()
                self.searching_run = True
                self.search_run(self.selected, needle, self.events.rows, len(self.events.rows))
            elif self.searching_run:
                self.searching_run = False
                self.workers.cancel_group(self, "search")
            self._relayout_events()

    @work(thread=True, exclusive=True, group="search", exit_on_error=False, description="a search in a run")
    def search_run(self, key: RunKey, needle: str, rows: RunIndex, upto: int) -> None:
        """A long run's events (`rows`' first `upto`) matching `needle`, found a page at a time (as the list's own
        search matches)."""
        from zymi_tui.tui.state.event_search import search_rows

        async def job(reader: EventReader) -> None:
            worker = get_current_worker()
            hits: set[int] = set()
            shown = 0.0  # the first hits are shown as soon as they are found
            for page in index_pages(rows, upto):
                found, bad = search_rows(await reader.read_id_rows(page), needle)
                hits.update(found)
                reader.problems += bad  # said in the banner when the search ends
                if worker.is_cancelled:
                    return
                if found and time.monotonic() - shown > SEARCH_SHOWN_S:  # each showing lays the whole list out
                    shown = time.monotonic()
                    self.post_message(SearchHits(key, needle, set(hits), False))
            self.post_message(SearchHits(key, needle, hits, True))

        self.in_thread(job)

    def on_search_hits(self, msg: SearchHits) -> None:
        if msg.key != self.selected or not self.events.sparse or msg.needle != self.events.search.lower().strip():
            return
        self.searching_run = not msg.done
        self.events.search_hits = msg.hits
        self._relayout_events()

    def action_clear(self) -> None:
        box = next(iter(self.query("#search").results(Input)), None)
        if box is not None and box.display:
            box.display = False
            box.disabled = True
            self.apply_search("")
            self.query_one(RunsList if self.searching == "runs" else EventsList).focus()
        elif self.events.mark is not None:
            self.events.mark = None
            self.query_one(EventsList).refresh()
