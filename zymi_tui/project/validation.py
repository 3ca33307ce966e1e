"""Typed settings from YAML documents: msgspec structs, converted strictly, refused in words a person reads.

`convert(doc, Type)` makes a msgspec struct (declared with `Meta` constraints) from a parsed YAML document
the way zymi's serde loader reads it: an integer must be an integer (no `"12"`, no `2.0`, no `true`), a
bound is a bound, a plain scalar given where a string is wanted is that string (`name: 5` is `"5"`,
`name: null` is `"null"`) except inside a struct that declares `EXACT_TYPES` (one zymi reads through a
buffered enum: there a string must be a string), and unknown keys are ignored unless the struct forbids
them. A refusal is `Refused`: the key path where it happened (`defaults.max_tokens`, `steps[0].id`) and
what was wrong, one line.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

# read only when a document does not convert (patterns, compiled by `re` at their first use: a project that
# converts as written, as a `run`'s usually does, never compiles them)
_AT = r"^(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?$"
_STEP = r"\.([^.\[]+)|\[(\d+|\.\.\.)\]"
_KINDS = {
    "int": "an integer", "str": "a string", "float": "a number", "bool": "true or false",
    "null": "null", "array": "a list", "object": "a mapping", "str | null": "a string",
    "int | null": "an integer or null", "array | null": "a list", "object | null": "a mapping",
}  # fmt: skip
_MAX_RETRIES = 1000  # scalars read as strings, one retry each
_SHOWN = 60  # characters of a refused string shown


class Refused(ValueError):
    """A document that does not fit its type: where (a key path, "" for the whole document) and why."""

    def __init__(self, path: str, problem: str) -> None:
        path, problem = _one_line(path), _one_line(problem)
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path, self.problem = path, problem


def _one_line(text: str) -> str:
    """`text` with every unprintable character (a newline in a YAML key or value) escaped as Python would."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def convert(doc: Any, cls: type[T]) -> T:
    """`doc` as a `cls`, strictly (see the module's docstring); `Refused` when it does not fit."""
    made: T = _converted(doc, cls)
    return made


def check(doc: Any, kind: object) -> None:
    """Whether `doc` fits `kind`, any type msgspec knows (`Annotated[int, Meta(ge=0)] | None`); `Refused` if not."""
    _converted(doc, kind)


def _converted(doc: Any, cls: Any) -> Any:
    for _ in range(_MAX_RETRIES):
        try:
            return msgspec.convert(doc, cls, strict=True)
        except msgspec.ValidationError as e:
            parsed = re.match(_AT, str(e), re.S)
            assert parsed is not None  # the pattern matches any text
            steps = _steps(parsed["path"] or "")
            what = parsed["what"]
            stringified = _stringified(doc, steps, what, by_key=bool(parsed["key"])) if _as_text(cls, steps) else None
            if stringified is None:
                refused = _refusal(doc, _named(doc, cls, steps), what, by_key=bool(parsed["key"]))
                if re.match(r"Invalid (enum )?value ", what) and (accepted := _choices(cls, steps)):
                    refused = Refused(refused.path, f"{refused.problem}: {', '.join(accepted)}")
                raise refused from None
            doc = stringified
    raise Refused("", "too many values to read as strings")


def _along(cls: Any, steps: list[str | int]) -> tuple[list[type[msgspec.Struct]], Any]:
    """The structs a path goes through in `cls`, and the type at its end (None when the path leaves the
    declared types, into an `Any` or a plain mapping)."""
    kind: Any = cls
    passed: list[type[msgspec.Struct]] = []
    for step in steps:
        options = [a for a in typing.get_args(kind) if a is not type(None)] if _is_union(kind) else [kind]
        if isinstance(step, int) or step == "...":  # an item of a list, a value of a mapping
            containers = [o for o in options if typing.get_origin(o) in (list, dict)]
            if not containers:
                return passed, None
            kind = typing.get_args(containers[0])[-1]
            continue
        structs = [o for o in options if isinstance(o, type) and issubclass(o, msgspec.Struct)]
        passed += structs
        tags = [o.__struct_config__.tag for o in structs if o.__struct_config__.tag_field == step]
        if tags:
            return passed, typing.Literal[tuple(tags)]
        fields = {f.name: f.type for struct in structs for f in msgspec.structs.fields(struct)}
        if step not in fields:
            return passed, None
        kind = fields[step]
    return passed, kind


def _choices(cls: Any, steps: list[str | int]) -> list[str]:
    """The accepted values at `steps` of `cls` (a `Literal`, or the tags of a tagged union); [] if unknown."""
    kind = _along(cls, steps)[1]
    if _is_union(kind):
        kind = next((a for a in typing.get_args(kind) if typing.get_origin(a) is typing.Literal), kind)
    return [str(a) for a in typing.get_args(kind)] if typing.get_origin(kind) is typing.Literal else []


def _as_text(cls: Any, steps: list[str | int]) -> bool:
    """Whether zymi gives a plain scalar at `steps` to a string as its text: not inside a struct that says
    `EXACT_TYPES` (one zymi reads through a buffered enum, where types are exact)."""
    return not any(getattr(struct, "EXACT_TYPES", False) for struct in _along(cls, steps)[0])


def _is_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def _steps(path: str) -> list[str | int]:
    """`.a.b[0][...]` -> ["a", "b", 0, "..."]."""
    out: list[str | int] = []
    for name, index in re.findall(_STEP, path):
        out.append(name if name else (int(index) if index.isdigit() else index))
    return out


def _at(doc: Any, steps: list[str | int]) -> Any:
    for step in steps:
        doc = doc[step]
    return doc


def _scalar_text(value: Any) -> str | None:
    """How serde's YAML reader gives a plain scalar to a string field (None: not a scalar)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return None


def _stringified(doc: Any, steps: list[str | int], what: str, *, by_key: bool) -> Any:
    """`doc` with the scalar msgspec refused as a string replaced by its text, or None when it is no such."""
    if not re.match(
        r"Expected `str`, got `(int|float|bool|null)`$|Expected `str \| null`, got `(int|float|bool)`$", what
    ):
        return None
    if "..." in steps[:-1]:
        return None
    if steps and steps[-1] == "...":  # a value of a mapping of strings: msgspec does not say which one
        mapping = _at(doc, steps[:-1])
        fixed = {k: v if _scalar_text(v) is None else _scalar_text(v) for k, v in mapping.items()}
        return _replaced(doc, steps[:-1], fixed)
    if by_key:  # a key of a mapping of strings
        mapping = _at(doc, steps)
        return _replaced(doc, steps, {_scalar_text(k) or k: v for k, v in mapping.items()})
    text = _scalar_text(_at(doc, steps))
    return None if text is None else _replaced(doc, steps, text)


def _replaced(doc: Any, steps: list[str | int], value: Any) -> Any:
    """A copy of `doc` (only along the path) with the value at `steps` replaced."""
    if not steps:
        return value
    head, rest = steps[0], steps[1:]
    if isinstance(doc, list):
        assert isinstance(head, int)
        return [*doc[:head], _replaced(doc[head], rest, value), *doc[head + 1 :]]
    return {**doc, head: _replaced(doc[head], rest, value)}


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'the string "{value if len(value) <= _SHOWN else value[: _SHOWN - 1] + "…"}"'
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int | float):
        return f"{value!r}"
    return "a list" if isinstance(value, list) else "a mapping"


def _dotted(steps: list[str | int]) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _named(doc: Any, cls: Any, steps: list[str | int]) -> list[str | int]:
    """`steps` with each `...` (a value of a mapping: msgspec does not say which) replaced by the key of the
    first value that does not fit (the path stops there when none is found)."""
    named: list[str | int] = []
    for step in steps:
        if step != "...":
            named.append(step)
            continue
        mapping, kind = _at(doc, named), _along(cls, [*named, "..."])[1]
        bad = next((k for k, v in mapping.items() if kind is not None and not _fits(v, kind)), None)
        if bad is None:
            break
        named.append(bad)
    return named


def _fits(value: Any, kind: Any) -> bool:
    try:
        msgspec.convert(value, kind, strict=True)
    except msgspec.ValidationError:
        return False
    return True


def _refusal(doc: Any, steps: list[str | int], what: str, *, by_key: bool) -> Refused:
    """msgspec's message made one for a person: the key path, what was expected and what was given."""
    path = _dotted(steps)
    given = _at(doc, steps) if not by_key else None
    if m := re.match(r"Expected `([^`]+)`, got `[^`]+`$", what):
        if by_key:
            return Refused(path, f"every key must be {_KINDS.get(m[1], m[1])}")
        return Refused(path, f"expected {_KINDS.get(m[1], m[1])}, got {_shown(given)}")
    if m := re.match(r"Expected `([^`]+)` (.*)$", what):
        return Refused(path, f"must be {_KINDS.get(m[1], m[1])} {m[2]}, got {_shown(given)}")
    if m := re.match(r"Object missing required field `([^`]+)`$", what):
        return Refused(path, f"missing field `{m[1]}`")
    if m := re.match(r"Object contains unknown field `([^`]+)`$", what):
        return Refused(path, f"unknown key `{m[1]}`")
    if re.match(r"Invalid (enum )?value ", what):
        return Refused(path, f"{_shown(given)} is not one of the accepted values")
    return Refused(path, what)
