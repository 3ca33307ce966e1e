"""The pipeline graph panel: ranks as zymi draws them, with status, LLM calls and last context size."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from zymi_tui.tui.model import format_size
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.state.graph import GLYPH, Graph

STATUS_STYLE = {"ok": "green", "failed": "red", "running": "yellow", "skipped": "bright_black", "pending": "dim"}


def render_graph(graph: Graph) -> Text:
    t = Text()
    if graph.banner:
        t.append(clean(graph.banner) + "\n", style="yellow")
    ranks = graph.ranks()
    for r, nodes in enumerate(ranks):
        par = " (parallel)" if len(nodes) > 1 else ""
        t.append(f"Level {r + 1}{par}\n", style="bold")
        for n in nodes:
            t.append(f"  {GLYPH[n.status]} ", style=STATUS_STYLE[n.status])
            t.append(clean(n.id, one_line=True), style="bold")
            t.append("  " + clean(n.what, one_line=True), style="dim")
            if n.status == "skipped":
                t.append("  skipped", style="dim")
            if n.llm_calls:
                t.append(f"  {n.llm_calls} LLM call(s), last {format_size(n.last_chars)}", style="cyan")
            t.append("\n")
        if r + 1 < len(ranks):
            t.append("  │\n", style="dim")
    if not graph.nodes:
        t.append("no steps started yet", style="dim")
    t.rstrip()
    return t


class GraphView(VerticalScroll, can_focus=False):
    """Scrolls when a pipeline has more steps than fit (zymi's panel cannot)."""

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="graph-text")

    def show_problem(self, line: str) -> None:
        self.query_one("#graph-text", Static).update(safe_text(f"⚠ {line}", "bold red"))

    def show(self, graph: Graph | None, note: str = "") -> None:
        body = self.query_one("#graph-text", Static)
        if graph is None:
            body.update(safe_text(note or "no run selected", "dim"))
            self.border_title = "Pipeline"
            return
        self.border_title = safe_text(f"Pipeline: {graph.pipeline}", one_line=True)
        body.update(render_graph(graph))
