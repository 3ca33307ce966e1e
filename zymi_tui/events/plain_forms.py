"""A cheap exact test that a batch of ids and timestamps has the one form zymi writes, made on the
batch joined (a few passes in C, not a regular expression a value): lowercase or uppercase hyphenated
UUIDs, and `YYYY-MM-DDTHH:MM:SS.fZ` timestamps with 1 to 9 ASCII digits of fraction (checked a length at
a time: zymi leaves a fraction's trailing zeros out, so a batch holds a few values shorter than the rest).

Every value these accept, the envelope's patterns (`patterns.UUID_PATTERN`, `TIMESTAMP_PATTERN`) accept
too; a batch with any other value (an urn: or braced id, an offset, a timestamp of another length, a
digit outside ASCII, a newline) is refused, and its reader decodes it with the patterns instead."""

from __future__ import annotations

_HEX = b"0123456789abcdefABCDEF"
_DIGITS = b"0123456789"
_UUID_LEN = 36


def plain_uuids(values: list[str]) -> bool:
    """Whether every value is a hyphenated UUID (`8-4-4-4-12` hex digits, nothing else)."""
    n = len(values)
    if not n:
        return True
    joined = "\n".join(values)
    step = _UUID_LEN + 1
    if len(joined) != step * n - 1:
        return False
    data = joined.encode("utf-8", "surrogatepass")
    if len(data) != len(joined) or data.translate(None, _HEX) != b"----\n" * (n - 1) + b"----":
        return False  # another character, or not 4 hyphens and 1 separator a value
    # 4n hyphens and n-1 separators in all, each where it belongs: every other character is a hex digit
    dashes = "-" * n
    return joined[8::step] == joined[13::step] == joined[18::step] == joined[23::step] == dashes and (
        n == 1 or joined[_UUID_LEN::step] == "\n" * (n - 1)
    )


def plain_timestamps(values: list[str]) -> bool:
    """Whether every value is `YYYY-MM-DDTHH:MM:SS.` then 1 to 9 digits and `Z` (the ranges of the
    fields are not checked here): the values of each length checked together."""
    n = len(values)
    if not n:
        return True
    width = len(values[0])
    joined = "".join(values)
    if len(joined) == width * n and _one_width(joined, width, n):
        return True
    widths: dict[int, list[str]] = {}
    for v in values:
        widths.setdefault(len(v), []).append(v)
    if len(widths) == 1:  # (one length, refused above)
        return False
    return all(_one_width("".join(same), w, len(same)) for w, same in widths.items())


def _one_width(joined: str, width: int, n: int) -> bool:
    """Whether `joined` is `n` plain timestamps of `width` characters each."""
    if not 22 <= width <= 30 or len(joined) != width * n:
        return False
    data = joined.encode("utf-8", "surrogatepass")
    if len(data) != len(joined) or data.translate(None, _DIGITS) != b"--T::.Z" * n:
        return False  # another character, or not the 7 marks a value
    # 7n marks in all, each where it belongs: every other character is an ASCII digit
    return (
        joined[4::width] == joined[7::width] == "-" * n
        and joined[10::width] == "T" * n
        and joined[13::width] == joined[16::width] == ":" * n
        and joined[19::width] == "." * n
        and joined[width - 1 :: width] == "Z" * n
    )
