"""The project's config (zymi_tui.engine.config, msgspec structs) loads and refuses what zymi 0.9.3's own
loader does: a full, valid project has one value of one of its files replaced by a tricky one (or removed),
and is then loaded by the real `zymi` (`zymi run nope`: "pipeline 'nope' not found" once it has loaded) and
by ours (`load_workspace`). Both must load it, or both must refuse it."""

from __future__ import annotations

import copy
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import requires_zymi, zymi_bin
from tests.waiting import LIMIT
from zymi_tui.engine.loader import load_workspace
from zymi_tui.errors import UserError

PROJECT: dict[str, Any] = {  # every key ours reads, nested ones too
    "name": "p", "schema_version": "1", "version": "0.1", "variables": {"a": "b"},
    "llm": {"provider": "openai", "model": "m", "base_url": "http://x", "api_key": "k", "stream": True},
    "defaults": {"timeout_secs": 5, "max_iterations": 3, "max_tokens": 100},
    "policy": {"enabled": True, "allow": ["ls *"], "deny": ["rm *"], "require_approval": ["git *"]},
    "contracts": {"file_write": {"allowed_dirs": ["./x"], "deny_patterns": ["*.key"]}},
    "runtime": {"shell": {"idle_timeout_seconds": 1, "max_sessions": 2, "shell_path": "/bin/sh", "interactive": False},
                "context": {"observation_window": 3, "soft_cap_chars": 100, "hard_cap_chars": 200,
                            "min_tail_turns": 1, "forget_after_turns": 5}},
    "default_approval_channel": "terminal", "store": "sqlite", "unknown": 1,
}  # fmt: skip
AGENT: dict[str, Any] = {
    "name": "a", "description": "d", "model": "m", "system_prompt": "s", "tools": ["read_file", "t"],
    "max_iterations": 2, "max_tokens": 10, "timeout_secs": 0, "policy": {"enabled": False, "allow": []},
}  # fmt: skip
PIPELINE: dict[str, Any] = {
    "name": "q", "description": "d",
    "inputs": [{"name": "task", "type": "integer", "required": True, "description": "t"}],
    "steps": [
        {"id": "a", "agent": "a", "task": "t", "depends_on": [], "context": {"mode": "fresh"}},
        {"id": "b", "tool": "u", "args": {"k": [1, "v"]}, "depends_on": ["a"], "when": "x == 'y'"},
        {"id": "c", "ask": "ok?", "channel": "terminal"},
    ],
    "output": {"step": "a"}, "approval_channel": "terminal",
}  # fmt: skip
HTTP_TOOL: dict[str, Any] = {
    "name": "t", "description": "d", "parameters": {"type": "object"}, "requires_approval": True, "no_resume": False,
    "implementation": {"kind": "http", "method": "POST", "url": "http://x", "headers": {"a": "b"},
                       "body_template": "{}"},
}  # fmt: skip
SHELL_TOOL: dict[str, Any] = {
    "name": "u",
    "description": "d",
    "parameters": {},
    "implementation": {"kind": "shell", "command_template": "echo ${args.x}", "timeout_secs": 3},
}
FILES = {"project.yml": PROJECT, "agents/a.yml": AGENT, "pipelines/q.yml": PIPELINE, "tools/t.yml": HTTP_TOOL,
         "tools/u.yml": SHELL_TOOL}  # fmt: skip
TRICKY: list[Any] = [None, True, -1, 2.5, "30", ["x"], {}]
REMOVED = object()
STRICTER_KNOBS = "zymi-tui refuses hard_cap_chars < soft_cap_chars (a cap that can never hold)"


def paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document a value can be replaced (a key of a mapping, an item of a list)."""
    out = [here] if here else []
    if isinstance(doc, dict):
        return out + [p for k, v in doc.items() for p in paths(v, (*here, k))]
    if isinstance(doc, list):
        return out + [p for i, v in enumerate(doc) for p in paths(v, (*here, i))]
    return out


def changed(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    inner = doc
    for key in path[:-1]:
        inner = inner[key]
    if value is REMOVED:
        del inner[path[-1]]
    else:
        inner[path[-1]] = value
    return doc


def cases() -> list[tuple[str, tuple[Any, ...], Any]]:
    return [(file, path, value) for file, doc in FILES.items() for path in paths(doc) for value in [*TRICKY, REMOVED]]


def write(root: Path, file: str, doc: Any) -> Path:
    root.mkdir(parents=True)
    for rel, full in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(yaml.safe_dump(doc if rel == file else full, sort_keys=False), encoding="utf-8")
    return root


def zymi_loads(root: Path) -> tuple[bool, str]:
    binary = zymi_bin()
    assert binary is not None
    done = subprocess.run(
        [binary, "run", "nope", "--dir", str(root), "--no-venv"], capture_output=True, text=True, timeout=LIMIT
    )
    said = done.stderr.strip()
    loaded = "pipeline 'nope' not found" in said
    assert loaded or "failed to load project" in said or "cycle detected" in said, said
    return loaded, said


def ours_loads(root: Path) -> tuple[bool, str]:
    try:
        load_workspace(root, {})
    except UserError as e:
        return False, e.message
    return True, ""


def expected_difference(file: str, path: tuple[Any, ...], value: Any) -> str | None:
    """Why ours refuses a change zymi loads, when it does so on purpose (None: it must not)."""
    if file == "project.yml" and path[:2] == ("runtime", "context"):
        context = changed(PROJECT, path, value)["runtime"]["context"]
        soft, hard = context.get("soft_cap_chars", 400_000), context.get("hard_cap_chars", 600_000)
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (soft, hard)) and hard < soft:
            return STRICTER_KNOBS
    return None


@requires_zymi
def test_every_place_given_every_tricky_value_is_loaded_or_refused_as_zymi_does(tmp_path: Path) -> None:
    all_cases = cases()
    roots = [write(tmp_path / str(i), file, changed(FILES[file], path, value)) for i, (file, path, value) in
             enumerate(all_cases)]  # fmt: skip
    with ThreadPoolExecutor(4) as pool:
        theirs = list(pool.map(zymi_loads, roots))
    disagreements, refused, deliberate = [], 0, 0
    for (file, path, value), root, (zymi_ok, zymi_said) in zip(all_cases, roots, theirs, strict=True):
        ours_ok, ours_said = ours_loads(root)
        refused += not zymi_ok
        if ours_ok == zymi_ok:
            continue
        if not ours_ok and expected_difference(file, path, value):
            deliberate += 1
            continue
        shown = "removed" if value is REMOVED else repr(value)
        disagreements.append(f"{file} {'.'.join(map(str, path))} = {shown}: zymi {zymi_said!r}, ours {ours_said!r}")
    assert not disagreements, "\n".join(disagreements)
    assert refused > 200 and len(all_cases) - refused > 100  # the changes reach both sides of the line
    assert deliberate > 0


@pytest.mark.parametrize("value", ["5", 5, True, 1.5])
def test_a_plain_scalar_where_a_string_is_wanted_is_that_string(tmp_path: Path, value: Any) -> None:
    """serde's YAML reader gives a string field the scalar's text: `name: 5` is the project `5`."""
    root = write(tmp_path / "p", "project.yml", {**PROJECT, "name": value, "variables": {"a": value}})
    ws = load_workspace(root, {})
    text = "true" if value is True else str(value)
    assert ws.project.name == text and ws.project.variables == {"a": text}


def test_loading_a_project_its_knobs_and_prices_imports_no_pydantic() -> None:
    """msgspec is what the events layer already imports: reading settings adds no validating library."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from zymi_tui.engine.loader import load_workspace\n"
        "from zymi_tui.engine.runtime import workspace_knobs\n"
        "from zymi_tui.replay.costs import load_prices\n"
        "ws = load_workspace(Path(sys.argv[1]), {})\n"
        "assert ws.pipelines and ws.agents and workspace_knobs(ws) and load_prices().models, ws\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    project = Path(__file__).parent / "oracle" / "coding_default" / "project"
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)], capture_output=True, text=True, timeout=LIMIT, check=True
    )
    assert done.stdout.strip() == "[]"
