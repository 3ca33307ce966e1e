"""The message-life grid (dashboard `L`): one row per Layer C message of a step stream, one column
per agent call (downsampled to the width), each cell in full / masked / forgotten / compacted away
/ dropped by fresh / not yet there. The cursor shows the message at that call and why; `r` sorts
rows by rent (bytes x calls sent in full), `/` finds a text, `p` re-renders under another profile
(what-if) and marks the cells that change."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from zymi_tui.context.knobs import PROFILES, ContextKnobs
from zymi_tui.errors import UserError
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.call_context import SAME_TRAJECTORY, CallContext
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.life import COMPACTED, FORGOTTEN, FRESH, FULL, MASKED, NOT_YET, STATE_NAMES, MessageLife
from zymi_tui.replay.store_replay import make_replayers
from zymi_tui.tui.actions import Act, ActionScreen, Nav
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.store_job import with_reader

CELLS = {FULL: ("█", "green"), MASKED: ("▒", "yellow"), FORGOTTEN: ("░", "magenta"), COMPACTED: ("×", "red"),
         FRESH: ("~", "blue"), NOT_YET: ("·", "grey50")}  # fmt: skip
LABEL = 28  # columns for a row's label
PROFILE_CYCLE = ("recorded", *PROFILES)


class LifeLoaded(Message):
    def __init__(self, life: MessageLife | None, whatif: MessageLife | None, error: str | None) -> None:
        super().__init__()
        self.life, self.whatif, self.error = life, whatif, error


async def load_life(
    reader: EventReader, project: Path | None, stream: str, knobs: ContextKnobs | None
) -> tuple[MessageLife, MessageLife | None]:
    """The stream replayed under the recorded knobs and, given `knobs`, under those (one pass)."""
    replayers = make_replayers(project, [None] if knobs is None else [None, knobs])
    rows: list[list[CallContext]] = [[] for _ in replayers]
    async for se in replay_events(reader, [stream]):
        for i, rp in enumerate(replayers):
            rp.feed(se)
            rows[i] += rp.ready()
    for i, rp in enumerate(replayers):
        rows[i] += rp.flush()
    lives = [MessageLife.build(stream, r) for r in rows]
    return lives[0], lives[1] if len(lives) > 1 else None


class LifeScreen(ActionScreen):
    AUTO_FOCUS = None
    HELP_TITLE = "Message life"
    HELP_INTRO = (
        "One row per Layer C message of the step stream, one column per agent call (downsampled to the width). "
        "Each cell says whether the call sent the message in full, masked, forgotten, compacted away, dropped by "
        "context.mode: fresh, or not yet there; the cursor shows the message at that call and why. Under a "
        "what-if profile a cell that changes shows ◆ in the colour of its state under the what-if."
    )
    NAV = (
        Nav("↑ ↓  j k  PgUp PgDn", "move between messages"),
        Nav("← →  h l  Home End", "move between calls (first / last)"),
    )
    ACTIONS: ClassVar[tuple[Act, ...]] = (
        Act("escape", "close", "Back", "Close the grid and go back to the dashboard.", "back close"),
        Act("r", "sort", "Sort", "Rows by rent (bytes x calls sent in full, as `zymi-tui rent`) or by sequence.",
            "sort rent order"),
        Act("slash", "find", "Find", "Find a text in the stream's messages; the cursor goes to the first.",
            "find search text"),
        Act("n", "next_match", "Next", "The next message that matches the last find.", "next match find"),
        Act("p", "profile", "What-if", "Show the grid under the next profile (what-if); changed cells marked ◆.",
            "profile what-if knobs chat coding eval"),
    )  # fmt: skip
    MOVES: ClassVar[dict[str, tuple[int, int]]] = {
        "up": (-1, 0), "k": (-1, 0), "down": (1, 0), "j": (1, 0), "left": (0, -1), "h": (0, -1),
        "right": (0, 1), "l": (0, 1), "pageup": (-10, 0), "pagedown": (10, 0),
    }  # fmt: skip
    DEFAULT_CSS = """
    LifeScreen #life-head { height: auto; padding: 0 1; }
    LifeScreen #life-grid { height: 1fr; padding: 0 1; }
    LifeScreen #life-detail { height: auto; max-height: 8; padding: 0 1; border-top: solid $primary; }
    LifeScreen #life-find { dock: bottom; display: none; }
    """

    def __init__(self, store: StoreLocation, project: Path | None, stream: str) -> None:
        super().__init__()
        self.store, self.project, self.stream = store, project, stream
        self.life: MessageLife | None = None
        self.whatif: MessageLife | None = None
        self.profile = "recorded"
        self.order: list[int] = []
        self.by_rent = True
        self.row = 0  # index into `order`
        self.col = -1  # index into the visible columns (-1: the last)
        self.top = 0
        self.matches: list[int] = []
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="life-head")
            yield Static(id="life-grid")
            yield Static(id="life-detail")
        yield Input(placeholder="find text in the stream's messages (Enter)", id="life-find", disabled=True)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#life-grid").border_title = safe_text(f"Message life · {self.stream}", one_line=True)
        self.query_one("#life-head", Static).update(safe_text(f"replaying {self.stream}…"))
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        knobs = None if self.profile == "recorded" else PROFILES[self.profile]
        try:
            life, whatif = with_reader(self.store, lambda r: load_life(r, self.project, self.stream, knobs))
            self.post_message(LifeLoaded(life, whatif, None))
        except UserError as e:
            self.post_message(LifeLoaded(None, None, e.one_line()))

    def on_life_loaded(self, msg: LifeLoaded) -> None:
        self.error = msg.error
        if msg.life is not None:
            keep = self.life.rows[self.order[self.row]].key if self.life and self.order else None
            self.life, self.whatif = msg.life, msg.whatif
            self._reorder(keep)
        self.redraw()

    # -- geometry ---------------------------------------------------------------------------------
    def _columns(self) -> list[int]:
        if self.life is None:
            return []
        width = max(self.size.width - LABEL - 4, 4)
        return self.life.columns(width)

    def _grid_rows(self) -> int:
        return max(self.query_one("#life-grid").size.height, 3)

    def _reorder(self, keep: Hashable | None = None) -> None:
        assert self.life is not None
        n = len(self.life.rows)
        self.order = self.life.by_rent() if self.by_rent else list(range(n))
        at = self.life.row_at(keep) if keep is not None else None
        self.row = self.order.index(at) if at is not None and at in self.order else 0
        self.top = max(0, self.row - 2)

    def _whatif_state(self, row: int, call: int) -> int | None:
        """The cell's state under the what-if when it differs from the recorded one, else None."""
        assert self.life is not None
        if self.whatif is None:
            return None
        w_call = self.whatif.call_at(self.life.calls[call].sequence)
        if w_call is None:
            return None
        w_row = self.whatif.row_at(self.life.rows[row].key)
        state = NOT_YET if w_row is None else self.whatif.state(w_row, w_call)
        return None if state == self.life.state(row, call) else state

    # -- drawing ----------------------------------------------------------------------------------
    def redraw(self) -> None:
        head, grid = self.query_one("#life-head", Static), self.query_one("#life-grid", Static)
        if self.error is not None:
            head.update(safe_text(f"cannot replay {self.stream}: {self.error}", "red"))
            return
        life = self.life
        if life is None:
            return
        if not life.rows or not life.calls:
            head.update(safe_text(f"{self.stream}: no agent call with a rebuilt context (no project?)", "yellow"))
            return
        cols = self._columns()
        col = self.col if 0 <= self.col < len(cols) else len(cols) - 1
        self.col = col
        t = Text()
        t.append(f"{len(life.rows)} messages × {len(life.calls)} calls", style="bold")
        t.append(f" ({len(cols)} columns shown)" if len(cols) < len(life.calls) else "")
        t.append(f" · rows by {'rent (bytes × calls in full)' if self.by_rent else 'sequence'}")
        shape = life.shape(len(life.calls) - 1)
        t.append(f"\nrecorded knobs: {shape.knobs.describe()}")
        if self.whatif is not None:
            changed = sum(self._whatif_state(r, c) is not None for r in range(len(life.rows)) for c in cols)
            w = self.whatif.shape(len(self.whatif.calls) - 1).knobs
            t.append(f"\nwhat-if ({self.profile}): {w.describe()} · {changed} cell(s) change", style="bold cyan")
            t.append(" (◆, in the colour of the cell's state under the what-if)", style="cyan")
            t.append(f"  {SAME_TRAJECTORY}", style="dim")
        t.append("\n")
        for state, (ch, style) in CELLS.items():
            t.append(ch, style=style)
            t.append(f" {STATE_NAMES[state]}  ")
        head.update(t)
        height = self._grid_rows()
        self.row = max(0, min(self.row, len(self.order) - 1))
        if self.row < self.top:
            self.top = self.row
        elif self.row >= self.top + height:
            self.top = self.row - height + 1
        g = Text(no_wrap=True, overflow="crop")
        for line, pos in enumerate(range(self.top, min(self.top + height, len(self.order)))):
            r = self.order[pos]
            row = life.rows[r]
            name = clean(row.tool or row.role, one_line=True, max_cells=14)
            label = f"{row.seq:>5} {name}{' ' * (15 - cell_len(name))}{row.rent:>6}"
            g.append(label[:LABEL].ljust(LABEL), style="bold" if pos == self.row else "")
            for k, c in enumerate(cols):
                state = life.state(r, c)
                ch, style = CELLS[state]
                w_state = self._whatif_state(r, c)
                if w_state is not None:
                    ch, style = "◆", CELLS[w_state][1] + " bold"
                if pos == self.row and k == col:
                    style = "black on white"
                g.append(ch, style=style)
            if line < height - 1:
                g.append("\n")
        grid.update(g)
        self._detail(cols[col])

    def _detail(self, call: int) -> None:
        assert self.life is not None
        life = self.life
        r = self.order[self.row]
        row = life.rows[r]
        c = life.calls[call]
        t = Text()
        t.append(clean(f"seq {row.seq} {row.tool or row.role}", one_line=True), style="bold")
        t.append(f" · {row.bytes:,} bytes · rent {row.rent:,} ({row.calls_full} calls in full; "
                 f"{row.calls_masked} masked, {row.carried:,} bytes carried in all)")  # fmt: skip
        t.append("\n" + clean(f"at call {call + 1}/{len(life.calls)} (seq {c.sequence}): {life.why(r, call)}"))
        if self.whatif is not None:
            wr, wc = self.whatif.row_at(row.key), self.whatif.call_at(c.sequence)
            what = "no such call" if wc is None else "not in this list" if wr is None else self.whatif.why(wr, wc)
            t.append("\n" + clean(f"what-if ({self.profile}): {what}"), style="cyan")
        text = life.text_at(r, call)
        if text:
            t.append("\n" + clean(text.replace("\n", "⏎ "), max_cells=600), style="dim")
        if self.matches:
            t.append(f"\n{len(self.matches)} message(s) match; n = next", style="green")
        self.query_one("#life-detail", Static).update(t)

    def on_resize(self) -> None:
        self.redraw()

    # -- actions ----------------------------------------------------------------------------------
    def on_key(self, event: events.Key) -> None:
        if self.query_one("#life-find", Input).has_focus:
            return
        if event.key in self.MOVES:
            event.stop()
            self.action_move(*self.MOVES[event.key])
        elif event.key in ("home", "end"):
            event.stop()
            self.action_edge(-1 if event.key == "home" else 1)

    def action_move(self, drow: int, dcol: int) -> None:
        if self.life is None or not self.order:
            return
        self.row = max(0, min(len(self.order) - 1, self.row + drow))
        self.col = max(0, min(len(self._columns()) - 1, self.col + dcol))
        self.redraw()

    def action_edge(self, side: int) -> None:
        self.col = 0 if side < 0 else len(self._columns()) - 1
        self.redraw()

    def action_sort(self) -> None:
        if self.life is None or not self.order:
            return
        keep = self.life.rows[self.order[self.row]].key
        self.by_rent = not self.by_rent
        self._reorder(keep)
        self.redraw()

    def action_find(self) -> None:
        box = self.query_one("#life-find", Input)
        box.display, box.disabled = True, False
        box.focus()

    @on(Input.Submitted, "#life-find")
    def find_submitted(self, msg: Input.Submitted) -> None:
        msg.input.display, msg.input.disabled = False, True
        if self.life is None:
            return
        hits = set(self.life.find(msg.value)) if msg.value else set()
        self.matches = [pos for pos, r in enumerate(self.order) if r in hits]
        if self.matches:
            self.row = self.matches[0]
        else:
            self.notify(f"no message of {self.stream} contains {msg.value!r}")
        self.redraw()

    def action_next_match(self) -> None:
        later = [p for p in self.matches if p > self.row]
        if self.matches:
            self.row = later[0] if later else self.matches[0]
            self.redraw()

    def action_profile(self) -> None:
        """The next profile whose knobs differ from the recorded ones (else back to recorded)."""
        recorded = self.life.shape(len(self.life.calls) - 1).knobs if self.life and self.life.calls else None
        i = PROFILE_CYCLE.index(self.profile)
        for step in range(1, len(PROFILE_CYCLE) + 1):
            name = PROFILE_CYCLE[(i + step) % len(PROFILE_CYCLE)]
            if name == "recorded" or PROFILES[name] != recorded:
                break
        self.profile = name
        self.notify(f"message life under {self.profile}" + ("" if self.profile == "recorded" else " (what-if)"))
        self.load()

    def action_close(self) -> None:
        self.dismiss()
