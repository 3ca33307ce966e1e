"""A long run's plot reads the ids of its call, compaction and workflow rows a page at a time from the run's index,
as each page is asked for (issue 34: the dashboard at a million events in 100 MB): before, an array of every such
id (long_1m: ~310,000, 2.5 MB) was built first and held while the plot was read, at the dashboard's peak.
The pages are checked against the rows this test made; the memory held while they are walked, by tracemalloc."""

from __future__ import annotations

import tracemalloc

from zymi_tui.events.run_index import RunIndex
from zymi_tui.tui.dashboard.loaders import PAGE_IDS, kind_pages
from zymi_tui.tui.state.plot import PLOT_TAGS

EVENTS = 300_000
TAGS = ["llm_call_started", "tool_call_requested", "llm_call_completed", "tool_call_completed", "context_compacted"]


def test_the_wanted_ids_come_a_page_at_a_time_without_an_array_of_them_all() -> None:
    rows = RunIndex()
    made = []
    for gid in range(1, EVENTS + 1):
        row = (gid * 3, "run.step", gid, TAGS[gid % len(TAGS)])
        rows.append(row)
        made.append(row)
    upto = EVENTS - 7  # rows appended live after `upto` are not read
    want = [gid for gid, _, _, tag in made[:upto] if tag in PLOT_TAGS]
    tracemalloc.start()
    try:
        sizes = [len(page) for page in kind_pages(rows, upto, PLOT_TAGS.__contains__)]  # (the pages only counted)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sizes == [PAGE_IDS] * (len(want) // PAGE_IDS) + ([len(want) % PAGE_IDS] if len(want) % PAGE_IDS else [])
    assert [gid for page in kind_pages(rows, upto, PLOT_TAGS.__contains__) for gid in page] == want
    # an array of every wanted id: 8 bytes each (180,000 here: 1.4 MB); a page, as a list: ~40 bytes an id (a
    # list's slot and an int; one given, one being made, one of slack), and the list of sizes
    assert peak < 3 * 40 * PAGE_IDS + 8 * len(sizes) + 1024, f"{peak} bytes traced while the ids were walked"
