"""A shell word as bash would expand it, against the real tree: what a command will really name.

Only what can be known before the command runs is expanded: `~` and `~/…`, `$HOME` / `${HOME}`, quotes
and backslashes removed, and unquoted globs (`*`, `?`, `[…]`, `[!…]`, `[^…]`) matched against the files
there now, with bash's defaults (a leading dot is matched only by a pattern's leading dot; a pattern
that matches nothing stays as written). A word whose value depends on the run (another variable,
`$(…)`, backticks, `~user`, brace expansion `{a,b}` / `{1..3}`, a POSIX class `[[:alpha:]]` in a
glob) is not guessed: `expand` returns None
and the caller asks.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Callable
from pathlib import Path

MAX_MATCHES = 5000  # a glob matching more than this is not checked file by file: the caller asks
_GLOB = set("*?[")
_NAME = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class Unknown(Exception):
    """The word's value is only known when it runs."""


def home() -> str:
    return os.environ.get("HOME") or str(Path("~").expanduser())


def _escape(text: str) -> str:
    return "".join(f"[{c}]" if c in _GLOB else c for c in text)


def _parameter(raw: str, i: int) -> tuple[str, int]:
    """The value of the parameter at `raw[i] == "$"` and the index after it (only HOME is known)."""
    if raw[i + 1 : i + 2] == "{":
        end = raw.find("}", i + 2)
        name = raw[i + 2 : end] if end > 0 else ""
        after = end + 1
    else:
        j = i + 1
        while j < len(raw) and raw[j] in _NAME:
            j += 1
        name, after = raw[i + 1 : j], j
    if name != "HOME":
        raise Unknown(raw)
    return home(), after


def _braces(raw: str, i: int) -> bool:
    """An unquoted `{` opening a brace expansion (`{a,b}`, `{1..3}`), not `{}` or a lone brace."""
    end = raw.find("}", i)
    inner = raw[i + 1 : end] if end > 0 else ""
    return "," in inner or ".." in inner


def pattern(raw: str) -> tuple[str, str, bool]:
    """(glob pattern with quoted characters escaped, the literal word, whether it globs) of one word's
    source text. Raises Unknown for what only the run can tell."""
    pat: list[str] = []
    lit: list[str] = []
    globs = False

    def add(text: str, quoted: bool) -> None:
        pat.append(_escape(text) if quoted else text)
        lit.append(text)

    i = 0
    if raw == "~" or raw.startswith("~/"):
        add(home(), True)
        i = 1
    elif raw.startswith("~"):
        raise Unknown(raw)
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            add(raw[i + 1 : i + 2], True)
            i += 2
        elif c == "'":
            end = raw.find("'", i + 1)
            end = len(raw) if end < 0 else end
            add(raw[i + 1 : end], True)
            i = end + 1
        elif c == '"':
            i = _double_quoted(raw, i + 1, add)
        elif c == "$" and raw[i + 1 : i + 2] == "'":
            raise Unknown(raw)  # $'…': ANSI-C quoting
        elif c == "$" and i + 1 < len(raw) and (raw[i + 1] in _NAME or raw[i + 1] in "{(@*#?$!-"):
            value, i = _parameter(raw, i)
            add(value, True)
        elif c == "`" or (c == "{" and _braces(raw, i)):
            raise Unknown(raw)
        else:
            if c in _GLOB:
                globs = True
                if c == "[" and any(t in raw[i + 1 :] for t in ("[:", "[=", "[.")):
                    raise Unknown(raw)  # a POSIX class (`[[:alpha:]]`): bash knows it, Python's glob does not
                if c == "[" and raw[i + 1 : i + 2] == "^":
                    pat.append("[!")
                    lit.append("[^")
                    i += 2
                    continue
            pat.append(c)
            lit.append(c)
            i += 1
    return "".join(pat), "".join(lit), globs


def _double_quoted(raw: str, i: int, add: Callable[[str, bool], None]) -> int:
    """Add the inside of `"…"` from `raw[i]`; the index after the closing quote."""
    while i < len(raw) and raw[i] != '"':
        c = raw[i]
        if c == "\\" and raw[i + 1 : i + 2] in ('"', "\\", "$", "`"):
            add(raw[i + 1], True)
            i += 2
        elif c == "`" or (c == "$" and raw[i + 1 : i + 2] == "("):
            raise Unknown(raw)
        elif c == "$" and i + 1 < len(raw) and (raw[i + 1] in _NAME or raw[i + 1] in "{@*#?$!-"):
            value, i = _parameter(raw, i)
            add(value, True)
        else:
            add(c, True)
            i += 1
    return i + 1


def expand(raw: str, cwd: Path) -> list[str] | None:
    """The words bash makes of `raw` run in `cwd` (paths as written: relative to `cwd` or absolute);
    None when only the run can tell, or when a glob matches more than MAX_MATCHES names."""
    try:
        pat, lit, globs = pattern(raw)
    except Unknown:
        return None
    if not globs:
        return [lit]
    found = list(itertools.islice(glob.iglob(pat, root_dir=None if pat.startswith("/") else cwd), MAX_MATCHES + 1))
    if len(found) > MAX_MATCHES:
        return None
    return sorted(found) or [lit]
