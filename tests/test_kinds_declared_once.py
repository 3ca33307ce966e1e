"""Each event kind's fields are declared once (`events.kinds`): no other module declares a class named
after a kind, and a fast reader (a replay, a search) hands out the very kind a whole-event reader does."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

from zymi_tui.events.envelope import decode_event
from zymi_tui.events.kinds import KNOWN_KINDS
from zymi_tui.events.replay_view import decode_replay_row
from zymi_tui.events.row_describe import row_line

from .conftest import SCENARIOS, oracle_db

PACKAGE = Path(__file__).resolve().parents[1] / "zymi_tui"
NAMES = set(KNOWN_KINDS) | {"TokenUsage", "Usage", "OutputVia"}


def _declared(tree: ast.AST) -> set[str]:
    """Class names a module declares: `class X` and `msgspec.defstruct("X", ...)` with a literal name."""
    found = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "defstruct"]
    named = [c.args[0] for c in calls if c.args and isinstance(c.args[0], ast.Constant)]
    return found | {a.value for a in named if isinstance(a.value, str)}


def test_no_module_but_kinds_declares_a_kind() -> None:
    where: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for name in _declared(ast.parse(path.read_text())):
            base = name.removeprefix("_").removesuffix("Fields").removesuffix("Json")
            if base in NAMES:
                where.setdefault(base, []).append(str(path.relative_to(PACKAGE)))
    twice = {k: v for k, v in where.items() if len(v) > 1}
    assert not twice, f"declared in more than one place: {twice}"


def test_a_fast_reader_hands_out_the_whole_event_kind() -> None:
    con = sqlite3.connect(f"file:{oracle_db(SCENARIOS[0])}?mode=ro", uri=True)
    rows = con.execute("SELECT id, sequence, data FROM events ORDER BY id").fetchall()
    con.close()
    seen = set()
    for gid, seq, data in rows:
        whole = decode_event(data, seq).kind
        replayed = decode_replay_row(whole.type_name, gid, seq, data).kind
        if replayed is not None:
            assert type(replayed) is type(whole)
            assert replayed.to_data() == whole.to_data()
            seen.add(whole.type_name)
        assert row_line(data, seq)[0] == whole.type_name
    assert {"LlmCallCompleted", "UserMessageReceived", "ToolCallCompleted"} <= seen


ENVELOPE_FIELDS = {"id", "stream_id", "timestamp", "correlation_id", "source"}


def test_the_envelope_is_declared_once() -> None:
    """One class holds the envelope's fields; a reader's envelope (`row_envelope`) is derived from it."""
    where = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                fields = {
                    a.target.id for a in node.body if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)
                }
                if fields >= ENVELOPE_FIELDS:
                    where.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert where == ["events/kinds.py:Event"]


def test_the_events_layer_has_one_model_style() -> None:
    """No module of events/ imports the hand-made record framework (`zymi_tui/record.py`)."""
    for path in (PACKAGE / "events").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "zymi_tui.record" not in imported, path
