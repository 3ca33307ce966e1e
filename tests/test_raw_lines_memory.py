"""`events --all --raw` holds few copies of a page at once: a page of a long run's rows (tool results of
kilobytes) is its stored bytes, their joined text, and the lines written; the check's own encoding of the
page is let go before the lines are encoded (it held a fourth copy: long_100k's peak RSS 44 -> 51 MB)."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

from benchmarks.make_long_run import write_clones
from zymi_tui.events.raw_lines import page_lines
from zymi_tui.events.store import Utf8Row


def test_a_page_of_big_rows_peaks_under_three_times_its_size(tmp_path: Path) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 4000)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows: list[Utf8Row] = conn.execute(
        "SELECT id, stream_id, sequence, CAST(data AS BLOB) FROM events ORDER BY id LIMIT 2000"
    ).fetchall()
    conn.close()
    size = sum(len(r[3]) for r in rows)
    assert size > 1_000_000  # big rows: the copies of the page dwarf the per-row objects
    tracemalloc.start()
    try:
        lines = page_lines(rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines is not None  # the page went the fast way (the way whose copies are counted here)
    assert lines.count(b"\n") == len(rows)
    assert peak < 3.0 * size, f"{peak / size:.2f} times the page's {size} bytes"
