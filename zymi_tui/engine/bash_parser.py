"""bashlex, with its parse tables read from a file instead of built at every start.

bashlex 0.18 runs ply's LALR generator each time it is imported (`yacc.yacc()` in bashlex/parser.py:
~150 ms of CPU on an idle machine, 0.4 s on a loaded one), which the first shell command of every
`run` paid. The tables only depend on the grammar, so they are built once
(`scripts/bashlex_tables.py` writes `data/bashlex_tables.json`) and handed to bashlex's own parser
class. The file carries a fingerprint of the grammar it was built from (each rule function's name and
docstring, the tokens and the precedence); if the installed bashlex has another grammar, its own
generator runs as before. bashlex's fix-ups of the tables after `yacc()` returns run unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import json
import sys
import threading
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Loader

TABLES = "bashlex_tables.json"


def tables_path() -> Path:
    # beside the package's modules (not `importlib.resources`: its import, with tempfile and shutil, was
    # ~5 ms of every `run` before its first event)
    return Path(__file__).resolve().parent.parent / "data" / TABLES


def fingerprint(pdict: dict[str, Any]) -> str:
    """The grammar as ply reads it from a parser module's globals."""
    rules = sorted((k, v.__doc__ or "") for k, v in pdict.items() if k.startswith("p_") and callable(v))
    text = repr((rules, list(pdict.get("tokens") or ()), list(pdict.get("precedence") or ()), pdict.get("start")))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Production:
    """What bashlex's LRParser reads of a grammar rule."""

    def __init__(self, text: str, name: str, length: int, func: str | None) -> None:
        self.str, self.name, self.len, self.func = text, name, length, func
        self.callable: Any = None

    def bind(self, pdict: dict[str, Any]) -> None:
        if self.func:
            self.callable = pdict[self.func]


class _Tables:
    def __init__(self, data: dict[str, Any], pdict: dict[str, Any]) -> None:
        self.lr_action = _expand(data["action"])
        self.lr_goto = _expand(data["goto"])
        self.lr_productions = [_Production(*p) for p in data["productions"]]
        for p in self.lr_productions:
            p.bind(pdict)


def _expand(items: dict[str, list[list[int]]]) -> dict[int, dict[str, int]]:
    """ply's compact form ({symbol: [states, values]}) back to {state: {symbol: value}}."""
    out: dict[int, dict[str, int]] = {}
    for symbol, (states, values) in items.items():
        for state, value in zip(states, values, strict=True):
            out.setdefault(state, {})[symbol] = value
    return out


def compact(table: dict[int, dict[str, int]]) -> dict[str, list[list[int]]]:
    """{state: {symbol: value}} as {symbol: [states, values]} (what `_expand` reads)."""
    out: dict[str, list[list[int]]] = {}
    for state in sorted(table):
        for symbol, value in table[state].items():
            states, values = out.setdefault(symbol, [[], []])
            states.append(state)
            values.append(value)
    return out


def _read_tables() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(tables_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


class _YaccHook:
    """Loads `bashlex.yacc` as usual, then puts `replace(module)` in place of its `yacc()`: bashlex's
    package imports its parser (which calls `yacc.yacc()`) as soon as any part of it is imported, so the
    generator can only be swapped while its module is being loaded. A meta path finder and loader by
    its methods (`importlib.abc`'s bases would load importlib.resources, tempfile and shutil with it)."""

    def __init__(self, replace: Callable[[ModuleType], Callable[..., Any]]) -> None:
        self.replace = replace
        self.real: Loader | None = None  # the loader `PathFinder` found

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != "bashlex.yacc":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self.real, spec.loader = spec.loader, self  # type: ignore[assignment]  # a loader by its methods
        return spec

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        assert self.real is not None
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self.real is not None
        self.real.exec_module(module)
        setattr(module, "yacc", self.replace(module))  # noqa: B010  (a module's attribute, untyped)


def import_with(replace: Callable[[ModuleType], Callable[..., Any]]) -> ModuleType:
    """`import bashlex` with `replace(yacc_module)` standing in for `yacc.yacc` while bashlex's parser is
    imported (the original is put back afterwards)."""
    hook = _YaccHook(replace)
    sys.meta_path.insert(0, hook)
    try:
        import bashlex  # type: ignore[import-untyped]
    finally:
        sys.meta_path.remove(hook)
        yacc = sys.modules.get("bashlex.yacc")
        if yacc is not None and hasattr(yacc, "yacc"):
            setattr(yacc, "yacc", _original(getattr(yacc, "yacc")))  # noqa: B009, B010
    return bashlex  # type: ignore[no-any-return]


def _original(fn: Callable[..., Any]) -> Callable[..., Any]:
    original: Callable[..., Any] = getattr(fn, "generate", fn)
    return original


_LOADING = threading.Lock()  # one import at a time (`preload`'s thread, or the first shell command)


def preload() -> None:
    """Start loading bashlex on a thread of its own (while the model thinks), so the first shell
    command finds it loaded. A failure is left for `load` to raise where the command is judged."""

    def run() -> None:
        with contextlib.suppress(Exception):
            load()

    if "bashlex.parser" not in sys.modules:
        threading.Thread(target=run, name="zymi-tui-bashlex", daemon=True).start()


def load() -> ModuleType:
    """`bashlex`, imported with the stored tables when they fit its grammar."""
    with _LOADING:
        if "bashlex.parser" in sys.modules:
            return sys.modules["bashlex"]
        return _import()


def _import() -> ModuleType:
    stored = _read_tables()

    def replace(yacc: ModuleType) -> Callable[..., Any]:
        generate = yacc.yacc

        def from_file(*args: Any, **kwargs: Any) -> Any:
            pdict = dict(sys._getframe(1).f_globals)
            if stored is None or stored.get("fingerprint") != fingerprint(pdict):
                return generate(*args, module=sys.modules[pdict["__name__"]], **kwargs)
            return yacc.LRParser(_Tables(stored, pdict), pdict["p_error"])

        from_file.generate = generate  # type: ignore[attr-defined]
        return from_file

    return import_with(replace)
