"""The project's config records (zymi_tui.record, zymi_tui.engine.config) against pydantic models with the
same declarations: a document whose values have their exact types is made without pydantic, and must be
what the model gives; any other is validated by pydantic through the record's own schema, and must give
what the model gives, or refuse it with the model's words."""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
import typing
from pathlib import Path
from typing import Annotated, Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from tests.waiting import LIMIT
from zymi_tui.engine import config as C
from zymi_tui.record import Invalid, Record, exact

ROOT = Path(__file__).resolve().parents[1]
MODELS = (C.ProjectConfig, C.AgentConfig, C.PipelineConfig, C.ToolConfig)


@functools.cache
def model(cls: type[Record]) -> type[BaseModel]:
    """The pydantic model declared as `cls` is: the same fields, types, defaults and rules, extra keys ignored."""
    fields: dict[str, Any] = {}
    for name, annotation in typing.get_type_hints(cls).items():
        if name.startswith("_"):
            continue
        spec = cls._FIELDS[name]
        kind = Annotated[swapped(annotation), Field(**spec.rules)] if spec.rules else swapped(annotation)
        if spec.factory is not None:
            factory = (
                model(spec.factory)
                if isinstance(spec.factory, type) and issubclass(spec.factory, Record)
                else spec.factory
            )
            fields[name] = (kind, Field(default_factory=factory))
        else:
            fields[name] = (kind, ... if spec.required else spec.default)
    made: type[BaseModel] = create_model(cls.__name__, __config__=ConfigDict(extra="ignore"), **fields)
    return made


def swapped(annotation: Any) -> Any:
    """`annotation` with every record class in it replaced by its pydantic model."""
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return model(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return list[swapped(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[swapped(args[0]), swapped(args[1])]  # type: ignore[misc]
    if args and origin is not typing.Literal:
        return typing.Union[tuple(swapped(a) for a in args)]  # noqa: UP007
    return annotation


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down (a record for its model), with the same fields set."""
    if isinstance(a, Record):
        return (
            isinstance(b, BaseModel)
            and type(b) is model(type(a))
            and a.model_fields_set == b.model_fields_set
            and all(same(getattr(a, k), getattr(b, k)) for k in type(b).model_fields)
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def check(cls: type[Record], doc: Any) -> bool:
    """True when the exact path took the document; either way the record agrees with the model."""
    made = exact(cls, doc)
    try:
        expected = model(cls).model_validate(doc)
    except ValidationError as e:
        assert made is None, f"{cls.__name__}: made {made!r} where pydantic refuses {doc!r}"
        try:
            cls.model_validate(doc)
        except Invalid as got:
            assert str(got) == str(e) and got.errors() == e.errors(), f"{cls.__name__}: {got} != {e}"
            return False
        raise AssertionError(f"{cls.__name__}: {doc!r} accepted where pydantic refuses it") from None
    assert made is None or same(made, expected), f"{cls.__name__}: {made!r} != {expected!r} for {doc!r}"
    got = cls.model_validate(doc)
    assert same(got, expected), f"{cls.__name__}: {got!r} != {expected!r} for {doc!r}"
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
FULL: dict[type[Record], dict[str, Any]] = {  # every field given, nested ones too
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
def documents(draw: st.DrawFn) -> tuple[type[Record], Any]:
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
def test_documents_with_one_value_changed_agree(case: tuple[type[Record], Any]) -> None:
    check(*case)


def test_loading_a_project_does_not_load_pydantic() -> None:
    """The exact path is the one taken: loading a project of exact types never imports pydantic (a mutation
    that always falls back to pydantic fails here)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from zymi_tui.engine.loader import load_workspace\n"
        "ws = load_workspace(Path(sys.argv[1]))\n"
        "assert ws.pipelines and ws.agents and ws.tools is not None, ws\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    project = ROOT / "tests" / "oracle" / "coding_default" / "project"
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)], capture_output=True, text=True, timeout=LIMIT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_made_in_code_as_from_a_document() -> None:
    """Keywords are a document: exact values are taken as they are, others coerced or refused by pydantic."""
    assert C.Defaults(max_tokens=12).model_fields_set == {"max_tokens"}
    assert same(C.Defaults(max_tokens="12"), model(C.Defaults)(max_tokens="12"))  # type: ignore[arg-type]
    shell = C.ShellRuntime(max_sessions=2)
    assert C.RuntimeConfig(shell=shell).shell is shell  # an instance passes as it is, as pydantic keeps it
    try:
        C.Defaults(max_tokens=-1)
    except Invalid as e:
        assert e.errors()[0]["type"] == "greater_than_equal" and str(e).startswith("1 validation error for Defaults")
    else:
        raise AssertionError("max_tokens=-1 accepted")
