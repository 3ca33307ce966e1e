"""The knob editor's state: the form, the recorded calls and the running what-if's, the picked call;
the base of its layers (drawing, what-if, then the screen in editor.py)."""

from __future__ import annotations

from pathlib import Path

from zymi_tui.context.knobs import PROFILES, ContextKnobs, KnobError, user_profiles
from zymi_tui.events.store import EventReader
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.tui.actions import ActionScreen
from zymi_tui.tui.tuning.collector import EditCollector
from zymi_tui.tui.tuning.memory_reader import MemoryReader
from zymi_tui.tui.tuning.model import CallDiff, Curve, KnobForm
from zymi_tui.tui.tuning.whatif import StreamWhatIf

RECORDED = "recorded"
MAX_ROWS = 120  # rows of the message tables (a long stream has thousands of messages)
Row = tuple[str, str, str, str, str, str, str]  # a diff table row, as display text (`clean`)
DIFF_LABELS = ("change", "layer", "seq", "role", "bytes", "Δ", "why")
STATUS_STYLE = {"added": "green", "dropped": "red", "compacted": "magenta", "masked": "yellow",
                "unmasked": "cyan", "changed": "blue"}  # fmt: skip


class EditorState(ActionScreen):
    """What the knob editor holds, and the agent calls and picked call it reads them by."""

    def __init__(
        self,
        reader: EventReader,
        stream_id: str,
        *,
        project: Path | None,
        sequence: int | None = None,
        knobs: ContextKnobs | None = None,  # opened with these knobs applied (an advice's recommendation)
    ):
        super().__init__()
        self.reader, self.stream_id, self.project, self.want_seq = reader, stream_id, project, sequence
        self.initial = knobs
        self.recorded = recorded_knobs(project)
        self.form = KnobForm(self.recorded)
        self.memory: MemoryReader | None = None
        self.whatif: StreamWhatIf | None = None  # the exact what-if, re-run on every edit
        self.partial: list[CallContext] | None = None  # the calls of the running what-if so far
        self.recorded_calls: list[CallContext] = []
        self.what_if_calls: list[CallContext] | None = None
        self.diff: CallDiff | None = None
        self.picked = 0  # index into the agent calls
        self.last_ms: float | None = None
        self.started = 0.0
        self.redraw_ms: float | None = None  # edit -> exact what-if drawn (curve included)
        self.picked_ms: float | None = None  # edit -> the picked call's exact what-if drawn
        self.pick_s: float | None = None  # the last what-if's time to the picked call (None: not known yet)
        self.diff_knobs: ContextKnobs | None = None  # the knobs `diff` was made under
        self.pending = False  # the exact what-if of the stream is on its way
        self.curve: Curve | None = None
        self._syncing = False
        self.errors_due = False  # the knobs' errors and state are to be drawn with the summary
        self._agents: dict[int, tuple[list[CallContext], int, list[CallContext]]] = {}  # see agent_calls
        self.drawn: tuple[CallDiff | None, int] | None = None  # the diff the table shows, for the call picked
        self.collector = EditCollector(self.set_timer)  # the cyclic collector held around each edit
        self.profiles: dict[str, ContextKnobs] = dict(PROFILES)
        try:
            self.profiles.update(user_profiles())
        except KnobError as e:
            self.profile_error = str(e)
        else:
            self.profile_error = ""

    def agent_calls(self, calls: list[CallContext]) -> list[CallContext]:
        """The agent calls among `calls` (remembered for the last three lists asked, by identity and
        length: the recorded calls, the what-if's and the running one's are asked for on every draw,
        thousands of rows on a long stream)."""
        if not calls:
            return []  # (not remembered: an empty list asked for would push a long one out)
        hit = self._agents.get(id(calls))
        if hit is None or hit[0] is not calls or hit[1] != len(calls):
            if len(self._agents) > 2:  # the oldest asked goes (the recorded calls are asked on every draw)
                self._agents.pop(next(iter(self._agents)))
            agents = [c for c in calls if not c.is_compaction and not c.hard_cap_failure]
            hit = (calls, len(calls), agents)
        self._agents.pop(id(calls), None)
        self._agents[id(calls)] = hit  # last asked: kept longest
        return hit[2]

    def retire(self, *lists: list[CallContext] | None) -> None:
        """Lists of rows about to be replaced on screen: let go of after the next frame (freeing a
        what-if's thousands of rows takes the UI thread a while, which then came before the frame
        showing the new what-if, wherever the last reference went)."""
        kept = [calls for calls in lists if calls]
        if not kept:
            return

        def drop() -> None:
            for calls in kept:
                hit = self._agents.get(id(calls))
                if hit is not None and hit[0] is calls:
                    del self._agents[id(calls)]
            kept.clear()

        self.call_after_refresh(drop)

    def picked_call(self, calls: list[CallContext] | None) -> CallContext | None:
        if calls is None:
            return None
        agents = self.agent_calls(self.recorded_calls)
        if not agents:
            return None
        seq = agents[min(self.picked, len(agents) - 1)].sequence
        return next((c for c in reversed(self.agent_calls(calls)) if c.sequence == seq), None)

    @property
    def ready(self) -> bool:
        return self.whatif is not None
