"""The runs list as the dashboard shows it: streams, each chat turn as its own entry, filters.

Pure: no widgets, no IO. `RunsModel.rows` is what the runs list draws, one entry a line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from rich.cells import cell_len

from zymi_tui.events.runs import RunSummary
from zymi_tui.tui.safe_text import clean

NAME_CELLS = 14
"""The widest a pipeline name is shown in the runs list (longer ones end in "…")."""


def format_duration(ms: int | None) -> str:
    """`S.mmms`, `M:SS` or `H:MM:SS` (zymi observe's format); `—` while running."""
    if ms is None:
        return "—"
    if ms < 60_000:
        return f"{ms / 1000:.3f}s"
    s = ms // 1000
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def format_size(chars: int | None) -> str:
    """A context size in bytes, short: `812 B`, `54.2k`, `1.20M`; `—` when unknown."""
    if chars is None:
        return "—"
    if chars < 1000:
        return f"{chars} B"
    if chars < 1_000_000:
        return f"{chars / 1000:.1f}k"
    return f"{chars / 1_000_000:.2f}M"


def local_time(ns: int, fmt: str = "%m-%d %H:%M") -> str:
    return datetime.fromtimestamp(ns / 1e9).strftime(fmt)


@dataclass(frozen=True, slots=True)
class RunKey:
    """What a runs-list entry selects: a whole stream (`correlation_id=None`) or one turn of it."""

    stream_id: str
    correlation_id: str | None = None


@dataclass(slots=True)
class RunRow:
    """One line of the runs list."""

    key: RunKey
    summary: RunSummary
    is_turn: bool  # an indented turn under its chat stream's header
    turns: int  # turns on the stream (for the header line)
    peak_chars: int | None = None
    broken_chain: bool = False

    @property
    def status(self) -> str:
        return self.summary.status

    def search_text(self) -> str:
        s = self.summary
        return f"{s.stream_id} {s.pipeline} {s.prompt} {s.status} {s.error or ''}".lower()


@dataclass
class RunsModel:
    """Every run, newest stream first; a stream with several turns shows a header and one entry per turn."""

    summaries: list[RunSummary] = field(default_factory=list)
    search: str = ""
    status_filter: str | None = None  # "ok" | "FAIL" | "running" | "interrupted"
    follow_newest: bool = False
    peaks: dict[RunKey, int] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)
    rows: list[RunRow] = field(default_factory=list)
    name_cells: int = 0  # the pipeline column: as wide as the longest name shown, at most NAME_CELLS
    # where each key's row is in `rows`, and the rows of each stream: rebuilt with `rows`, so a peak or
    # a broken chain reported for one run costs one lookup, not a scan of every row
    _index: dict[RunKey, int] = field(default_factory=dict, repr=False)
    _by_stream: dict[str, list[RunRow]] = field(default_factory=dict, repr=False)

    def set_runs(self, summaries: Iterable[RunSummary]) -> None:
        self.summaries = list(summaries)
        names = {s.pipeline for s in self.summaries}  # a few distinct names, however many runs
        self.name_cells = min(NAME_CELLS, max((cell_len(clean(n, one_line=True)) for n in names), default=0))
        self.rebuild()

    def set_peak(self, key: RunKey, chars: int) -> bool:
        """Record a context size seen on a run (keeps the maximum); True when it changed. A run listed is kept
        under its row's own key: `key`, made from a row read (a new id string each), is not held (a long chat
        stream's 5,748 turns: ~1.1 MB of such copies at a million events, issue 34)."""
        if chars > self.peaks.get(key, -1):
            at = self._index.get(key)
            if at is not None:
                row = self.rows[at]
                row.peak_chars, key = chars, row.key
            self.peaks[key] = chars
            return True
        return False

    def mark_broken(self, stream_id: str) -> None:
        self.broken.add(stream_id)
        for row in self._by_stream.get(stream_id, ()):
            row.broken_chain = True

    def rebuild(self) -> None:
        by_stream: dict[str, list[RunSummary]] = {}
        for s in self.summaries:
            by_stream.setdefault(s.stream_id, []).append(s)
        order = sorted(
            by_stream.values(),
            key=lambda turns: max((t.started_ns, t.request_global_id) for t in turns),
            reverse=True,
        )
        needle = self.search.lower().strip()
        rows: list[RunRow] = []
        for turns in order:
            turns.sort(key=lambda t: t.turn)
            entries = []
            if len(turns) > 1:
                keep = [t for t in turns if self._keep(t, needle)]
                if not keep and not self._keep_stream(turns, needle):
                    continue
                entries.append(self._row(RunKey(turns[0].stream_id), _stream_summary(turns), False, len(turns)))
                for t in keep:
                    entries.append(self._row(RunKey(t.stream_id, t.correlation_id), t, True, len(turns)))
            elif self._keep(turns[0], needle):
                entries.append(self._row(RunKey(turns[0].stream_id), turns[0], False, 1))
            rows.extend(entries)
        self.rows = rows
        self._index = {row.key: i for i, row in enumerate(rows)}
        self._by_stream = {}
        for row in rows:
            self._by_stream.setdefault(row.key.stream_id, []).append(row)

    def _row(self, key: RunKey, summary: RunSummary, is_turn: bool, turns: int) -> RunRow:
        return RunRow(key, summary, is_turn, turns, self.peaks.get(key), key.stream_id in self.broken)

    def _keep(self, s: RunSummary, needle: str) -> bool:
        if self.status_filter and s.status != self.status_filter:
            return False
        if not needle:
            return True
        return needle in f"{s.stream_id} {s.pipeline} {s.prompt} {s.status} {s.error or ''}".lower()

    def _keep_stream(self, turns: list[RunSummary], needle: str) -> bool:
        return bool(needle) and needle in turns[0].stream_id.lower() and self.status_filter is None

    def index_of(self, key: RunKey) -> int | None:
        return self._index.get(key)

    def find_stream(self, stream_id: str) -> int | None:
        """The entry for a stream id given on the command line (its header when it has turns)."""
        return self.index_of(RunKey(stream_id))


def _stream_summary(turns: list[RunSummary]) -> RunSummary:
    """A chat stream's header: first turn's start, status of the latest turn, duration to its end."""
    first, last = turns[0], turns[-1]
    duration = None
    if last.duration_ms is not None:
        duration = (last.started_ns - first.started_ns) // 1_000_000 + last.duration_ms
    from dataclasses import replace

    return replace(first, status=last.status, duration_ms=duration, error=last.error, turn=0)
