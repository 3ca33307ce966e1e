"""Line-API lists (runs, events): only the visible lines are drawn, so 100,000 rows cost nothing."""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.color import Color, ColorParseError
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from zymi_tui.events.store import IndexRow
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.model import RunsModel, format_duration, format_size, local_time
from zymi_tui.tui.safe_text import clean
from zymi_tui.tui.state.event_detail import clock
from zymi_tui.tui.state.events import EventsModel, Header

KIND_COLOURS = {"success": "success", "failure": "error", "warning": "warning", "info": "primary",
                "highlight": "accent", "dim": "foreground-muted", "default": "foreground"}  # fmt: skip


class ThemedStyles:
    """Rich styles from the app's theme variables (re-read when the theme changes)."""

    def __init__(self, variables: dict[str, str]) -> None:
        background = Color.parse(variables.get("background", "#000000"))

        def colour(name: str) -> RichColor | None:
            try:
                parsed = Color.parse(variables.get(name, ""))
            except ColorParseError:
                return None
            return (background + parsed).rich_color  # blend any alpha onto the background

        self.kind = {key: Style(color=colour(var)) for key, var in KIND_COLOURS.items()}
        self.muted = Style(color=colour("foreground-muted"), dim=colour("foreground-muted") is None)
        self.bold = Style(bold=True)
        self.header = Style(color=colour("accent"), bold=True)
        self.mark = Style(color=colour("warning"), bold=True)


class CursorList(ScrollView, can_focus=True):
    """A scrollable list drawn line by line, with a cursor kept visible and mouse selection."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"cursorlist--cursor"}

    class Moved(Message):
        """The cursor moved (by key, mouse or programmatically)."""

        def __init__(self, sender: CursorList) -> None:
            super().__init__()
            self.sender = sender

        @property
        def control(self) -> CursorList:
            return self.sender

    _styles: ThemedStyles | None = None

    @property
    def styles_(self) -> ThemedStyles:
        if self._styles is None:
            self._styles = ThemedStyles(self.app.get_css_variables())
        return self._styles

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._styles = None
        self.refresh()

    # subclasses provide these
    def total_lines(self) -> int:
        raise NotImplementedError

    def cursor_span(self) -> tuple[int, int] | None:
        raise NotImplementedError

    def shift(self, delta: int) -> None:
        raise NotImplementedError

    def to_edge(self, end: bool) -> None:
        raise NotImplementedError

    def pick_line(self, y: int) -> None:
        raise NotImplementedError

    def draw(self, y: int, width: int, selected: bool) -> list[Segment]:
        raise NotImplementedError

    # shared behaviour
    def update_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.total_lines())
        self.refresh()

    def keep_cursor_visible(self) -> None:
        span = self.cursor_span()
        if span is None:
            return
        top, height = span
        view = max(self.scrollable_content_region.height, 1)
        y = round(self.scroll_y)
        if top < y:
            self.scroll_to(y=top, animate=False, immediate=True)
        elif top + min(height, view) > y + view:
            self.scroll_to(y=top + min(height, view) - view, animate=False, immediate=True)

    def reveal_cursor(self) -> None:
        """Scroll to the cursor once the new virtual size has been laid out."""
        self.call_after_refresh(self.keep_cursor_visible)

    def cursor_changed(self) -> None:
        self.keep_cursor_visible()
        self.refresh()
        self.post_message(self.Moved(self))

    def action_move(self, delta: int) -> None:
        self.shift(delta)
        self.cursor_changed()

    def action_page(self, direction: int) -> None:
        self.shift(direction * max(self.scrollable_content_region.height - 1, 1))
        self.cursor_changed()

    def action_edge(self, end: int) -> None:
        self.to_edge(bool(end))
        self.cursor_changed()

    def on_click(self, event: events.Click) -> None:
        self.pick_line(event.y + round(self.scroll_y))
        self.cursor_changed()

    def on_resize(self, _event: events.Resize) -> None:
        self.update_size()

    def _on_hide(self, event: events.Hide) -> None:
        # Textual blurs a focused widget when it is hidden, including while the whole screen is
        # laid out at size 0 during start-up; keep the focus then (the user has not moved it).
        if self.has_focus and self.screen.region.area == 0:
            event.prevent_default()

    problem: str | None = None

    def empty_text(self) -> str:
        return ""

    def show_problem(self, line: str) -> None:
        """What failed to load here, in place of the list (tui/failures.py)."""
        self.problem = clean(f"⚠ {line}", one_line=True)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self.problem is not None and y == 0:
            return Strip([Segment(" " + self.problem, self.styles_.kind["failure"])]).crop_extend(0, width, None)
        if self.total_lines() == 0:
            text = self.empty_text() if y == 0 else ""
            return Strip([Segment(" " + text, self.styles_.muted)]).crop_extend(0, width, None)
        line = y + round(self.scroll_y)
        span = self.cursor_span()
        selected = span is not None and span[0] == line
        segments = self.draw(line, width, selected) if line < self.total_lines() else []
        strip = Strip(segments).crop_extend(0, width, None)
        if selected:
            strip = strip.apply_style(self.get_component_rich_style("cursorlist--cursor"))
        return strip


def fit_cells(segments: list[Segment], width: int) -> list[Segment]:
    """The segments cut to `width` cells; a cut ends in "…", never mid-word without a mark ("15.7k messa")."""
    if sum(cell_len(seg.text) for seg in segments) <= width:
        return segments
    out: list[Segment] = []
    room = max(width - 1, 0)
    for seg in segments:
        if room <= 0:
            break
        text = seg.text
        if cell_len(text) > room:
            text = set_cell_size(text, room)
        out.append(Segment(text, seg.style))
        room -= cell_len(text)
    style = out[-1].style if out else None
    return [*out, Segment("…", style)]


class RunsList(CursorList):
    """Every run, newest first; chat turns indented under their stream."""

    def __init__(self, model: RunsModel, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.model = model
        self.cursor = 0

    def total_lines(self) -> int:
        return len(self.model.rows)

    def empty_text(self) -> str:
        if self.model.summaries:
            return "no run matches the search or status filter (/ to search, u for status)"
        return "no runs in this store yet: new runs appear here as they are written"

    def cursor_span(self) -> tuple[int, int] | None:
        return (self.cursor, 1) if self.model.rows else None

    def shift(self, delta: int) -> None:
        self.cursor = max(0, min(len(self.model.rows) - 1, self.cursor + delta))

    def to_edge(self, end: bool) -> None:
        self.cursor = max(len(self.model.rows) - 1, 0) if end else 0

    def pick_line(self, y: int) -> None:
        if 0 <= y < len(self.model.rows):
            self.cursor = y

    def draw(self, y: int, width: int, selected: bool) -> list[Segment]:
        row = self.model.rows[y]
        s = row.summary
        st = self.styles_
        colour = {"ok": st.kind["success"], "running": st.kind["warning"]}.get(s.status, st.kind["failure"])
        out = [Segment(" " if not selected else "»")]
        if row.is_turn:
            out.append(Segment(f"  └ turn {s.turn} ", st.muted))
        out.append(Segment(s.glyph + " ", colour))
        if row.broken_chain:
            out.append(Segment("⚠ ", st.kind["failure"]))
        narrow = width < 50  # the 80-column layout: the name, the peak and the prompt; time and duration below
        when = "" if narrow else f"{local_time(s.started_ns)} {format_duration(s.duration_ms):>8} "
        peak = f"{format_size(row.peak_chars):>7} "
        if not row.is_turn and row.turns > 1:  # a chat stream's header: its id, and its turns in the last column
            room = width - sum(cell_len(seg.text) for seg in out) - cell_len(when + peak) - 1
            out.append(Segment(clean(s.stream_id, one_line=True, max_cells=room) + " ", st.header))
        elif not row.is_turn:
            name = clean(s.pipeline, one_line=True, max_cells=self.model.name_cells)
            out.append(Segment(name + " " * (self.model.name_cells + 1 - cell_len(name)), st.bold))
        if when:
            out.append(Segment(when, st.muted))
        out.append(Segment(peak, st.kind["info"]))
        if row.is_turn or row.turns == 1:
            out.append(Segment(clean(s.prompt, one_line=True), st.muted))
        elif width - sum(cell_len(seg.text) for seg in out) >= len(count := f"{row.turns} turns"):  # or none of it
            out.append(Segment(f"{count} · " + clean(s.pipeline, one_line=True), st.muted))
        return fit_cells(out, width)
        return out

    @property
    def selected(self) -> int | None:
        return self.cursor if self.model.rows else None


class EventsList(CursorList):
    """The selected run's events, grouped by step; Enter expands the full payload in place."""

    def __init__(self, model: EventsModel, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.model = model

    def total_lines(self) -> int:
        return self.model.layout.line_count

    def empty_text(self) -> str:
        if self.model.rows:
            return "no event matches the filters (s: step, t: kinds, /: search; Esc clears the search)"
        return "no events for this selection"

    def cursor_span(self) -> tuple[int, int] | None:
        gid = self.model.cursor_gid
        return self.model.layout.span_of(gid) if gid is not None else None

    def shift(self, delta: int) -> None:
        self.model.move(delta)

    def to_edge(self, end: bool) -> None:
        if end:
            self.model.end()
        else:
            self.model.home()

    def pick_line(self, y: int) -> None:
        self.model.select_line(y)

    def on_resize(self, event: events.Resize) -> None:
        self.model.set_width(self.scrollable_content_region.width)
        super().on_resize(event)

    def watch_show_vertical_scrollbar(self, _shown: bool) -> None:
        """The scrollbar takes (or gives back) columns without a Resize: payloads wrap at the new width."""
        self.call_after_refresh(self._fit_width)

    def _fit_width(self) -> None:
        if self.model.width != self.scrollable_content_region.width:
            self.model.set_width(self.scrollable_content_region.width)
            self.update_size()

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if self.model.missing and not self._asked:
            self._asked = True  # once per frame: the rows this frame drew undecoded are read together
            self.call_after_refresh(self._ask_rows)
        return strip

    _asked = False

    def _ask_rows(self) -> None:
        self._asked = False
        if self.model.missing:
            self.post_message(self.NeedRows(self, sorted(self.model.missing)))

    class NeedRows(Message):
        """Rows of a long run were drawn before they were read: read them (and the rows around them)."""

        def __init__(self, sender: EventsList, gids: list[int]) -> None:
            super().__init__()
            self.sender = sender
            self.gids = gids

    def visible_gids(self, margin: int) -> list[int]:
        """The ids of the events on screen, and `margin` events above and below (read ahead of scrolling)."""
        layout = self.model.layout
        if not layout.items:
            return []
        top, bottom = round(self.scroll_y), max(layout.line_count - 1, 0)
        first, _ = layout.locate(min(top, bottom))
        last, _ = layout.locate(min(top + self.scrollable_content_region.height, bottom))
        lo, hi = max(first - margin, 0), min(last + margin + 1, len(layout.items))
        return [it[0] for it in layout.items[lo:hi] if not isinstance(it, Header)]

    def draw(self, y: int, width: int, selected: bool) -> list[Segment]:
        m, layout = self.model, self.model.layout
        if not layout.items:
            return []
        i, k = layout.locate(y)
        item = layout.items[i]
        st = self.styles_
        if isinstance(item, Header):
            return [Segment(clean(item.title, one_line=True) + " " + "─" * max(width, 0), st.header)]
        se = m.event(item[0])
        if se is None:  # a long run's row not read yet: its kind now, the whole line once read
            marker = "»" if selected else " "
            seq_kind = clean(f"#{item[2]} {m.tag_of(item) or ''}", one_line=True)  # store columns: terminal-safe
            if item[0] in m.unreadable:
                text = f"{marker}  ⚠ {seq_kind}: unreadable row {item[0]} (skipped)"
                return [Segment(text, st.kind["failure"])]
            return [Segment(f"{marker}  … {seq_kind}", st.muted)]
        if k > 0:
            lines = m.detail_lines(se)
            return [Segment("      "), Segment(lines[k - 1] if k - 1 < len(lines) else "", st.muted)]  # clean
        return self.event_line(item, se, selected)

    def event_line(self, row: IndexRow, se: StoredEvent, selected: bool) -> list[Segment]:
        m = self.model
        st = self.styles_
        line = m.line_of(se)
        style = st.kind.get(line.style, st.kind["default"])
        marker = "▾" if se.global_id in m.expanded else ("»" if selected else " ")
        out = [Segment(marker), Segment("  " * line.indent + line.icon + " ", style)]
        if m.is_marked(row):
            out.append(Segment("┃", st.mark))
        out.append(Segment(clock(se) + " ", st.muted))
        if not m.group_by_step:
            from zymi_tui.events.store import step_of

            step = step_of(se.event.stream_id)
            if step:
                out.append(Segment(clean(f"[{step}]", one_line=True) + " ", st.muted))
        out.append(Segment(clean(line.label, one_line=True), style + st.bold))
        out.append(Segment(" " + clean(line.detail, one_line=True, max_cells=500), st.muted))
        return out
