"""Plots of the tuning screens: a stream's curve recorded vs what-if, the per-stream overlay of a
profile comparison, and the sweep's scatter with its Pareto front."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from zymi_tui.tui.model_plot import downsample
from zymi_tui.tui.tuning.model import Curve

COLOURS = ["cyan", "magenta", "green", "yellow", "blue", "red"]


class CurvePlot(PlotextPlot):
    """approx_context_chars per agent call of one stream: recorded, and under the edited knobs."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.curve: Curve | None = None
        self.caps: tuple[int, int] | None = None
        self.recorded_caps: tuple[int, int] | None = None
        self.picked: int | None = None  # call index (0-based)
        self.edited = False

    def show(self, curve: Curve, caps: tuple[int, int], recorded_caps: tuple[int, int], *, edited: bool) -> None:
        self.curve, self.caps, self.recorded_caps, self.edited = curve, caps, recorded_caps, edited
        self.replot()

    def replot(self) -> None:
        plt = self.plt
        plt.clear_figure()
        c = self.curve
        if c is None or not c.sequences:
            plt.title("no LLM calls on this stream")
            self.refresh()
            return
        width = max(self.size.width, 20)
        xs = [float(i + 1) for i in range(len(c.sequences))]
        top = max(c.recorded)
        rx, ry = downsample(xs, [float(y) for y in c.recorded], 2 * width)
        plt.plot(rx, ry, label="recorded", color="cyan", marker="braille")
        if self.edited:
            known = len(xs) if c.known is None else c.known  # a what-if still running: its calls so far
            pts = [(x, float(y)) for x, y in zip(xs[:known], c.what_if[:known], strict=True) if y is not None]
            if pts:
                wx, wy = downsample([p[0] for p in pts], [p[1] for p in pts], 2 * width)
                plt.plot(wx, wy, label="what-if (estimated)", color="magenta", marker="braille")
                top = max(top, int(max(wy)))
            failed = [x for x, y in zip(xs[:known], c.what_if[:known], strict=True) if y is None]
            if failed:
                plt.scatter(failed, [0.0] * len(failed), label="would fail the hard cap", color="red", marker="x")
        for x in c.compactions_what_if if self.edited else c.compactions_recorded:
            plt.vline(x, "yellow")
        if self.caps is not None:
            soft, hard = self.caps
            shown = [(cap, colour) for cap, colour in ((soft, "orange"), (hard, "red")) if cap <= top * 3]
            for cap, colour in shown:
                plt.hline(cap, colour)
            top = max([top, *(cap for cap, _ in shown)])
        if self.picked is not None and 0 <= self.picked < len(xs):
            plt.vline(xs[self.picked], "white")
        plt.ylim(0, top * 1.05 if top else 1)
        plt.xlabel("agent call")
        title = "context bytes per call" + (" · what-if: same trajectory assumed" if self.edited else "")
        if c.inferred_prefix is not None:
            title += f" · Layer A inferred ≤{c.inferred_prefix:,} B (no project): estimates"
        plt.title(title)
        self.refresh()


class OverlayPlot(PlotextPlot):
    """One stream's calls under each profile of a comparison."""

    def show(self, title: str, series: dict[str, list[tuple[int, int]]]) -> None:
        plt = self.plt
        plt.clear_figure()
        width = max(self.size.width, 20)
        for i, (name, pts) in enumerate(series.items()):
            if not pts:
                continue
            xs, ys = downsample([float(n + 1) for n in range(len(pts))], [float(y) for _, y in pts], 2 * width)
            plt.plot(xs, ys, label=name, color=COLOURS[i % len(COLOURS)], marker="braille")
        plt.title(title)
        plt.xlabel("agent call")
        self.refresh()


class ScatterPlot(PlotextPlot):
    """Sweep points: total input tokens (x) against peak context tokens (y); Pareto front marked."""

    def show(self, points: list[tuple[float, float, bool, str]]) -> None:
        plt = self.plt
        plt.clear_figure()
        rest = [(x, y) for x, y, front, _ in points if not front]
        front = sorted((x, y) for x, y, f, _ in points if f)
        if rest:
            plt.scatter([p[0] for p in rest], [p[1] for p in rest], label="grid point", color="cyan", marker="dot")
        if front:
            plt.plot([p[0] for p in front], [p[1] for p in front], label="Pareto front", color="magenta", marker="*")
        plt.xlabel("total input tokens (est.)")
        plt.title("sweep: lower-left is better · same trajectory assumed")
        self.refresh()
