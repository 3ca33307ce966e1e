"""zymi's `--raw` lines for a page of rows, made in msgspec's C loops where the page allows it.

`row_envelope.with_sequence` writes a row's stored text with its real sequence for the `0` it holds,
after `checked_stream_id` has checked its envelope: two Python calls per row, most of a listing's
time. For a page of rows zymi wrote, the same lines come from two C calls: the page's stored texts
decoded at once (`decode_lines`), then encoded again with the real sequences (`encode_lines`). That is
byte for byte the stored text only where the text is exactly what msgspec writes of it (zymi's field
order, no space, the same escapes, no field msgspec does not know, a stored sequence of 0): so the
page is first encoded as it was decoded and compared with its stored text, all at once. Any page
where anything differs (or fails to decode, or holds a row whose columns are not of zymi's types) is
answered None: its rows go through `with_sequence` one by one, as before.

The envelope checks are `checked_stream_id`'s: UUIDs in the forms it reads fast (hyphenated; the
others fall back), an RFC 3339 timestamp whose fields are in range, the fields' types.
"""

from __future__ import annotations

import operator
import re
from binascii import unhexlify
from datetime import datetime
from itertools import compress
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec

from zymi_tui.events.kinds import Event

if TYPE_CHECKING:  # the partner process (`raw_pair`) imports this module: no reader module for it
    from zymi_tui.events.store import RawRow, Utf8Row


@runtime_checkable
class Utf8Reader(Protocol):
    """A reader that can return rows with their `data` as bytes (the SQLite reader)."""

    async def read_utf8_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> tuple[list[Utf8Row], int]: ...


class _Kind(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    data: msgspec.Raw


# `kinds.Event` in the order zymi writes its fields, each one required, the ids and time left as text
_AS_TEXT: dict[str, Any] = {"id": str, "timestamp": str, "kind": _Kind, "correlation_id": str | None,
                            "causation_id": str | None}  # fmt: skip
_Line: Any = msgspec.defstruct(
    "_Line",
    [(f.name, _AS_TEXT.get(f.name, f.type)) for f in msgspec.structs.fields(Event)],
    forbid_unknown_fields=True,
    gc=False,
)


_DECODER = msgspec.json.Decoder(_Line)
_ENCODER = msgspec.json.Encoder()
_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError)
# a stream id that `with_sequence` would not find unescaped in the text (its line is written another way)
_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
# where a hyphenated UUID (36 characters) has its hyphens; zymi's timestamps (`2026-12-02T16:44:14Z`,
# with 3, 6 or 9 digits of fraction where they are not zeros) their separators
_UUID_MARKS = ((8, "-"), (13, "-"), (18, "-"), (23, "-"))
_TIME_MARKS = ((4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"))  # then `.` (with a fraction) and `Z`
_TIME_DIGITS = {20: 14, 24: 17, 27: 20, 30: 23}  # a timestamp's length: its digits
_MARKS = b"-T:.Z\n"
_day_time = operator.itemgetter(slice(0, 19))


def _fixed_form(values: list[str], width: int, marks: tuple[tuple[int, str], ...]) -> str | None:
    """`values` joined (one a line), when each is `width` characters with `marks` in place; else None."""
    n = len(values)
    joined = "\n".join(values)
    stride = width + 1
    if len(joined) != stride * n - 1 or joined.count("\n") != n - 1 or joined[width::stride] != "\n" * (n - 1):
        return None
    if any(joined[at::stride] != mark * n for at, mark in marks):
        return None
    return joined


def _uuids_hold(values: list[str]) -> bool:
    """Every value a hyphenated UUID (the other forms zymi reads are left to the row-at-a-time check)."""
    if not values:
        return True
    joined = _fixed_form(values, 36, _UUID_MARKS)
    if joined is None or not joined.isascii():
        return False
    # hyphens and line breaks are where `_fixed_form` checked them: what is left must be 32 hex digits each
    digits = joined.encode().translate(None, b"-\n")
    try:  # unhexlify, unlike fromhex, skips nothing: any other character is an error
        return len(digits) == 32 * len(values) and len(unhexlify(digits)) == 16 * len(values)
    except ValueError:  # binascii.Error
        return False


def _timestamps_hold(values: list[str]) -> bool:
    """Every value in a form zymi writes timestamps in (UTC, `Z`, 0, 3, 6 or 9 digits of fraction) with
    its fields in range, as `checked_stream_id` reads them."""
    widths = set(map(len, values))
    for width in widths:
        if width not in _TIME_DIGITS:
            return False
        same = values if len(widths) == 1 else [v for v in values if len(v) == width]
        marks = (*_TIME_MARKS, (width - 1, "Z")) + (((19, "."),) if width > 20 else ())
        joined = _fixed_form(same, width, marks)
        if joined is None:
            return False
        if not joined.isascii():
            return False
        digits = joined.encode().translate(None, _MARKS)  # bytes: isdigit reads ASCII only
        if not (digits.isdigit() and len(digits) == _TIME_DIGITS[width] * len(same)):
            return False
    when = datetime.fromisoformat
    for day_time in set(map(_day_time, values)):
        when(day_time)  # ValueError when a field is out of range (month 13, hour 25 ...)
    return True


def page_lines(rows: list[RawRow] | list[Utf8Row]) -> bytes | None:
    """The `--raw` lines of `rows` (each ending with a newline, UTF-8), or None when the page must be
    written a row at a time (see the module's note). The stored texts may be given as read (str) or as
    their UTF-8 bytes (`Utf8Row`, read so from SQLite: no text object is made for them)."""
    if not rows:
        return b""
    try:
        stream_ids = [r[1] for r in rows]
        if not _plain_stream_ids(stream_ids):
            return None
        stored = _joined_utf8([r[3] for r in rows])
        envelopes = _DECODER.decode_lines(stored)
        if len(envelopes) != len(rows):
            return None
        # the page's text is exactly what msgspec writes of it (one newline more), compared as UTF-8
        written = _ENCODER.encode_lines(envelopes)
        if len(written) != len(stored) + 1 or not written.startswith(stored):
            return None
        del written  # a page's copy less at the peak, before the page is written again below
        sequences = [r[2] for r in rows]
        if (
            any(map(_sequence, envelopes))  # a stored sequence that is not 0
            or set(map(type, sequences)) != {int}
            or list(map(_stream_id, envelopes)) != stream_ids
            or not _uuids_hold(_uuids_of(envelopes))
            or not _timestamps_hold(list(map(_timestamp, envelopes)))
        ):
            return None
        for env, seq in zip(envelopes, sequences, strict=True):
            env.sequence = seq
        return _ENCODER.encode_lines(envelopes)
    except (*_DECODE_ERRORS, TypeError):  # TypeError: a column that is not text (a tampered row)
        return None


def _uuids_of(envelopes: list[Any]) -> list[str]:
    """The ids, then the correlation and causation ids that are not null, of a page's envelopes."""
    ids = list(map(_id, envelopes))
    ids += [c for c in map(_correlation, envelopes) if c is not None]
    ids += [c for c in map(_causation, envelopes) if c is not None]
    return ids


def _plain_stream_ids(stream_ids: list[str]) -> bool:
    """Every stream id text that `with_sequence` finds unescaped in a row's text (no quote, backslash,
    control or line separator): printable text without `"` or `\\` is (the other printable-but-rare cases
    go to the pattern)."""
    if set(map(type, stream_ids)) != {str}:
        return False
    joined = "".join(set(stream_ids))  # a stream's rows share its id: each distinct one checked once
    if joined.isprintable():
        return '"' not in joined and "\\" not in joined
    return _ESCAPED.search(joined) is None and not _has_surrogate(joined)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _joined_utf8(texts: list[Any]) -> bytes:
    """The stored texts one a line as UTF-8; ValueError where one is not valid UTF-8, TypeError where
    one is not text."""
    if type(texts[0]) is bytes:
        joined = b"\n".join(texts)  # TypeError when a row's is not bytes
        if not joined.isascii():  # the rows that are not ASCII, a line break apart, decoded: UnicodeDecodeError
            b"\n".join(compress(texts, map(operator.not_, map(bytes.isascii, texts)))).decode()  # (a ValueError)
        return joined
    return "\n".join(texts).encode()  # TypeError: not text; UnicodeEncodeError: a surrogate


_id, _stream_id, _sequence, _timestamp = (operator.attrgetter(f) for f in ("id", "stream_id", "sequence", "timestamp"))
_correlation, _causation = operator.attrgetter("correlation_id"), operator.attrgetter("causation_id")


class Utf8Pages:
    """`--raw` pages made from rows read with their `data` as bytes (`SqliteReader.read_utf8_rows`): no
    text object per row. A page `page_lines` declines is answered None: the caller reads it again as
    before (`read_rows`, whose checks report bad rows). A store whose pages are often declined (another
    writer's layout) stops being read twice: past `MAX_DECLINED` of the pages asked, every answer is None."""

    MAX_DECLINED = 0.125

    def __init__(self, reader: Utf8Reader) -> None:
        self.reader, self.asked, self.declined = reader, 0, 0

    @classmethod
    def of(cls, reader: object) -> Utf8Pages | None:
        return cls(reader) if isinstance(reader, Utf8Reader) else None

    async def page(
        self, after_global_id: int, limit: int, stream_id: str | None, tag: str | None
    ) -> tuple[bytes, int, int] | None:
        """(the lines, the last global id read, the rows written) of the next page, or None."""
        if self.declined > 2 + self.MAX_DECLINED * self.asked:
            return None
        self.asked += 1
        rows, last = await self.reader.read_utf8_rows(after_global_id, limit, stream_id=stream_id, tag=tag)
        made = page_lines(rows)
        if made is None:
            self.declined += 1
            return None
        return made, last, len(rows)
