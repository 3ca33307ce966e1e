"""The dashboard's workers that read the store: the runs list, a run (whole, or a long run's index, kinds and
rows), its figures, its masking, its pipeline, the hash chains, the live tail and the runs' writers. Each
posts what it read as a message (tui/messages.py); results.py applies them."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

from textual import work
from textual.worker import get_current_worker

from zymi_tui.errors import UserError
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.runs import RunSummary, list_runs, newest_runs, with_liveness
from zymi_tui.events.store import EventReader, StoreError, step_of
from zymi_tui.events.tail import tail
from zymi_tui.events.writers import store_writers
from zymi_tui.malloc_arenas import give_back_freed
from zymi_tui.tui.chain_freshness import StartedCheck, checked_by_a_process, store_stamp
from zymi_tui.tui.dashboard.state import DashboardState
from zymi_tui.tui.messages import (
    CallsCollected,
    ChainChecked,
    EventRead,
    LivenessChecked,
    MaskingFound,
    PeaksLoaded,
    PipelineLoaded,
    RunIndexed,
    RunKinds,
    RunPage,
    RunRows,
    RunsLoaded,
    StoreTrouble,
    TailBatch,
)
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.source import FIRST_RUNS, FirstRuns, read_peaks, read_run
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.state.graph import load_pipeline_steps
from zymi_tui.tui.state.kind_codes import KindCodes
from zymi_tui.tui.state.plot import PLOT_TAGS, WORKFLOW_TAGS, CallCollector
from zymi_tui.tui.state.run_index import RunIndex

TAIL_POLL_S = 0.1
FIRST_PAGE = 200  # a run with more events shows its newest ones at once, then all of them
# A run of more events than this is shown from its index (ids first), its rows read as they are drawn;
# its plot, graph and search are made by workers reading its pages. ZYMI_TUI_SPARSE_EVENTS sets it
# (the tests lower it to take this path on a small store).
SPARSE_EVENTS = 5000
PAGE_IDS = 500  # rows a worker reads (and decodes) at a time
KINDS_CHUNK = 20_000  # ids whose kinds are asked at a time (the answer, a dict, ~2 MB; the whole run's, ~100 MB)


def sparse_threshold() -> int:
    return int(os.environ.get("ZYMI_TUI_SPARSE_EVENTS", SPARSE_EVENTS))


def kind_pages(rows: RunIndex, upto: int, wanted: Callable[[str], bool], size: int = PAGE_IDS) -> Iterator[list[int]]:
    """The ids of a run's rows [0, upto) whose kind is `wanted`, a page at a time, taken from the index as each page
    is asked for: no array of them all is held while they are read (long_1m: 310,000 ids, 2.5 MB at the peak)."""
    page: list[int] = []
    for i in range(upto):
        if wanted(rows.tag(i)):
            page.append(rows.gid(i))
            if len(page) == size:
                yield page
                page = []
    if page:
        yield page


def index_pages(rows: RunIndex, upto: int, size: int = PAGE_IDS) -> Iterator[list[int]]:
    """The ids of a run's rows [0, upto) a page at a time: a worker is handed the index, not a copy of its ids
    (a thread worker's arguments stay referenced after it ends, until its thread runs another worker: 8 MB for
    a million ids in an array, 36 MB as a list)."""
    return (rows.gid_range(i, min(i + size, upto)).tolist() for i in range(0, upto, size))


class DashboardLoaders(DashboardState):
    """The store's readers (Textual workers, each in a group of its own: a new read cancels the last)."""

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False, description="the runs list")
    def reload_runs(self, *, newest_first: bool = False, drawn: list[FirstRuns] | None = None) -> None:
        """All runs; with `newest_first`, the newest screenful is read and drawn before the rest;
        `drawn`: [that screenful, already drawn] (then the rest is read, if it was not every run), taken out
        of the list by the job: a thread worker's arguments stay referenced after it ends (until its thread
        runs another worker), and the runs drawn first are let go once the whole list is drawn."""

        async def job(reader: EventReader) -> None:
            first = drawn.pop() if drawn else None
            page, whole = (first.summaries, first.whole) if first is not None else ([], False)
            if newest_first and first is None:
                page, whole = await newest_runs(reader, FIRST_RUNS, turns=True)
                if get_current_worker().is_cancelled:
                    return
                self.post_message(RunsLoaded(page, complete=whole))
            # the rest: read by the process that read the first runs (on another core), or here
            rest = first.rest() if first is not None and first.rest is not None and not whole else None
            if rest is not None:
                reader.problems.extend(rest.skipped)
            if whole:
                summaries = page
            else:
                summaries = rest.summaries if rest is not None else await list_runs(reader, turns=True)
                if get_current_worker().is_cancelled:
                    return
                self.post_message(RunsLoaded(summaries))
            if not self.peaks_loaded:
                self.peaks_loaded = True
                turn_of = {s.correlation_id: s.stream_id for s in summaries
                           if s.turns_on_stream > 1 and s.correlation_id}  # fmt: skip
                self.app.call_from_thread(self.read_run_peaks, turn_of)

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="peaks", exit_on_error=False, description="the runs' peaks")
    def read_run_peaks(self, turn_of: dict[str, str]) -> None:
        """Every run's peak context size (its `llm_call_started` rows, ~1.3 s of CPU at a million events), read
        once the first hash-chain check is done: "verified" is not held back by a column that can wait."""

        async def job(reader: EventReader) -> None:
            async for peaks in read_peaks(reader, turn_of):
                if get_current_worker().is_cancelled:
                    return
                self.post_message(PeaksLoaded(peaks))

        # `bulk_read` taken before the wait: at the verdict the peaks are read first, a long run's index after them
        with self.one_bulk_read() as go:
            if go and self.after_first_check():
                self.in_thread(job)

    def checked_by_a_process(self) -> bool:
        """Whether the store's hash chains are checked by a process of their own (`chain_freshness`)."""
        return checked_by_a_process(self.target.store)

    def _store_top(self) -> int:
        """The store's last global id now, read in this worker thread on a reader of its own (0 if it cannot be
        read: said there), for a check by a process."""
        top = [0]

        async def read(reader: EventReader) -> None:
            top[0] = await reader.max_global_id()

        self.in_thread(read)
        return top[0]

    @work(thread=True, exclusive=True, group="verify", exit_on_error=False)
    def verify_chains(self) -> None:
        """Every hash chain checked (see `checked_by_a_process`); the first time, by the process `observe`
        started with the dashboard's, if it did."""
        # the check's modules (and hashlib) load here, after the first frame
        from zymi_tui.events.verify_process import ChainSummary, CheckProcess, summed_up

        started, self.started_check = self.started_check, None
        if started is not None:
            stamp, began = started.stamp(self.last_gid), started.began
        else:
            stamp, began = store_stamp(self.target.store, self.last_gid), time.monotonic()  # before a row is read
        store = self.target.store
        by_process = started is not None or (isinstance(store, SqliteStore) and self.checked_by_a_process())
        if by_process:  # the last id the store holds as the check begins (the tail, still catching up, may be behind)
            stamp = (*stamp[:-1], max(stamp[-1], self._store_top()))  # (a check here reads it on its own reader)
        if started is None and by_process and isinstance(store, SqliteStore):
            started = StartedCheck(CheckProcess(store.path), (), began)
        if started is not None:
            check = self.chain_check = started.process
            try:
                summary = check.result()
            except StoreError as e:
                if not get_current_worker().is_cancelled:
                    self.post_message(StoreTrouble(str(e)))
                return
            finally:
                check.stop()
                self.first_check_over()
            self.post_message(ChainChecked(summary.broken, summary.streams, summary.damage, stamp,
                                           time.monotonic() - began))  # fmt: skip
            return

        async def job(reader: EventReader) -> None:
            from zymi_tui.events.verify import verify_store

            checked = (*stamp[:-1], max(stamp[-1], await reader.max_global_id()))
            report = await verify_store(reader)
            summary: ChainSummary = summed_up([(v.stream_id, v.problem) for v in report.verdicts], report.damage)
            took = time.monotonic() - began
            self.post_message(ChainChecked(summary.broken, summary.streams, summary.damage, checked, took))

        self.in_thread(job)

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def tail_store(self) -> None:
        assert self.reader is not None
        path = (
            self.target.store.path if isinstance(self.target.store, SqliteStore) else None
        )  # a URL is never "deleted"
        try:
            async for batch in tail(self.reader, self.last_gid, poll_s=TAIL_POLL_S):
                self.post_message(TailBatch(batch))
                if path is not None and not path.exists():
                    break
        except StoreError as e:
            self.post_message(StoreTrouble(f"live updates stopped: {e}"))

    @work(thread=True, exclusive=True, group="run", exit_on_error=False, description="a run's index")
    def load_run(self, key: RunKey) -> None:
        async def job(reader: EventReader) -> None:
            if key.correlation_id is None:  # a long run: its newest events are shown while the rest loads
                head = await reader.newest(key.stream_id, FIRST_PAGE, include_steps=True)
                more = len(head) == FIRST_PAGE  # (a run of fewer events is read at once, whole)
                if more and not get_current_worker().is_cancelled:
                    self.post_message(RunPage(key, head, True, False))
                # its newest events drawn, the run's index (1.45 s of CPU at a million events) is read once the
                # first hash-chain check is done (the two cores go to it first; `on_first_check_done` loads the run
                # again: a worker waiting here would hold one of the few threads workers run in), and after the
                # runs' peaks (see `bulk_read`)
                if more:
                    self.index_after_check = key
                    if not self.first_check_done.is_set():
                        return
                    self.index_after_check = None
                with self.one_bulk_read() if more else nullcontext(True) as go:
                    if not go:
                        return
                    rows = await reader.run_index(key.stream_id)  # in columns: no tuple a row
                    give_back_freed()  # the pages read and the parts merged
                if len(rows) > sparse_threshold():  # ids first: the rows are read as they are drawn, the kinds next
                    if not get_current_worker().is_cancelled:
                        self.post_message(RunIndexed(key, rows, head))
                    return
            events = await read_run(reader, key)
            if not get_current_worker().is_cancelled:
                self.post_message(RunPage(key, events, True, True))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="kinds", exit_on_error=False, description="a run's kinds")
    def read_kinds(self, key: RunKey, rows: RunIndex, upto: int) -> None:
        """The kind of every row (by id) of a long run listed from its ids (the filters, pickers and plot need
        them): of `rows`' first `upto` (those listed then; rows added live since come with their kinds)."""

        async def job(reader: EventReader) -> None:
            kinds = KindCodes(rows.gid_range(0, upto))  # a byte an id: the answers (dicts) kept a chunk at a time
            for chunk in index_pages(rows, upto, KINDS_CHUNK):
                kinds.add(await reader.kinds_of(chunk))
                give_back_freed()  # the chunk's answer (a dict of KINDS_CHUNK ids)
                if get_current_worker().is_cancelled:
                    return
            self.post_message(RunKinds(key, kinds))

        if self.after_first_check():  # (the list draws its rows without them meanwhile)
            self.in_thread(job)

    @work(thread=True, group="rows", exit_on_error=False, description="a page of events")
    def load_rows(self, key: RunKey, gids: list[int]) -> None:
        """Rows of a long run the events list drew before they were read."""

        async def job(reader: EventReader) -> None:
            self.post_message(RunRows(key, await reader.read_ids(gids), gids))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="collect", exit_on_error=False, description="a run's figures")
    def collect_run(self, key: RunKey, rows: RunIndex, upto: int) -> None:
        """A long run's plot and graph: its LLM-call, compaction and workflow rows read a page at a time
        (of a call only the fields drawn are decoded) and fed to a collector that keeps the calls, not the
        events). A row whose kind column names no known kind (an unknown or a hostile one) is read too: its
        data says what it is, as when a small run is read whole (and an unreadable one is counted).
        `rows`: the model's own index, of which the first `upto` rows are read (rows added live since come live)."""
        from zymi_tui.events.kinds import KIND_BY_TAG  # the kinds load with the first event decoded, not at start

        def wanted_tag(tag: str) -> bool:
            return tag in PLOT_TAGS or tag in WORKFLOW_TAGS or tag not in KIND_BY_TAG

        if not self.after_first_check():  # (the two cores go to the first check: the plot can wait)
            return

        first_gid, last_gid = (rows.gid(0), rows.gid(upto - 1)) if upto else (None, 0)

        async def job(reader: EventReader) -> None:
            collector = CallCollector(self.window, self.forget_after)
            worker = get_current_worker()
            first = await reader.read_ids([first_gid]) if first_gid is not None else []  # x: since the run started
            collector.t0 = first[0].event.timestamp_ns if first else None
            taken = threading.Event()  # the last copy sent was handled (a slow screen gets fewer, not a queue)
            taken.set()
            for n, page in enumerate(kind_pages(rows, upto, wanted_tag), 1):
                reader.problems += collector.feed_rows(await reader.read_id_rows(page))
                if worker.is_cancelled:
                    return
                if n % 20 == 0:
                    give_back_freed()  # what the pages read so far freed (issue 34: the peak RSS at 1M events)
                    if taken.is_set():  # the curve grows as it is read
                        taken.clear()
                        self.post_message(CallsCollected(key, collector.snapshot(), False, taken))
            collector.last_gid = max(collector.last_gid, last_gid)
            give_back_freed()
            self.post_message(CallsCollected(key, collector, True))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="event", exit_on_error=False, description="one event")
    def read_event(self, key: RunKey, gid: int) -> None:
        """One event of a long run read whole (the inspector opens on it)."""

        async def job(reader: EventReader) -> None:
            found = await reader.read_ids([gid])
            self.post_message(EventRead(key, found[0] if found else None))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="masking", exit_on_error=False, description="a run's masking")
    def find_masking(self, key: RunKey, streams: list[str]) -> None:
        """Replay the run's step streams with the context engine: where masking really starts."""
        from zymi_tui.replay.store_replay import replay_store
        from zymi_tui.tui.state.inspector import is_masked

        steps = {step_of(stream) or RUN_GROUP for stream in streams}

        async def job(reader: EventReader) -> None:
            first: dict[str, int] = {}
            async for row in replay_store(reader, project=self.target.project, streams=streams):
                if get_current_worker().is_cancelled:
                    return
                if row.is_compaction or row.simulated or row.rendered is None:
                    continue
                step = step_of(row.stream_id) or RUN_GROUP
                if step not in first and any(e.layer == "C" and is_masked(e) for e in row.rendered.entries):
                    first[step] = row.global_id
                    if len(first) == len(steps):  # every step's answer found: a long run is not replayed to its end
                        break
            self.post_message(MaskingFound(key, first))

        if self.target.project is not None:
            self.in_thread(job)

    @work(thread=True, exclusive=True, group="pipeline", exit_on_error=False, description="a pipeline's graph")
    def load_pipeline(self, key: RunKey, pipeline: str) -> None:
        try:
            steps = load_pipeline_steps(self.target.project, pipeline)
            self.post_message(PipelineLoaded(key, steps, None))
        except UserError as e:
            self.post_message(PipelineLoaded(key, None, e.one_line()))

    @work(thread=True, exclusive=True, group="writers", exit_on_error=False, description="the runs' writers")
    def check_writers(self, store: Path, before: list[RunSummary]) -> None:
        after = with_liveness(before, store_writers(store))
        if after != before:
            self.post_message(LivenessChecked(before, after))
