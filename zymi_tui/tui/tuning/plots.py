"""Plots of the tuning screens: the per-stream overlay of a profile comparison, and the sweep's
scatter with its Pareto front (the knob editor's curve is `curve_view.CurveView`)."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from zymi_tui.tui.state.plot import downsample

COLOURS = ["cyan", "magenta", "green", "yellow", "blue", "red"]


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
