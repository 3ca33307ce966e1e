"""A project is made without pydantic's validator when its values have their exact types
(zymi_tui.engine.exact): the result must be what `model_validate` gives, or nothing (pydantic decides)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tests.waiting import LIMIT
from zymi_tui.engine import config as C
from zymi_tui.engine.exact import exact

ROOT = Path(__file__).resolve().parents[1]
MODELS = (C.ProjectConfig, C.AgentConfig, C.PipelineConfig, C.ToolConfig)


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, with the same fields set."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        return a.model_fields_set == b.model_fields_set and all(
            same(getattr(a, k), getattr(b, k)) for k in type(a).model_fields
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def check(cls: type[BaseModel], doc: Any) -> bool:
    """True when the exact path took the document (and agreed with pydantic)."""
    made = exact(cls, doc)
    try:
        validated = cls.model_validate(doc)
    except ValidationError:
        assert made is None, f"{cls.__name__}: made {made!r} where pydantic refuses {doc!r}"
        return False
    assert made is None or same(made, validated), f"{cls.__name__}: {made!r} != {validated!r} for {doc!r}"
    return made is not None


def test_every_yaml_file_of_the_repository_agrees() -> None:
    taken = 0
    for path in sorted(p for p in ROOT.rglob("*.yml") if ".venv" not in p.parts):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            taken += sum(check(cls, doc) for cls in MODELS)
    assert taken > 50  # the projects, agents, pipelines and tools of the samples and the oracle


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 40), st.floats(allow_nan=False, width=16), st.text(max_size=4),
    st.sampled_from(["string", "fresh", "inherit", "http", "shell", "GET", "POST", "30", "true"]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["name", "kind", "id", "x", "mode", "provider"]), inner, max_size=3),
    ),
    max_leaves=6,
)
FULL: dict[type[BaseModel], dict[str, Any]] = {  # every field given, nested ones too
    C.ProjectConfig: {
        "name": "p", "schema_version": "1", "version": "0.1", "variables": {"a": "b"},
        "llm": {"provider": "openai", "model": "m", "base_url": "http://x", "api_key": "k", "stream": True},
        "defaults": {"timeout_secs": 5, "max_iterations": 3, "max_tokens": 100},
        "policy": {"enabled": True, "allow": ["ls *"], "deny": ["rm *"], "require_approval": ["git *"]},
        "contracts": {"file_write": {"allowed_dirs": ["./x"], "deny_patterns": ["*.key"]}},
        "runtime": {"shell": {"idle_timeout_seconds": 1, "max_sessions": 2, "shell_path": "/bin/sh",
                              "interactive": False}, "context": {"observation_window": 3}},
        "connectors": [{"type": "http_inbound"}], "outputs": [], "approvals": [{"x": 1}],
        "default_approval_channel": "terminal", "store": "events.db", "unknown": 1,
    },
    C.AgentConfig: {
        "name": "a", "description": "d", "model": "m", "system_prompt": "s", "tools": ["read_file"],
        "max_iterations": 2, "max_tokens": 10, "timeout_secs": 0, "policy": {"enabled": False, "allow": []},
    },
    C.PipelineConfig: {
        "name": "p", "description": "d",
        "inputs": [{"name": "task", "type": "integer", "required": True, "description": "t"}],
        "steps": [
            {"id": "a", "agent": "x", "task": "t", "depends_on": [], "context": {"mode": "fresh"}},
            {"id": "b", "tool": "y", "args": {"k": [1, "v"]}, "depends_on": ["a"], "when": "true"},
            {"id": "c", "ask": "ok?", "channel": "terminal"},
        ],
        "output": {"step": "a", "any_of": ["a", "b"]}, "approval_channel": "terminal",
    },
    C.ToolConfig: {
        "name": "t", "description": "d", "parameters": {"type": "object"}, "requires_approval": True,
        "no_resume": False,
        "implementation": {"kind": "http", "method": "POST", "url": "http://x", "headers": {"a": "b"},
                           "body_template": "{}"},
    },
}  # fmt: skip
SHELL_IMPL = {"kind": "shell", "command_template": "echo ${x}", "timeout_secs": 3}


def paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document a value can be replaced (a key of a mapping, an item of a list)."""
    out = [here] if here else []
    if isinstance(doc, dict):
        return out + [p for k, v in doc.items() for p in paths(v, (*here, k))]
    if isinstance(doc, list):
        return out + [p for i, v in enumerate(doc) for p in paths(v, (*here, i))]
    return out


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    if isinstance(doc, dict):
        return {**doc, path[0]: replaced(doc[path[0]], path[1:], value)}
    return [replaced(v, path[1:], value) if i == path[0] else v for i, v in enumerate(doc)]


def removed(doc: dict[str, Any], path: tuple[Any, ...]) -> Any:
    inner = doc
    for key in path[:-1]:
        inner = inner[key]
    if isinstance(inner, dict):
        inner.pop(path[-1])
    return doc


@st.composite
def documents(draw: st.DrawFn) -> tuple[type[BaseModel], Any]:
    """A full, valid document of one model with one value replaced (or a key removed)."""
    cls = draw(st.sampled_from(MODELS))
    doc = dict(FULL[cls])
    if cls is C.ToolConfig and draw(st.booleans()):
        doc["implementation"] = SHELL_IMPL
    path = draw(st.sampled_from(paths(doc)))
    if draw(st.integers(0, 4)) == 0:
        return cls, removed(copy.deepcopy(doc), path)
    return cls, replaced(doc, path, draw(values))


TRICKY = [None, True, False, 0, 1, -1, 2.0, "", "x", "integer", "fresh", "GET", "shell", [], ["x"], [1], {}, {"k": "v"},
          {"k": 1}, {1: "v"}]  # fmt: skip


def test_every_value_replaced_by_every_tricky_one_agrees() -> None:
    """Exhaustive over one change: each place of each full document, each tricky value, or removed."""
    taken = 0
    for cls, full in [*FULL.items(), (C.ToolConfig, {**FULL[C.ToolConfig], "implementation": SHELL_IMPL})]:
        for path in paths(full):
            taken += check(cls, removed(copy.deepcopy(full), path))
            taken += sum(check(cls, replaced(full, path, value)) for value in TRICKY)
    assert taken > 300


def test_the_full_documents_take_the_exact_path() -> None:
    assert all(check(cls, FULL[cls]) for cls in MODELS)
    assert check(C.ToolConfig, {**FULL[C.ToolConfig], "implementation": SHELL_IMPL})


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_documents_with_one_value_changed_agree(case: tuple[type[BaseModel], Any]) -> None:
    check(*case)


def test_a_run_builds_no_schema_of_the_project() -> None:
    """The exact path is the one taken: loading a project leaves the config models' schemas unbuilt
    (a mutation that always falls back to pydantic fails here)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from zymi_tui.engine import config\n"
        "from zymi_tui.engine.loader import load_workspace\n"
        "ws = load_workspace(Path(sys.argv[1]))\n"
        "assert ws.pipelines and ws.agents, ws\n"
        "built = [c.__name__ for c in vars(config).values()\n"
        "         if isinstance(c, type) and issubclass(c, config._Loose) and c.__pydantic_complete__]\n"
        "print(built)\n"
    )
    project = ROOT / "tests" / "oracle" / "coding_default" / "project"
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)], capture_output=True, text=True, timeout=LIMIT, check=True
    )
    assert done.stdout.strip() == "[]"
