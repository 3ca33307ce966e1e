"""The context plot: approx_context_chars per LLM call, caps, compactions, masking, input tokens."""

from __future__ import annotations

from typing import ClassVar

from textual.app import RenderResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual_plotext import PlotextPlot

from zymi_tui.tui.model import format_size
from zymi_tui.tui.model_events import RUN_GROUP
from zymi_tui.tui.model_plot import CallPoint, StepCalls, downsample, x_values

SERIES_COLOURS = ["cyan", "magenta", "green", "blue", "yellow", "red"]
ORANGE, RED, YELLOW, BLUE, GREY = (255, 150, 0), (230, 40, 40), (230, 200, 0), (60, 120, 255), (150, 150, 150)


class ContextPlot(PlotextPlot, can_focus=True):
    """One series per step (or the selected step only); ←/→ pick a call, Enter inspects it."""

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
        self.note = ""
        self._version = 0
        self._cache: tuple[object, RenderResult] | None = None

    def render(self) -> RenderResult:
        """Plotext rebuilds the whole figure on every render: only do it when data, size or theme changed."""
        key = (self._version, self.size, self.app.theme)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, super().render())
        return self._cache[1]

    def set_data(self, steps: dict[str, StepCalls], t0_ns: int) -> None:
        self.steps = steps
        self.t0_ns = t0_ns
        if self.picked is not None and not any(self.picked in sc.calls for sc in steps.values()):
            self.picked = None
        self.replot()

    def shown(self) -> list[StepCalls]:
        return [sc for name, sc in self.steps.items() if self.step is None or name == self.step]

    def all_calls(self) -> list[CallPoint]:
        calls = [c for sc in self.shown() for c in sc.calls]
        calls.sort(key=lambda c: (c.ns, c.global_id))
        return calls

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

    def replot(self) -> None:
        self._version += 1
        plt = self.plt
        plt.clear_figure()
        width = max(self.size.width, 20)
        shown = self.shown()
        total = sum(len(sc.calls) for sc in shown)
        what = "all steps" if self.step is None else ("run stream" if self.step == RUN_GROUP else f"step {self.step}")
        title = f"{what}: {total} calls"
        if self.picked is not None:
            p = self.picked
            title += f" · picked #{p.index} {format_size(p.chars)}"
        plt.title(title)
        plt.xlabel("seconds since run start" if self.by_time else "call index")
        if not total:
            plt.text("no LLM calls in this run", x=0.5, y=0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.refresh()
            return
        top = 0
        xs_all: list[float] = []
        for i, sc in enumerate(shown):
            if not sc.calls:
                continue
            xs = x_values(sc.calls, self.by_time, self.t0_ns)
            ys = [float(c.chars) for c in sc.calls]
            dx, dy = downsample(xs, ys, 2 * width)
            colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
            label = "run" if sc.step == RUN_GROUP else sc.step
            if len(dx) > 1:
                plt.plot(dx, dy, label=f"{label} chars", color=colour, marker="braille")
            else:
                plt.scatter(dx, dy, label=f"{label} chars", color=colour, marker="●")
            top = max(top, int(max(ys)))
            xs_all.extend(xs)
            tokens = [(x, float(c.input_tokens)) for x, c in zip(xs, sc.calls, strict=True) if c.input_tokens]
            if tokens:
                tx, ty = downsample([t[0] for t in tokens], [t[1] for t in tokens], 2 * width)
                plt.plot(tx, ty, label=f"{label} input tokens (recorded)", color=colour, marker="dot", yside="right")
            for x, _gid, saved in sc.compactions:
                cx = self._compaction_x(sc, x)
                plt.vline(cx, YELLOW if saved >= 0 else RED)
            if sc.masking_from is not None:
                mx = xs[sc.masking_from - 1]
                plt.vline(mx, BLUE)
        off_scale = []
        if self.soft_cap is not None and self.soft_cap <= top * 2.5:
            plt.hline(self.soft_cap, ORANGE)
            top = max(top, self.soft_cap)
        elif self.soft_cap is not None:
            off_scale.append(f"soft cap {format_size(self.soft_cap)}")
        if self.hard_cap is not None and self.hard_cap <= top * 1.6:
            plt.hline(self.hard_cap, RED)
            top = max(top, self.hard_cap)
        elif self.hard_cap is not None:
            off_scale.append(f"hard cap {format_size(self.hard_cap)}")
        masked = [sc for sc in shown if sc.masking_from is not None]
        if masked:
            how = "rebuilt" if all(sc.masking_exact for sc in masked) else "est. from W"
            title += f" · masking from #{masked[0].masking_from} ({how})"
        if off_scale:
            title += f" · off scale: {', '.join(off_scale)}"
        plt.title(title)
        plt.ylim(0, top * 1.05 if top else 1)
        if self.picked is not None:
            px = self._x_of(self.picked)
            if px is not None:
                plt.vline(px, GREY)
        self.refresh()

    def _x_of(self, call: CallPoint) -> float | None:
        return (call.ns - self.t0_ns) / 1e9 if self.by_time else float(call.index)

    def _compaction_x(self, sc: StepCalls, x: float) -> float:
        if not self.by_time:
            return x
        i = int(x)  # compaction came after call i
        calls = sc.calls
        if 0 < i < len(calls):
            return ((calls[i - 1].ns + calls[i].ns) / 2 - self.t0_ns) / 1e9
        return (calls[-1].ns - self.t0_ns) / 1e9 if calls else 0.0

    def legend(self) -> str:
        parts = ["braille: approx_context_chars", "dots: recorded input tokens (right axis)"]
        if self.soft_cap is not None:
            parts.append(f"orange: soft cap {format_size(self.soft_cap)}")
        if self.hard_cap is not None:
            parts.append(f"red: hard cap {format_size(self.hard_cap)}")
        parts.append("yellow/red |: compaction (saved/grew)  blue |: masking starts  grey |: picked call")
        return "  ".join(parts)
