"""Project loading and validation: zymi's templating passes and its messages (docs/engine.md#templating,
#project-file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zymi_tui.engine.dag import plan_levels
from zymi_tui.engine.loader import load_dotenv, load_workspace
from zymi_tui.engine.templating import substitute
from zymi_tui.engine.when_expr import WhenError, parse_when
from zymi_tui.project.errors import ProjectError

AGENT = "name: a\n"
PIPE = "name: p\nsteps:\n  - id: s\n    agent: a\n    task: x\n"


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def error(root: Path, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ProjectError) as e:
        load_workspace(root, env or {})
    return str(e.value)


def test_project_yml_resolves_only_env_and_reports_the_first_unset(tmp_path: Path) -> None:
    make(tmp_path, {"project.yml": "name: t\nvariables: {model: m}\nx: ${model}\ny: ${env.A}\nz: ${env.B}\n"})
    assert error(tmp_path) == f"unresolved template variable `${{env.A}}` in {(tmp_path / 'project.yml').resolve()}"
    ws = load_workspace(tmp_path, {"A": "1", "B": "2"})
    assert ws.project.name == "t"


def test_agents_get_variables_project_name_and_keep_runtime_keys(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "project.yml": "name: shop\nversion: '2'\nvariables: {tone: dry}\n",
            "agents/a.yml": "name: a\n# ${unknown_in_a_comment}\nsystem_prompt: '${tone} ${project.name} "
            "${project.version} ${inputs.q} ${env.HOME_X}'\n",
        },
    )
    ws = load_workspace(tmp_path, {"HOME_X": "h"})
    assert ws.agents["a"].system_prompt == "dry shop 2 ${inputs.q} h"


def test_unknown_variable_in_an_agent(tmp_path: Path) -> None:
    make(tmp_path, {"project.yml": "name: t\n", "agents/a.yml": "name: a\nsystem_prompt: ${nope}\n"})
    assert error(tmp_path).startswith("unresolved template variable `${nope}` in ")


def test_objects_are_keyed_by_name_and_duplicates_named_with_both_files(tmp_path: Path) -> None:
    make(tmp_path, {"project.yml": "name: t\n", "agents/x.yml": "name: b\n", "agents/y.yml": "name: b\n"})
    msg = error(tmp_path)
    assert msg.startswith("duplicate agent name `b`: defined in both ") and "x.yml" in msg and "y.yml" in msg


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        (
            "name: p\nsteps:\n  - id: s\n    agent: a\n    tool: read_file\n",
            "steps: step `s`: specify exactly one of `agent:` + `task:`, `tool:`, or `ask:` (ADR-0024, ADR-0042)",
        ),
        ("name: p\nsteps:\n  - id: s\n", "steps: step `s`: must specify one of `agent:` + `task:`, `tool:`, or `ask:`"),
        ("name: p\nsteps:\n  - id: s\n    agent: a\n", "steps: step `s`: `task:` is required for agent steps"),
        (PIPE + "    depends_on: [ghost]\n", "pipelines/p.yml: step `s` depends on unknown step `ghost`"),
        (PIPE + "output: {step: ghost}\n", "pipelines/p.yml: output references unknown step `ghost`"),
        (PIPE + "output: {any_of: [s, s]}\n", "output `any_of:` lists `s` more than once"),
        (PIPE + "output: {step: s, any_of: [s]}\n", "`output:` cannot specify both `step:` and `any_of:` (ADR-0029)"),
        (
            PIPE + '    when: "a == b"\n',
            "step `s` has `when:` but no `depends_on` — nothing has happened yet to branch on",
        ),
        (
            "name: p\nsteps:\n  - id: a\n    agent: a\n    task: x\n    depends_on: [b]\n"
            "  - id: b\n    agent: a\n    task: x\n    depends_on: [a]\n",
            "cycle detected in pipeline `p` steps: a -> b",
        ),
        (
            "name: p\nsteps:\n  - id: s\n    tool: write_file\n    args: {content: '${steps.x.output}'}\n",
            "tool step `s` references unknown step `${steps.x.output}`",
        ),
    ],
)
def test_pipeline_validation_messages(tmp_path: Path, pipeline: str, expected: str) -> None:
    make(tmp_path, {"project.yml": "name: t\n", "agents/a.yml": AGENT, "pipelines/p.yml": pipeline})
    assert expected in error(tmp_path)


def test_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    make(tmp_path, {"project.yml": "name: t\n", "agents/a.yml": "name: a\ntools: [read_file\n"})
    msg = error(tmp_path)
    assert msg.startswith(f"invalid YAML in {tmp_path / 'agents' / 'a.yml'}") and "line 3" in msg


def test_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    make(tmp_path, {"project.yml": "name: t\ndefaults: {max_iterations: lots}\n"})
    msg = error(tmp_path)
    assert "project.yml" in msg and "defaults.max_iterations" in msg


def test_declarative_tool_named_like_a_builtin(tmp_path: Path) -> None:
    tool = "name: read_file\ndescription: d\nparameters: {}\nimplementation: {kind: shell, command_template: ls}\n"
    make(tmp_path, {"project.yml": "name: t\n", "tools/t.yml": tool})
    assert error(tmp_path) == (
        "tool catalog error: declarative tool 'read_file' collides with built-in tool of the same name"
    )


def test_dotenv_never_overrides(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=from_file\nB='quoted'\n# c\nnot a line\n", encoding="utf-8")
    env = {"A": "real"}
    load_dotenv([tmp_path / ".env"], env)
    assert env == {"A": "real", "B": "quoted"}


def test_levels_are_sorted_barriers(tmp_path: Path) -> None:
    pipe = (
        "name: p\nsteps:\n"
        + "".join(f"  - id: {i}\n    agent: a\n    task: x\n" for i in ("z", "b"))
        + "  - id: c\n    agent: a\n    task: x\n    depends_on: [b]\n"
    )
    make(tmp_path, {"project.yml": "name: t\n", "agents/a.yml": AGENT, "pipelines/p.yml": pipe})
    ws = load_workspace(tmp_path, {})
    assert plan_levels(ws.pipelines["p"]) == [["b", "z"], ["c"]]


def test_runtime_substitution_leaves_unknown_placeholders_and_cuts_step_outputs() -> None:
    template = "${inputs.a} [${steps.s0.output}] [${steps.nope.output}] [${inputs.nope}]"
    text = substitute(template, {"a": "A"}, {"s0": "é" * 1500}, cut=2000)
    assert text == "A [" + "é" * 1000 + "] [${steps.nope.output}] [${inputs.nope}]"


@pytest.mark.parametrize(
    ("expr", "value"),
    [("a == a", True), ("a != a", False), ("'x y' == 'x y' && b == c", False), ("a == b || c == c", True)],
)
def test_when_expressions(expr: str, value: bool) -> None:
    assert parse_when(expr).evaluate() is value


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("a", "expected comparison operator (`==` or `!=`) at position 1"),
        ("a ==", "expected value at position 4"),
        ("'a == b", "unterminated string starting at position 0"),
        ("a == b c", "unexpected `c` at position 7 (expected `&&` or `||`)"),
    ],
)
def test_when_parse_errors(expr: str, message: str) -> None:
    with pytest.raises(WhenError) as e:
        parse_when(expr)
    assert str(e.value) == message


def test_yaml_is_read_as_zymi_reads_it_on_is_a_string(tmp_path: Path) -> None:
    make(
        tmp_path,
        {"project.yml": "name: t\noutputs:\n  - type: stdout\n    on: [ResponseReady]\n    flag: yes\n"},
    )
    out = load_workspace(tmp_path, {}).project.outputs[0]
    assert out["on"] == ["ResponseReady"] and out["flag"] == "yes"
