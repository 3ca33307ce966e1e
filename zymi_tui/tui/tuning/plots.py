"""Plots of the tuning screens: the per-stream overlay of a profile comparison, and the sweep's
scatter with its Pareto front (the knob editor's curve is `curve_view.CurveView`)."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from zymi_tui.tui.state.plot import downsample, human, x_ticks, y_ticks

COLOURS = ["cyan", "magenta", "green", "yellow", "blue", "red"]


def label_axes(plot: PlotextPlot, xs: list[float], ys: list[float], *, integer_x: bool) -> None:
    """Axes labelled as a person reads them (26.8k, 1.2M; whole call numbers), not plotext's raw floats
    ("26752.0"); y from 0, ticks placed by the same rules as the dashboard's plot."""
    if not xs or not ys:
        return
    plt = plot.plt  # tick counts fixed, not from the widget's size: it may not be laid out yet when shown
    top = max(ys) * 1.05 or 1.0
    plt.ylim(0, top)
    yt = y_ticks(top, 5)
    plt.yticks(yt, [human(t) for t in yt])
    lo, hi = min(xs), max(xs)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    xt = x_ticks(lo, hi, 6, integer=integer_x)
    plt.xticks(xt, [human(t) for t in xt])


class OverlayPlot(PlotextPlot):
    """One stream's calls under each profile of a comparison."""

    def show(self, title: str, series: dict[str, list[tuple[int, int]]]) -> None:
        plt = self.plt
        plt.clear_figure()
        width = max(self.size.width, 20)
        all_x: list[float] = []
        all_y: list[float] = []
        for i, (name, pts) in enumerate(series.items()):
            if not pts:
                continue
            xs, ys = downsample([float(n + 1) for n in range(len(pts))], [float(y) for _, y in pts], 2 * width)
            plt.plot(xs, ys, label=name, color=COLOURS[i % len(COLOURS)], marker="braille")
            all_x += xs
            all_y += ys
        label_axes(self, all_x, all_y, integer_x=True)
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
        label_axes(self, [p[0] for p in points], [p[1] for p in points], integer_x=False)
        plt.xlabel("total input tokens (est.)")
        plt.title("sweep: lower-left is better · same trajectory assumed")
        self.refresh()
