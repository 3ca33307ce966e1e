"""Every `@work` method that takes arguments names its worker (`description=`).

Without one, Textual's decorator writes the worker's description from `repr()` of every argument,
on the UI thread, each time the worker starts: a run's 100k index rows came to 6.5 MB of text and
~70 ms; the knob editor's diff of a long call (thousands of changes) 4-10 ms of every edit."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "zymi_tui"


def undescribed(source: str) -> list[str]:
    """The `@work` functions of `source` that take arguments besides `self` and have no description."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        takes = len(args.posonlyargs) + len(args.args) > 1 or args.kwonlyargs or args.vararg or args.kwarg
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "work"):
                continue
            if takes and not any(k.arg == "description" for k in deco.keywords):
                found.append(f"{node.name} (line {node.lineno})")
    return found


def test_every_worker_with_arguments_is_described() -> None:
    missing = {
        str(path.relative_to(PACKAGE)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if (names := undescribed(path.read_text(encoding="utf-8")))
    }
    assert not missing, missing


def test_the_check_finds_an_undescribed_worker() -> None:
    toy = """
class S:
    @work(thread=True, group="a")
    def read(self, rows: list[int]) -> None: ...

    @work(thread=True, group="b", description="b")
    def described(self, rows: list[int]) -> None: ...

    @work(group="c")
    async def plain(self) -> None: ...

    @work(group="d")
    async def keyword(self, *, drawn: int = 0) -> None: ...
"""
    assert undescribed(toy) == ["read (line 4)", "keyword (line 13)"]
