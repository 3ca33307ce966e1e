"""One profile's figures totalled as its calls come, in store order (`Tally`), and priced; or totalled from
a list of them (`summarize`). See replay/figures.py for the figures themselves."""

from __future__ import annotations

from zymi_tui.events.store import run_of
from zymi_tui.replay.cache import CacheModel
from zymi_tui.replay.call_context import ClassCall
from zymi_tui.replay.costs import CacheFamily, ModelPrice, PriceTable, cost_of
from zymi_tui.replay.figures import (
    CallFigure,
    ProfileRun,
    RecordedOutput,
    Totals,
    breaks,
    estimate_tokens,
    tokens_of,
)


class Tally:
    """One profile's totals, made as its calls' figures come in store order: each figure's tokens
    (estimated at `ratio`) and the cache model's reads and writes, then the figure added to its run's
    totals; with `per_run=False`, straight to the whole store's instead (only the runs' names kept),
    so memory does not grow with the store."""

    def __init__(self, ratio: float, family: CacheFamily | None, *, per_run: bool = True) -> None:
        self.ratio = ratio
        self.family = family
        self.cache = CacheModel(family) if family is not None else None
        self.per_run: dict[str, Totals] | None = {} if per_run else None
        self.total = Totals()
        self.runs: dict[str, None] = {}  # per_run=False: the runs seen, in order
        self._stream: str | None = None  # per_run=False: the last call's stream (its run is in `runs`)

    @property
    def reads_reuse(self) -> bool:
        """Whether a call's reused prefix bytes are read (by its cache model); its break is, always."""
        return self.cache is not None and self.cache.reads_reuse

    def add(self, f: CallFigure) -> None:
        estimate_tokens(f, self.ratio)
        self.count(f)

    def add_class(self, seen: ClassCall, soft_cap: int) -> None:
        """`add` of `call_figures(seen, soft_cap)` (a lockstep class's figures of an agent call) with no
        `CallFigure` made: a tally with no cache model and no runs' totals (`per_run=False`) keeps none."""
        assert self.cache is None and self.per_run is None
        row, r, reuse = seen
        assert not row.hard_cap_failure and not row.is_compaction  # (a lockstep class's row: a sent agent call)
        self._note_stream(row.stream_id)
        chars, recorded_chars = r.chars, row.recorded_chars
        tokens, recorded = tokens_of(self.ratio, chars, recorded_chars, row.recorded_input_tokens)
        cached, created = row.recorded_cached_tokens, row.recorded_cache_creation_tokens
        self.total.add_call(
            r.hard_cap_exceeded, chars, tokens, recorded, cached, created, True, breaks(reuse), chars > soft_cap
        )

    def count(self, f: CallFigure) -> None:
        """Add `f`, its tokens estimated (the cache model's figures made here)."""
        if self.cache is not None and f.sent:
            p = self.cache.next(f)
            f.cached_modelled, f.cache_written_modelled = p.cached, p.written
        if self.per_run is None:
            self._note_stream(f.stream_id)
            self.total.add(f)
            return
        run = run_of(f.stream_id)
        totals = self.per_run.get(run)
        if totals is None:
            totals = self.per_run[run] = Totals()
        totals.add(f)

    def _note_stream(self, stream_id: str) -> None:
        """`per_run=False`: the run of a call of `stream_id` among the runs seen."""
        if stream_id != self._stream:
            self._stream = stream_id
            self.runs.setdefault(run_of(stream_id))

    def absorb(self, later: Tally) -> None:
        """Add the figures of `later`, a tally of the same profile over a later range of the store whose
        streams are not this one's (`store_ranges`): as if its calls had been added here."""
        if self.per_run is not None and later.per_run is not None:
            for name, totals in later.per_run.items():
                mine = self.per_run.setdefault(name, Totals())
                mine.add_totals(totals)
        self.total.add_totals(later.total)
        self.runs.update(later.runs)

    def close(self, run: ProfileRun, price: tuple[PriceTable, ModelPrice] | None, output: RecordedOutput) -> None:
        """Fill the per-run (if kept) and total figures of `run` and their cost.

        Output tokens: the recorded agent replies of each run (same trajectory), plus one summary reply
        per compaction at the recorded mean (a guess of max_tokens/4 when the store has none)."""
        if self.per_run is None:
            run.per_run, run.total = {}, self.total
            scopes = [(run.total, list(self.runs))]
        else:
            run.per_run, run.total = self.per_run, Totals()
            for totals in run.per_run.values():
                run.total.add_totals(totals)
            scopes = [(totals, [name]) for name, totals in run.per_run.items()] + [(run.total, list(run.per_run))]
        if price is None:
            return
        table, model_price = price
        family = self.family
        mean, mean_recorded = output.summary_mean
        for totals, members in scopes:
            summaries = totals.compactions_recorded + totals.compactions_simulated
            out_tokens = sum(output.agent_by_run.get(m, 0) for m in members) + round(summaries * mean)
            totals.cost = cost_of(
                table, model_price, input_tokens=totals.tokens_sum, output_tokens=out_tokens,
                cached_input_tokens=totals.cached_tokens_recorded,
                cache_creation_tokens=totals.cache_creation_tokens_recorded, family=family,
            )  # fmt: skip
            totals.cost_estimated = totals.provenance == "estimated" or (summaries > 0 and not mean_recorded)
            if family is not None:
                totals.cost_with_cache = cost_of(
                    table, model_price, input_tokens=totals.tokens_sum, output_tokens=out_tokens,
                    cached_input_tokens=totals.cached_tokens_modelled,
                    cache_creation_tokens=totals.cache_write_tokens_modelled, family=family,
                )  # fmt: skip
            if run.recorded:
                totals.cost_recorded_cache = cost_of(
                    table, model_price, input_tokens=totals.tokens_sum, output_tokens=out_tokens,
                    cached_input_tokens=totals.cached_tokens_recorded,
                    cache_creation_tokens=totals.cache_creation_tokens_recorded, family=family,
                )  # fmt: skip


def summarize(
    run: ProfileRun,
    ratio: float,
    price: tuple[PriceTable, ModelPrice] | None,
    output: RecordedOutput,
    family: CacheFamily | None = None,
) -> None:
    """Fill the per-run and total figures of one profile from its calls, and their cost (see `Tally`)."""
    tally = Tally(ratio, family)
    for f in run.calls:
        tally.add(f)
    tally.close(run, price, output)
