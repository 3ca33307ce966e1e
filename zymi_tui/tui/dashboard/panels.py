"""What the dashboard draws from its state: the banner, the run's info, the events title, the plot and the
pipeline graph; and the once-a-second look at the store file and its writers that can change them."""

from __future__ import annotations

from dataclasses import replace

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.chain_freshness import store_stamp
from zymi_tui.tui.dashboard.loaders import DashboardLoaders
from zymi_tui.tui.dashboard.state import KIND_PRESETS
from zymi_tui.tui.graph_view import GraphView
from zymi_tui.tui.lineage import lineage_text
from zymi_tui.tui.messages import StoreTrouble
from zymi_tui.tui.model import format_size
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.safe_text import clean, cut_middle, safe_text
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.state.graph import build_graph
from zymi_tui.tui.state.plot import StepCalls
from zymi_tui.tui.widgets import RunsList

ID_CELLS = 24  # a run's id on the run-info line: at least this many cells, else half the line, cut in its middle


class DashboardPanels(DashboardLoaders):
    """The drawn panels, redrawn from the state."""

    def refresh_derived(self, new_run: bool) -> None:
        self.plot_dirty = True
        if new_run:
            self._redraw_plot()
        self.refresh_graph()

    def _redraw_plot(self) -> None:
        if self.runs_dirty and not any(w.group == "runs" and w.is_running for w in self.workers):
            self.runs_dirty = False
            self.reload_runs()
        if (
            self.masking_stale
            and self.selected
            and not any(w.group == "masking" and w.is_running for w in self.workers)
        ):
            self.masking_stale = False
            self.find_masking(self.selected, self.step_streams())
        if not self.plot_dirty:
            return
        self.plot_dirty = False
        plot = self.query_one(ContextPlot)
        collected = self.collected()
        steps: dict[str, StepCalls] = {}
        for name, sc in (collected.steps if collected is not None else {}).items():
            steps[name] = sc = replace(sc)  # the collector keeps its estimate; the plot shows the best answer
            if self.masking_checked:  # the context engine's answer replaces the estimate
                gid = self.masking.get(name)
                index = sc.calls.index_of(gid) if gid is not None else None
                sc.masking_from, sc.masking_exact = index, True
        t0 = collected.t0 if collected is not None and collected.t0 is not None else 0
        plot.step = self.events.step
        plot.set_data(steps, t0, reading=self.run_loading or (self.events.sparse and not self.calls_done))

    def refresh_graph(self) -> None:
        graph_view = self.query_one(GraphView)
        key = self.selected
        if key is None:
            graph_view.show(None)
            return
        row = next((r for r in self.runs.rows if r.key == key), None)
        if row is None:
            return
        loaded = self.pipeline_steps.get(str(key))
        if loaded is None:
            graph_view.show(None, "loading pipeline…")
            return
        steps, problem = loaded
        collected = self.collected()
        if collected is None:
            graph_view.show(None, "reading the run's calls…")
            return
        graph = build_graph(row.summary.pipeline, steps, problem, collected.nodes, collected.steps)  # type: ignore[arg-type]
        graph_view.show(graph)

    def update_run_info(self) -> None:
        key = self.current_key()
        info = self.query_one("#run-info", Static)
        if key is None:
            info.update("")
            return
        row = self.runs.rows[self.query_one(RunsList).cursor]
        s = row.summary
        t = Text()
        sid = clean(s.stream_id, one_line=True)  # whole in the tooltip (`c` copies it), cut in its middle here
        info.tooltip = sid if cell_len(sid) > ID_CELLS else None
        t.append(cut_middle(sid, max(ID_CELLS, info.size.width // 2)), style="bold")
        if row.is_turn:
            t.append(f"  turn {s.turn}/{row.turns}")
        t.append(f"  {s.status}")
        if row.peak_chars is not None:
            t.append(f"  peak {format_size(row.peak_chars)}")
        chain = self.broken.get(key.stream_id)
        if chain:
            t.append("\n" + clean(f"⚠ hash chain does not verify: {chain}", one_line=True), style="bold red")
        elif self.verified is not None and not self.chain_freshness.stale and not self.chain_freshness.damage:
            t.append("  chain ✓", style="green")
        if s.error:
            t.append("\n" + clean(f"error: {s.error}", one_line=True, max_cells=200), style="red")
        t.append_text(lineage_text(self.runs, s))
        info.update(t)

    def update_events_title(self) -> None:
        m = self.events
        parts = [f"{m.layout.visible_count}/{len(m.rows)} events"]
        if m.step is not None:
            parts.append("run stream" if m.step == RUN_GROUP else f"step {m.step}")
        kinds = next((name for name, tags in KIND_PRESETS if tags == m.kinds), "custom kinds")
        if m.kinds is not None:
            parts.append(kinds)
        if m.search:
            parts.append(f"search “{m.search}”" + (" (searching…)" if self.searching_run else ""))
        if self.run_loading:
            parts.append("loading…")
        elif m.kinds_pending:
            parts.append("reading kinds…")
        self.query_one("#events").border_title = safe_text("Events · " + " · ".join(parts), one_line=True)
        self.query_one("#events-title", Static).display = False

    def _chain_banner(self) -> list[tuple[str, str]]:
        """What the banner says of the last hash-chain check, and whether it still holds."""
        fresh = self.chain_freshness
        again = ", the store changed since: checking again…" if fresh.stale else ""
        parts: list[tuple[str, str]] = []
        if fresh.damage:
            found = f" · the store is damaged ({len(fresh.damage)} finding(s)): {fresh.damage[0]}{again}"
            parts.append((clean(found, one_line=True, max_cells=200), "bold red"))
        if self.broken:
            parts.append((f" · {len(self.broken)} run(s) fail the hash-chain check{again}", "bold red"))
        elif self.chain_problem is not None:
            parts.append((" · hash chains not checked (see the notification)", "yellow"))
        elif self.verified is None:
            parts.append((" · checking hash chains…", "dim"))
        elif fresh.stale:
            changed = f" · the store changed since {self.verified} stream(s) were verified: checking again…"
            parts.append((changed, "yellow"))
        elif not fresh.damage:
            parts.append((f" · {self.verified} stream(s) verified", "dim"))
        return parts

    def banner_height(self, width: int) -> int:
        """The lines the banner needs to show a banner sentence (the sample store's) whole, with the state
        after it (about 70 cells); 1 for a store's path."""
        if not self.target.banner:
            return 1
        return max(1, min(4, -(-(cell_len(self.target.banner) + 70) // max(width - 2, 20))))

    def update_banner(self) -> None:
        parts: list[tuple[str, str]] = []
        if self.target.banner:
            parts.append((self.target.banner, "bold"))
        else:
            parts.append((f"store {self.target.store}", ""))
        parts.append((" · FROZEN" + (f" ({len(self.held)} new held)" if self.held else "") if self.frozen else
                      " · live", "bold yellow" if self.frozen else "green"))  # fmt: skip
        if self.runs.follow_newest:
            parts.append((" · following newest run", "cyan"))
        parts += self._chain_banner()
        if self.reader is not None:
            self.bad_rows.update({b.global_id: b.describe() for b in self.reader.problems})
        if self.bad_rows:
            parts.append((f" · {len(self.bad_rows)} unreadable row(s) skipped", "yellow"))
        parts.append((f" · caps: {self.knob_source or 'reading the project…'}", "dim"))
        if self.size.width < 80 or self.size.height < 24:
            parts.insert(0, (f"terminal {self.size.width}x{self.size.height}: graph and plot hidden (80x24 shows "
                             "them) · ", "yellow"))  # fmt: skip
        if self.trouble:
            parts.insert(0, (f"⚠ {self.trouble} · ", "bold red"))

        def spaced(text: str) -> str:  # the separators' spaces survive the cleaning (it trims them)
            core = clean(text, one_line=True)
            return (" " if text[:1] == " " else "") + core.strip(" ") + (" " if text[-1:] == " " else "")

        self.query_one("#banner", Static).update(Text.assemble(*((spaced(text), style) for text, style in parts)))

    def on_resize(self) -> None:
        self.query_one("#banner", Static).styles.height = self.banner_height(self.size.width)
        self.update_banner()

    def _check_store_file(self) -> None:
        """One stat a second: a store deleted while open is said so (the tail sees no new rows); a
        store changed since its hash chains were checked is checked again."""
        self._recheck_chains_if_changed()
        if not isinstance(self.target.store, SqliteStore) or self.target.store.path.exists():
            return
        text = f"{self.target.store} was deleted: showing what was already loaded"
        if self.trouble != text:
            self.post_message(StoreTrouble(text))
            self.workers.cancel_group(self, "tail")

    def _check_writers(self) -> None:
        """A run listed as running whose writer is gone (`kill -9`: no end row will come) is shown
        interrupted within LIVENESS_S; only while one is listed, on a SQLite store."""
        if isinstance(self.target.store, SqliteStore) and any(s.status == "running" for s in self.runs.summaries):
            self.check_writers(self.target.store.path, self.runs.summaries)

    def _recheck_chains_if_changed(self) -> None:
        was_stale = self.chain_freshness.stale
        due = self.chain_freshness.recheck_now(store_stamp(self.target.store, self.last_gid))
        if self.chain_freshness.stale and not was_stale:
            self.update_banner()
            self.update_run_info()
        if due and not any(w.group == "verify" and w.is_running for w in self.workers):
            self.verify_chains()

    def worker_failed(self, group: str, line: str) -> None:
        if group == "run":
            self.run_loading = False
            self.update_events_title()
        elif group == "rows":
            self.rows_busy = False
        elif group == "kinds":  # the filters stay waiting; the failure is said in the banner
            self.trouble = line
        elif group == "search":
            self.searching_run = False
            self.update_events_title()
        elif group == "verify":
            self.chain_problem = line
        elif group == "masking":  # the estimate from W stays on the plot; its legend says why it is not rebuilt
            plot = self.query_one(ContextPlot)
            plot.masking_problem = line
            plot.replot()
        if group in ("open", "verify", "tail", "runs"):
            self.trouble = line
        self.update_banner()
