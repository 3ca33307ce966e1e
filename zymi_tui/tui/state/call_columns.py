"""A step's agent LLM calls, as the plot keeps them: one column of numbers per field.

A long run has one call every ~7 events (149,425 in long_1m); a `CallPoint` object a call, with its own
ints and its own copy of the stream id, held ~370 bytes. Here a call is eight numbers in 37 bytes (its stream
a byte's index into the step's few stream ids; its counts, id and sequence 4 bytes each until one does not fit;
its time and tokens 8) and a `CallPoint` is made when one is asked for; the plot reads the
columns it draws (`ns`, `chars`, `input_tokens`) without making any.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import overload

from zymi_tui.events.run_index import widened

NO_TOKENS = -(2**63)  # `input_tokens` unknown (no completion recorded, or no usage in it)
_COLUMNS = ("ns", "chars", "message_count", "iteration", "global_id", "stream", "sequence", "tokens")


@dataclass(frozen=True, slots=True)
class CallPoint:
    index: int  # 1-based agent-call index within its step stream
    ns: int
    chars: int
    message_count: int
    iteration: int
    global_id: int
    stream_id: str
    sequence: int
    input_tokens: int | None  # usage.input_tokens of the matching LlmCallCompleted (recorded)


class Prefix(Sequence[int]):
    """The first `n` values of a column another thread still appends to: read in place, not copied (the
    collector's columns grow behind it; a column a hostile value turned into a list is a new object)."""

    __slots__ = ("_base", "_n")

    def __init__(self, base: Sequence[int], n: int) -> None:
        self._base, self._n = base, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [self._base[k] for k in range(*i.indices(self._n))]
        j = i + self._n if i < 0 else i
        if not 0 <= j < self._n:
            raise IndexError("column index out of range")
        return self._base[j]

    def __iter__(self) -> Iterator[int]:
        return islice(self._base, self._n)

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        return self._base.index(value, start, self._n if stop is None else min(stop, self._n))


def read_in_place(column: Sequence[int]) -> Sequence[int]:
    """`column` to read by place at C speed: a `Prefix`'s base (its values below the prefix's length are the
    prefix's own), any other column itself."""
    return column._base if isinstance(column, Prefix) else column


class CallColumns(Sequence[CallPoint]):
    """A step's calls in the order they started (a call's `index` is its place, from 1). `prefix()`: the calls
    so far, sharing these columns (a fixed-length view), for another thread while this one is appended to."""

    __slots__ = (*_COLUMNS, "stream_ids", "_stream_code")

    ns: array[int] | list[int] | Prefix
    chars: array[int] | list[int] | Prefix
    message_count: array[int] | list[int] | Prefix
    iteration: array[int] | list[int] | Prefix
    global_id: array[int] | list[int] | Prefix
    stream: array[int] | list[int] | Prefix
    sequence: array[int] | list[int] | Prefix
    tokens: array[int] | list[int] | Prefix

    def __init__(self) -> None:
        # a value past a column's type makes it wider (to 64 bits: `widened`), one a hostile store puts past
        # 64 bits turns it into a list (`_put`)
        self.ns = array("q")
        self.chars = array("i")
        self.message_count = array("i")
        self.iteration = array("i")
        self.global_id = array("i")
        self.stream = array("B")
        self.sequence = array("i")
        self.tokens = array("q")
        self.stream_ids: list[str] = []
        self._stream_code: dict[str, int] = {}

    def append(self, ns: int, chars: int, messages: int, iteration: int, gid: int, stream: str, seq: int) -> int:
        """A call started (its tokens unknown until it completes); returns its index (from 1)."""
        code = self._stream_code.get(stream)
        if code is None:
            code = self._stream_code[stream] = len(self.stream_ids)
            self.stream_ids.append(stream)
        for name, value in zip(_COLUMNS, (ns, chars, messages, iteration, gid, code, seq, NO_TOKENS), strict=True):
            self._put(name, value)
        return len(self.ns)

    def _put(self, name: str, value: int) -> None:
        column = getattr(self, name)
        try:
            column.append(value)
        except OverflowError:
            try:
                column = widened(column, value)
            except OverflowError:
                column = [*column, value]
            setattr(self, name, column)

    def set_tokens(self, index: int, tokens: int | None) -> None:
        """The recorded input tokens of call `index` (from 1), when it completed."""
        value = NO_TOKENS if tokens is None else tokens
        assert not isinstance(self.tokens, Prefix), "a prefix is read, not written"
        try:
            self.tokens[index - 1] = value
        except OverflowError:
            self.tokens = list(self.tokens)
            self.tokens[index - 1] = value

    def index_of(self, gid: int) -> int | None:
        """The index (from 1) of the call whose event is `gid`, or None."""
        try:
            return self.global_id.index(gid) + 1
        except ValueError:
            return None

    def input_tokens(self) -> list[int | None]:
        """Each call's `input_tokens` (None where unknown)."""
        return [None if t == NO_TOKENS else t for t in self.tokens]

    def known_tokens(self) -> array[int]:
        """The places (from 0) of the calls whose input tokens are known and not 0 (4 bytes each)."""
        return array("i", (i for i, t in enumerate(self.tokens) if t and t != NO_TOKENS))

    def prefix(self) -> CallColumns:
        """The calls so far, reading these columns in place (no copy): handed to another thread while this
        one is still appended to (a call's tokens may be set in both once it completes)."""
        out = CallColumns.__new__(CallColumns)
        n = len(self)
        for name in _COLUMNS:
            setattr(out, name, Prefix(getattr(self, name), n))
        out.stream_ids, out._stream_code = self.stream_ids, {}  # stream codes below n are in the list already
        return out

    def copy(self) -> CallColumns:
        """A copy to hand to another thread while this one is still appended to."""
        out = CallColumns()
        for name in _COLUMNS:
            column = getattr(self, name)
            setattr(out, name, column[:])
        out.stream_ids, out._stream_code = list(self.stream_ids), dict(self._stream_code)
        return out

    def __len__(self) -> int:
        return len(self.ns)

    @overload
    def __getitem__(self, i: int) -> CallPoint: ...
    @overload
    def __getitem__(self, i: slice) -> list[CallPoint]: ...
    def __getitem__(self, i: int | slice) -> CallPoint | list[CallPoint]:
        if isinstance(i, slice):
            return [self._point(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError("call index out of range")
        return self._point(j)

    def _point(self, j: int) -> CallPoint:
        tokens = self.tokens[j]
        return CallPoint(j + 1, self.ns[j], self.chars[j], self.message_count[j], self.iteration[j],
                         self.global_id[j], self.stream_ids[self.stream[j]], self.sequence[j],
                         None if tokens == NO_TOKENS else tokens)  # fmt: skip

    def __iter__(self) -> Iterator[CallPoint]:
        return map(self._point, range(len(self)))

    def __contains__(self, call: object) -> bool:
        return isinstance(call, CallPoint) and 0 < call.index <= len(self) and self._point(call.index - 1) == call
