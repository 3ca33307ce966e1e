"""The package's import graph, read from the source with `ast`: no cycle, no import pointing up a layer.

Every `import` counts, wherever it is written: at module level, inside a function, under
`if TYPE_CHECKING:`. A function-level import defers a cycle to run time; it does not remove it.
Layers, top to bottom (an arrow is "may import"):

    cli -> commands -> tui -> replay | engine | telemetry -> context -> project -> events

Top-level modules beside the packages (`errors`, `text_safety`, ...) are leaves: they import
nothing from the package, so every layer may use them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "zymi_tui"
LAYERS = {
    "events": 0, "project": 1, "context": 2, "replay": 3, "engine": 3, "telemetry": 3, "tui": 4, "commands": 5,
    "cli": 6,
}  # fmt: skip
ENTRY = {"zymi_tui", "zymi_tui.__main__", "zymi_tui.data"}  # the package, `python -m`, package data


def is_leaf(module: str) -> bool:
    """A top-level module beside the layer packages (`zymi_tui.errors`, `zymi_tui.text_safety`)."""
    return module.count(".") == 1 and layer(module) not in LAYERS and module not in ENTRY


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package modules `name` imports anywhere in its source, with the line of each import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != name and target.startswith("zymi_tui"):
                yield target, getattr(node, "lineno", 0)


def graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    known = modules(root)
    out: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges = out.setdefault(name, {})
        for target, line in imported(name, path, known):
            edges.setdefault(target, line)
    return out


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as one cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward(edges: dict[str, dict[str, int]]) -> list[str]:
    bad = []
    for source, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            a, b = layer(source), layer(target)
            if is_leaf(source):
                bad.append(f"{source}:{line} imports {target} (a top-level leaf module imports nothing of the package)")
            elif a in LAYERS and b in LAYERS and LAYERS[b] > LAYERS[a]:
                bad.append(f"{source}:{line} imports {target} ({a} is below {b})")
    return bad


def test_no_import_cycle_in_the_package() -> None:
    found = cycles(graph())
    assert found == [], "import cycles (function-level imports included): " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_points_up_a_layer() -> None:
    assert upward(graph()) == []


def test_every_module_has_a_layer() -> None:
    """A new package must be placed in LAYERS; a top-level module is a leaf (checked by the test above)."""
    assert sorted({m for m in modules() if layer(m) not in LAYERS and m not in ENTRY and not is_leaf(m)}) == []


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A tiny package with a cycle hidden in a function and an upward import, to show the checks can fail."""
    root = tmp_path / "zymi_tui"
    for folder in ("events", "context"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "events" / "a.py").write_text("def f():\n    from zymi_tui.events import b\n")
    (root / "events" / "b.py").write_text("from . import a\nfrom zymi_tui.context.c import x\n")
    (root / "context" / "c.py").write_text("x = 1\n")
    return root


def test_the_checks_see_function_level_and_relative_imports(toy: Path) -> None:
    edges = graph(toy)
    assert cycles(edges) == [["zymi_tui.events.a", "zymi_tui.events.b"]]
    assert upward(edges) == ["zymi_tui.events.b:2 imports zymi_tui.context.c (events is below context)"]
