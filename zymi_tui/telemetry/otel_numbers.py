"""The trace builder's side of `otel_rows.Numbered`: each numbered message's texts made once, here, from
its definition (the store's event it is, or its JSON text), and the numbers a call's `CallFacts` name
turned back into `gen_ai.input.messages`.

The texts are held as `Numbered` holds the numbers: each step stream's last window (the same streams,
let go in the same order: `OPEN_STREAMS` latest, or when the caller forgets one) and Layer A's and
the memory's messages (`HEADS_KEPT`, let go at the same count). An event a definition names is one
this process read lately (`RECENT_EVENTS`), else its message is read back from the store."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from zymi_tui.context.event_items import to_message
from zymi_tui.context.texts import StoreTexts
from zymi_tui.events.messages import MessageModel
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, RawRow
from zymi_tui.telemetry.message_cache import OPEN_STREAMS
from zymi_tui.telemetry.otel_content import input_messages, json_texts
from zymi_tui.telemetry.otel_inputs import Texts
from zymi_tui.telemetry.otel_rows import ADDED, LEFT, NEW, WHOLE, CallFacts, Definition
from zymi_tui.telemetry.shown_items import HEADS_KEPT

Window = tuple[list[int], list[Texts]]  # a step's last window: its messages' numbers and texts
RECENT_EVENTS = 1024  # step-stream events kept by (stream, sequence) for the definitions naming them (twice)
SOURCES_KEPT = 64  # step streams whose read-back texts are kept


class NumberedTexts:
    """`resolve(definitions, facts)`: the facts' numbers as their messages' texts (`make(message)`);
    `seen(event)`: every event, in order; `forget(stream)`: the caller let go of that step's window."""

    def __init__(
        self, make: Callable[[MessageModel], Texts], rows: Callable[[str, Sequence[int]], list[RawRow]]
    ) -> None:
        self.make, self.rows = make, rows
        self.windows: OrderedDict[str, Window] = OrderedDict()
        self.heads: dict[int, Texts] = {}
        self.pending: dict[int, Definition] = {}
        self.recent: dict[tuple[str, int], ReplayEvent] = {}  # the latest step-stream events
        self.older: dict[tuple[str, int], ReplayEvent] = {}  # the `RECENT_EVENTS` before them
        self.sources: dict[str, StoreTexts] = {}

    def seen(self, se: ReplayEvent) -> None:
        if STEP_MARK in se.stream_id:
            recent = self.recent
            recent[(se.stream_id, se.sequence)] = se
            if len(recent) >= RECENT_EVENTS:
                self.older, self.recent = recent, {}

    def _event(self, key: tuple[str, int]) -> ReplayEvent | None:
        return self.recent.get(key) or self.older.get(key)

    def forget(self, stream: str) -> None:
        self.windows.pop(stream, None)

    def resolve(self, definitions: list[Definition], facts: list[CallFacts]) -> None:
        wanted: dict[str, list[int]] = {}
        for d in definitions:
            self.pending[d[0]] = d
            if len(d) == 3 and self._event((d[1], d[2])) is None:
                wanted.setdefault(d[1], []).append(d[2])
        for stream, seqs in wanted.items():
            self._source(stream).prefetch(seqs)
        for f in facts:
            if isinstance(f.inputs, list):
                f.inputs = self._inputs(f)
        if self.pending:
            raise RuntimeError(f"{len(self.pending)} numbered messages no call named")

    def _inputs(self, f: CallFacts) -> object:
        if f.heads == WHOLE:
            return input_messages([json_texts(raw) for raw in f.inputs])
        head_numbers, moves = f.inputs
        heads = self.heads
        out = []
        for k in head_numbers:
            texts = heads.get(k)
            if texts is None:
                texts = self._made(k)
                if len(heads) >= HEADS_KEPT:
                    heads.clear()
                heads[k] = texts
            out.append(texts)
        window = self.windows.pop(f.stream, None) or ([], [])
        held: dict[int, Texts] = {}  # the texts of the window a new one is made from
        for move in moves:
            if move[0] == NEW:
                held, window = dict(zip(*window, strict=True)), ([], [])
            elif move[0] == ADDED:
                window[0].extend(move[1])
                window[1].extend([self._take(k, held, window) for k in move[1]])
            elif move[0] == LEFT:
                del window[0][: move[1]], window[1][: move[1]]
            else:
                for at, k in zip(move[1], move[2], strict=True):
                    window[1][at] = self._take(k, held, window)
                    window[0][at] = k
        self.windows[f.stream] = window
        if len(self.windows) > OPEN_STREAMS:
            self.windows.popitem(last=False)
        return input_messages(out + window[1])

    def _take(self, k: int, held: dict[int, Texts], window: Window) -> Texts:
        """The texts of number `k`: defined now, else held by the window made anew or this one."""
        if k in self.pending:
            return self._made(k)
        texts = held.get(k)
        if texts is None:
            texts = window[1][window[0].index(k)]  # (a ValueError: the caller named a message never defined)
        return texts

    def _made(self, k: int) -> Texts:
        d = self.pending.pop(k)
        if len(d) == 2:
            return json_texts(d[1])
        _, stream, seq = d
        se = self._event((stream, seq))
        m = to_message(se.kind) if se is not None else None
        return self.make(m if m is not None else self._source(stream).message(seq))

    def _source(self, stream: str) -> StoreTexts:
        src = self.sources.get(stream)
        if src is None:
            if len(self.sources) >= SOURCES_KEPT:
                self.sources.clear()
            src = self.sources[stream] = StoreTexts(self.rows, stream)
        return src
