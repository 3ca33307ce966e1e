"""Event timestamps: RFC 3339 text as zymi writes it, and nanoseconds since the epoch.

Plain functions, no model: the readers that never build a whole event (runs, replay, verify) use
them without loading the whole-event reader.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_timestamp(ns: int, *, zulu: bool = True) -> str:
    """RFC 3339 UTC like chrono's AutoSi: 0, 3, 6 or 9 fractional digits."""
    secs, nanos = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if nanos == 0:
        frac = ""
    elif nanos % 1_000_000 == 0:
        frac = f".{nanos // 1_000_000:03d}"
    elif nanos % 1_000 == 0:
        frac = f".{nanos // 1_000:06d}"
    else:
        frac = f".{nanos:09d}"
    return base + frac + ("Z" if zulu else "+00:00")


def parse_timestamp_ns(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp (`Z` or `±HH:MM`, 0-9 digits)."""
    if text.endswith(("Z", "z")):
        body, offset = text[:-1], 0
    else:
        body, sign, off = text[:-6], text[-6], text[-5:]
        if sign not in "+-" or off[2] != ":":
            raise ValueError(f"bad timestamp offset in {text!r}")
        offset = (int(off[:2]) * 60 + int(off[3:])) * 60 * (1 if sign == "+" else -1)
    if "." in body:
        main, frac = body.split(".", 1)
        nanos = int(frac.ljust(9, "0")[:9])
    else:
        main, nanos = body, 0
    if len(main) != 19 or main[10] not in "Tt":
        raise ValueError(f"bad timestamp {text!r}")
    day = datetime.fromisoformat(main[:10] + "T" + main[11:])  # range-checks every field
    secs = (day.toordinal() - _EPOCH_ORDINAL) * 86_400 + day.hour * 3600 + day.minute * 60 + day.second
    return (secs - offset) * 1_000_000_000 + nanos


_EPOCH_ORDINAL = datetime(1970, 1, 1).toordinal()
