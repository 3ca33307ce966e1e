"""Regular expressions compiled ahead of time, put in `re`'s own cache as the process starts.

A `run` compiles ~170 regular expressions (argparse, gettext, textwrap, PyYAML's resolvers, platform
through msgspec's uuid, logging through asyncio, the engine's path rules): ~50 M instructions of `re`'s
compiler, written in Python, a quarter of zymi's whole run. What the compiler makes of a pattern is a
list of integers for the C matcher (`_sre.compile`), fixed by the pattern's text, its flags and the
Python that compiled it. `scripts/regex_cache.py` records the patterns such a run compiles and stores
their compiled form in `data/regex_cache.marshal`, with the Python it was made by; `seed()` hands each
to `_sre.compile` and puts the result in `re`'s cache under the key `re.compile` looks up, so the
pattern is not compiled again. The result is the very pattern object `re.compile` would make (a pattern
compares equal only with the same code: tests/test_regex_cache.py). For another Python, or a `re`
without that cache, nothing is seeded and every pattern compiles as it always did.
"""

from __future__ import annotations

import marshal
import os
import re
import sys
from typing import Any

FILE = "regex_cache.marshal"


def data_path() -> str:
    return os.path.join(os.path.dirname(__file__), "data", FILE)  # not pathlib: this runs before any command


def python_key() -> tuple[str, int, int, int]:
    """What the compiled form depends on: the Python (its `re` compiler and Unicode tables) and `_sre`."""
    import _sre  # type: ignore[import-not-found]

    return (sys.version, _sre.MAGIC, _sre.CODESIZE, sys.maxunicode)


def compiled_form(pattern: str | bytes, flags: int) -> tuple[Any, ...]:
    """What `re._compiler.compile(pattern, flags)` hands `_sre.compile`, as `seed` stores it:
    (pattern, flags asked, flags compiled, code, groups, groupindex, indexgroup)."""
    parsed = re._parser.parse(pattern, flags)  # type: ignore[attr-defined]
    code = re._compiler._code(parsed, flags)  # type: ignore[attr-defined]
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    ints = [int(op) for op in code]  # opcodes are int subclasses (named): stored as plain ints
    final = int(flags | parsed.state.flags)
    return (pattern, flags, final, ints, parsed.state.groups - 1, groupindex, tuple(indexgroup))


def seed() -> int:
    """The stored patterns put in `re`'s cache (those not in it already); how many were put."""
    cache = getattr(re, "_cache", None)
    maximum = getattr(re, "_MAXCACHE", 0)
    if not isinstance(cache, dict):
        return 0
    try:
        import _sre

        with open(data_path(), "rb") as f:
            stored = marshal.loads(f.read())  # read whole: `marshal.load` reads a file object piece by piece
        if stored["python"] != python_key():
            return 0
        put = 0
        for pattern, asked, flags, code, groups, groupindex, indexgroup in stored["patterns"]:
            key = (type(pattern), pattern, asked)
            if key in cache or len(cache) >= maximum:
                continue
            cache[key] = _sre.compile(pattern, flags, code, groups, groupindex, indexgroup)
            put += 1
    except Exception:  # a missing or foreign file: every pattern compiles as usual
        return 0
    return put
