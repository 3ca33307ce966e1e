"""The context plot: approx_context_chars per LLM call, caps, compactions, masking, input tokens."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import RenderResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.message import Message
from textual.widget import Widget

from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.state.plot import (
    CallColumns,
    CallPoint,
    StepCalls,
    curve,
    human,
    seconds_label,
    x_at,
    x_ticks,
    y_ticks,
)

if TYPE_CHECKING:
    from textual.theme import Theme
    from textual_plotext import Plot

RGB = tuple[int, int, int]
SERIES_COLOURS: list[RGB] = [(0, 200, 230), (80, 220, 100), (230, 110, 230), (220, 220, 220)]  # chars, per step
TOKEN_COLOURS: list[RGB] = [(200, 120, 255), (255, 140, 120), (120, 160, 255), (170, 170, 120)]  # input tokens
ORANGE, RED, YELLOW, BLUE, GREY = (255, 150, 0), (240, 50, 50), (240, 210, 0), (80, 140, 255), (150, 150, 150)
PINK: RGB = (255, 120, 200)


class ContextPlot(Widget, can_focus=True):
    """One series per step (or the selected step only); ←/→ pick a call, Enter inspects it.

    A plotext figure drawn as textual-plotext's PlotextPlot draws one (its colours follow the app's theme), but
    plotext is imported and the figure made at the first plot, after the dashboard's first frame (which shows
    the empty panel): the first frame pays neither plotext's import nor an empty figure's drawing."""

    DEFAULT_CSS = """
    ContextPlot {
        width: 1fr;
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "pick(-1)", "Prev call", show=False),
        Binding("right,l", "pick(1)", "Next call", show=False),
    ]

    class CallPicked(Message):
        def __init__(self, call: CallPoint | None, open_inspector: bool = False) -> None:
            super().__init__()
            self.call = call
            self.open_inspector = open_inspector

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.steps: dict[str, StepCalls] = {}
        self.step: str | None = None  # None = all steps
        self.by_time = False
        self.soft_cap: int | None = None
        self.hard_cap: int | None = None
        self.t0_ns = 0
        self.picked: CallPoint | None = None
        self.problem: str | None = None
        self.masking_problem: str | None = None  # the rebuild that places the masking marker failed: why
        self.reading = False
        self.legend_items: list[tuple[str, RGB | None]] = []
        self._version = 0
        self._cache: tuple[object, RenderResult] | None = None
        self._figure: Plot | None = None  # made by the first replot

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        if self._figure is not None:
            self._add_theme(theme.name)

    @property
    def plt(self) -> Plot:
        """The plotext figure (textual_plotext's Plot: plotext's figure without its global state)."""
        if self._figure is None:
            from textual_plotext import Plot

            self._figure = Plot()
            self._add_theme(self.app.theme)
        return self._figure

    def _add_theme(self, app_theme: str) -> None:
        """The plotext theme of the app's theme (`textual-auto-<name>`): its surface and foreground colours."""
        from plotext._dict import themes
        from textual_plotext.plot import _sequence

        name = f"textual-auto-{app_theme}"
        if name not in themes:  # canvas, axes, ticks colour, ticks style, data colours
            colours = self.app.theme_variables
            surface = Color.parse(colours["surface"]).rgb
            themes[name] = (surface, surface, Color.parse(colours["foreground"]).rgb, "default", list(_sequence))
        self.refresh()

    def render(self) -> RenderResult:
        """Plotext rebuilds the whole figure on every render: only do it when data, size or theme changed.
        Before the first plot, the empty panel."""
        if self._figure is None:
            return ""
        key = (self._version, self.size, self.app.theme)
        if self._cache is None or self._cache[0] != key:
            width, height = self.size
            plt = self._figure
            plt.plotsize(width, height)
            plt._set_size(width, height)  # as PlotextPlot does: plotsize alone does not resize (textual-plotext#5)
            plt.theme(f"textual-auto-{self.app.theme}")
            self._cache = (key, Text.from_ansi(plt.build()))
        return self._cache[1]

    def set_data(self, steps: dict[str, StepCalls], t0_ns: int, *, reading: bool = False) -> None:
        """`reading`: the run's calls are still being read (an empty plot says so, not "no LLM calls")."""
        self.steps = steps
        self.t0_ns = t0_ns
        self.reading = reading
        if self.picked is not None and not any(self.picked in sc.calls for sc in steps.values()):
            self.picked = None
        self.replot()

    def shown(self) -> list[StepCalls]:
        return [sc for name, sc in self.steps.items() if self.step is None or name == self.step]

    def all_calls(self) -> list[CallPoint]:
        calls = [c for sc in self.shown() for c in sc.calls]
        calls.sort(key=lambda c: (c.ns, c.global_id))
        return calls

    def last_call(self) -> CallPoint | None:
        """`all_calls()[-1]`, found on the columns: a long run's calls are not each made a `CallPoint` (149,425
        of them, ~52 MB at once, on every redraw of the title)."""
        best: tuple[tuple[int, int, int], CallColumns] | None = None
        for sc in self.shown():
            calls = sc.calls
            if calls:  # the highest (time, id); of equal ones the last, as the stable sort leaves it
                top = max(zip(calls.ns, calls.global_id, range(len(calls)), strict=True))
                if best is None or top[:2] >= best[0][:2]:
                    best = (top, calls)
        return None if best is None else best[1][best[0][2]]

    def call_of(self, gid: int) -> CallPoint | None:
        """The shown call whose `llm_call_started` event is `gid` (ids are unique in a store), or None."""
        for sc in self.shown():
            index = sc.calls.index_of(gid)
            if index is not None:
                return sc.calls[index - 1]
        return None

    def action_pick(self, delta: int) -> None:
        calls = self.all_calls()
        if not calls:
            return
        if self.picked is None or self.picked not in calls:
            self.picked = calls[-1 if delta < 0 else 0]
        else:
            i = calls.index(self.picked)
            self.picked = calls[max(0, min(len(calls) - 1, i + delta))]
        self.replot()
        self.post_message(self.CallPicked(self.picked))

    def action_toggle_x(self) -> None:
        self.by_time = not self.by_time
        self.replot()

    def pick(self, call: CallPoint | None) -> None:
        self.picked = call
        self.replot()

    def show_problem(self, line: str) -> None:
        """Why the plot cannot be drawn (tui/failures.py), in place of the figure."""
        self.problem = line
        self.replot()

    def on_resize(self) -> None:
        """The legend and the ticks are fitted to the width when plotted: plotted again at the new size."""
        self.replot()

    def replot(self) -> None:
        self._version += 1
        plt = self.plt
        plt.clear_figure()
        shown = self.shown()
        total = sum(len(sc.calls) for sc in shown)
        what = "all steps" if self.step is None else ("run stream" if self.step == RUN_GROUP else f"step {self.step}")
        self.border_title = safe_text(self.title_line(what, total), one_line=True)
        if self.problem is not None or not total:
            empty = "reading the run's calls…" if self.reading else "no LLM calls in this run"
            plt.text(clean(self.problem or empty, one_line=True), x=0.5, y=0.5,
                     alignment="center", color="red" if self.problem else "default")  # fmt: skip
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            plt.xticks([])
            plt.yticks([])
            self.border_subtitle = ""
            self.refresh()
            return
        width, height = max(self.size.width, 20), max(self.size.height, 6)
        top = 0.0
        top_tokens = 0.0
        x_lo, x_hi = math.inf, -math.inf  # the x span of every shown call
        legend: list[tuple[str, RGB | None]] = []
        markers: list[tuple[float, float, str, RGB, str]] = []  # x, y, glyph, colour, label
        for i, sc in enumerate(shown):
            if not sc.calls:
                continue
            drawn = curve(sc.calls, self.by_time, self.t0_ns, 2 * width)
            colour, token_colour = SERIES_COLOURS[i % len(SERIES_COLOURS)], TOKEN_COLOURS[i % len(TOKEN_COLOURS)]
            label = "run" if sc.step == RUN_GROUP else clean(sc.step, one_line=True, max_cells=16)
            if drawn.token_xs:  # drawn first: the chars curve stays on top where they cross
                plt.plot(drawn.token_xs, drawn.token_ys, color=token_colour, marker="dot", yside="right")
                top_tokens = max(top_tokens, max(drawn.token_ys))
                legend.append((f"· {label} tokens →" if len(shown) > 1 else "· input tokens →", token_colour))
            if len(drawn.xs) > 1:
                plt.plot(drawn.xs, drawn.ys, color=colour, marker="braille")
            else:
                plt.scatter(drawn.xs, drawn.ys, color=colour, marker="●")
            legend.insert(len(legend) - bool(drawn.token_xs),
                          (f"━ {label} chars" if len(shown) > 1 else "━ chars", colour))  # fmt: skip
            top = max(top, drawn.top)
            x_lo, x_hi = min(x_lo, drawn.x_lo), max(x_hi, drawn.x_hi)
            for x, _gid, saved in sc.compactions:
                cx = self._compaction_x(sc, x)
                before = sc.calls.chars[max(0, min(len(sc.calls) - 1, int(x) - 1))]
                if saved >= 0:
                    markers.append((cx, float(before), "▼", YELLOW, f"saved {human(saved)}"))
                else:
                    markers.append((cx, float(before), "▲", RED, f"⚠ grew {human(-saved)}"))
            if sc.masking_from is not None:
                at = sc.masking_from - 1
                markers.append((x_at(sc.calls, at, self.by_time, self.t0_ns), float(sc.calls.chars[at]), "◆", BLUE,
                                "masking from here"))  # fmt: skip
            if sc.forgetting_from is not None:
                at = sc.forgetting_from - 1
                markers.append((x_at(sc.calls, at, self.by_time, self.t0_ns), float(sc.calls.chars[at]), "◇", PINK,
                                "forgetting from here"))  # fmt: skip
        caps: list[tuple[int, str, RGB]] = []
        off_scale = []
        for cap, name, colour, reach in (
            (self.soft_cap, "soft cap", ORANGE, 2.5),
            (self.hard_cap, "hard cap", RED, 1.6),
        ):
            if cap is None:
                continue
            if cap <= top * reach:
                caps.append((cap, name, colour))
            else:
                off_scale.append(f"{name} {human(cap)}")
        y_top = max([top, *(float(c) for c, _, _ in caps)]) * 1.08 or 1.0
        lo, hi = x_lo, x_hi
        if hi == lo:
            lo, hi = lo - 1, hi + 1
        for cap, name, colour in caps:
            plt.hline(cap, colour)
            plt.text(f"{name} {human(cap)}", x=lo, y=cap, color=colour, alignment="left", background="default")
        glyphs = {g for _, _, g, _, _ in markers}
        if "▼" in glyphs:
            legend.append(("▼ compaction", YELLOW))
        if "▲" in glyphs:
            legend.append(("▲ summary grew", RED))
        if "◆" in glyphs:
            how = "" if all(sc.masking_exact for sc in shown if sc.masking_from) else " (est.)"
            legend.append((f"◆ masking{how}", BLUE))
        if "◇" in glyphs:
            legend.append(("◇ forgetting (est.)", PINK))
        labelled = 0
        for mx, my, glyph, colour, text in sorted(markers, key=lambda m: m[2] != "▲"):
            plt.scatter([mx], [my], marker=glyph, color=colour)
            if labelled < max(1, width // 40) or glyph == "▲":  # words where they fit; the events list has them all
                # a label that would run into the right axis ends at its marker instead (it was cut: "saved 1┤6k")
                per_cell = (hi - lo) / max(width - 12, 10)
                right = mx + (len(text) + 2) * per_cell > hi
                plt.text(f"{text} " if right else f" {text}", x=mx, y=min(my + y_top * 0.06, y_top * 0.97),
                         color=colour, alignment="right" if right else "left", background="default")  # fmt: skip
                labelled += 1
        if self.picked is not None:
            px = self._x_of(self.picked)
            if px is not None:
                plt.vline(px, GREY)
        if self.masking_problem:
            legend.insert(0, (f"⚠ masking not rebuilt: {clean(self.masking_problem, one_line=True)}", RED))
        if off_scale:
            legend.append((f"off scale: {', '.join(off_scale)}", None))
        plt.ylim(0, y_top)
        ys_ticks = y_ticks(y_top, max(2, (height - 4) // 2))
        plt.yticks(ys_ticks, [human(t) for t in ys_ticks])
        if top_tokens:
            rt = y_ticks(top_tokens * 1.08, max(2, (height - 4) // 2))
            plt.ylim(0, top_tokens * 1.08, yside="right")  # type: ignore[arg-type]
            plt.yticks(rt, [human(t) for t in rt], yside="right")  # type: ignore[arg-type]
        xt = x_ticks(lo, hi, max(2, width // 9), integer=not self.by_time)
        plt.xlim(lo - 0.3, hi + 0.3)
        plt.xticks(xt, [seconds_label(t) if self.by_time else f"{t:.0f}" for t in xt])
        plt.xlabel("seconds since the run started" if self.by_time else "LLM call (x: switch to time)")
        self.legend_items = legend
        self.border_subtitle = legend_text(legend, max(width - 4, 10))
        self.refresh()

    def title_line(self, what: str, total: int) -> str:
        """The picked call's figures first (the newest call's when none is picked): visible at any width."""
        head = "Context"
        p = self.picked
        if p is None:
            p = self.last_call()
        if p is not None:
            tokens = "" if p.input_tokens is None else f", {p.input_tokens:,} tok"
            which = "#" if self.picked is not None else "last #"
            head += f" · {which}{p.index}: {p.chars:,} ch{tokens}, {p.message_count} msgs"
        return f"{head} · {what}: {total} calls"

    def _x_of(self, call: CallPoint) -> float | None:
        return (call.ns - self.t0_ns) / 1e9 if self.by_time else float(call.index)

    def _compaction_x(self, sc: StepCalls, x: float) -> float:
        if not self.by_time:
            return x
        i = int(x)  # compaction came after call i
        ns = sc.calls.ns
        if 0 < i < len(ns):
            return ((ns[i - 1] + ns[i]) / 2 - self.t0_ns) / 1e9
        return (ns[-1] - self.t0_ns) / 1e9 if ns else 0.0


def legend_text(items: list[tuple[str, RGB | None]], width: int) -> Text:
    """The legend, outside the plot area (the widget's bottom border), cut to the width."""
    t = Text()
    for name, colour in items:
        if t.cell_len + len(name) + 2 > width:
            t.append("…")
            break
        if t:
            t.append("  ")
        t.append(name, style="" if colour is None else "rgb({},{},{})".format(*colour))
    return t
