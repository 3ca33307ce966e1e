"""The one place that knows the project: where the store is, which project describes it, what it says.

The user's case of issue 13 is reproduced from outside: a folder holding `events.db` beside
`project/` (no `.zymi/`), as a new user would get it. Expected figures come from the recorded
request bodies (`requests.jsonl`) and `expected.json` of the oracle scenario, never from our code.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ORACLE, copy_store
from zymi_tui.events.location import PostgresStore, SqliteStore
from zymi_tui.events.store import StoreError
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.levels import step_levels
from zymi_tui.project.locate import find_project, locate, locate_store
from zymi_tui.project.reader import read_project
from zymi_tui.tui.launch import choose_target


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "zymi_tui", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def empty_db(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(path).close()
    return path


def project(folder: Path, text: str = "name: p\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.yml").write_text(text)
    return folder


# -- the store ----------------------------------------------------------------------------------
def test_store_from_each_kind_of_argument(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert locate_store("postgres://u:secret@h/db") == PostgresStore("postgres://u:secret@h/db")
    db = empty_db(tmp_path / "a" / "x.db")
    assert locate_store(str(db)) == SqliteStore(db)
    zymi = empty_db(tmp_path / "b" / ".zymi" / "events.db")
    assert locate_store(str(tmp_path / "b")) == SqliteStore(zymi)
    assert locate_store(None, cwd=tmp_path / "b") == SqliteStore(zymi)
    plain = empty_db(tmp_path / "c" / "events.db")  # a folder holding events.db, no .zymi/
    assert locate_store(str(tmp_path / "c")) == SqliteStore(plain)
    project(tmp_path / "d", "name: d\nstore: sqlite:data/other.db\n")
    assert locate_store(str(tmp_path / "d")) == SqliteStore(tmp_path / "d" / "data" / "other.db")
    project(tmp_path / "e", "name: e\nstore: ${env.PG_URL}\n")
    monkeypatch.setenv("PG_URL", "postgresql://h/db")
    assert locate_store(str(tmp_path / "e")) == PostgresStore("postgresql://h/db")
    monkeypatch.delenv("PG_URL")
    with pytest.raises(ProjectError, match="PG_URL"):
        locate_store(str(tmp_path / "e"))


def test_no_store_is_one_line_naming_both_layouts(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as e:
        locate_store(str(tmp_path))
    assert ".zymi/events.db" in e.value.message and "events.db" in e.value.message
    with pytest.raises(StoreError, match="no such file or folder"):
        locate_store(str(tmp_path / "nope"))


def test_location_text_never_shows_a_password() -> None:
    assert str(PostgresStore("postgres://u:secret@h/db?password=x")) == "postgres://u:***@h/db?password=***"


# -- the project ---------------------------------------------------------------------------------
def test_project_finder_rules(tmp_path: Path) -> None:
    root = project(tmp_path / "zymi")  # zymi's layout
    assert find_project(SqliteStore(empty_db(root / ".zymi" / "events.db"))) == root
    beside = project(tmp_path / "beside")  # events.db beside project.yml
    assert find_project(SqliteStore(empty_db(beside / "events.db"))) == beside
    sibling = project(tmp_path / "rec" / "project")  # events.db beside a project/ folder
    assert find_project(SqliteStore(empty_db(tmp_path / "rec" / "events.db"))) == sibling
    lone = SqliteStore(empty_db(tmp_path / "lone" / "events.db"))
    assert find_project(lone) is None
    assert find_project(lone, explicit=str(root)) == root
    with pytest.raises(ProjectError, match=r"no project\.yml in that folder"):
        find_project(lone, explicit=str(tmp_path / "lone"))
    pg = PostgresStore("postgres://h/db")
    assert find_project(pg) is None
    assert find_project(pg, named=str(root)) == root  # a project folder whose store: is a URL


def test_reader_levels_inputs_and_lenience(tmp_path: Path) -> None:
    root = project(tmp_path / "p", "name: shop\nvariables:\n  who: clerk\n")
    (root / "agents").mkdir()
    (root / "agents" / "a.yml").write_text("name: a\nsystem_prompt: You are the ${who} of ${project.name}.\n")
    (root / "agents" / "broken.yml").write_text("name: [unclosed\n")
    (root / "pipelines").mkdir()
    (root / "pipelines" / "main.yml").write_text(
        "name: main\ninputs:\n  - {name: task, required: true}\n  - {name: extra}\n"
        "steps:\n  - {id: c, agent: a, task: x, depends_on: [a, b]}\n  - {id: b, agent: a, task: y, depends_on: [a]}\n"
        "  - {id: a, agent: a, task: '${inputs.task}', context: {mode: fresh}}\n"
    )
    p = read_project(root)
    assert p.system_prompt("a") == "You are the clerk of shop."
    assert [path.name for path in p.problems] == ["broken.yml"]
    main = p.pipelines["main"]
    assert main.levels == {"a": 0, "b": 1, "c": 2}
    assert main.optional_inputs == ("extra",)
    assert main.steps["a"].fresh and not main.steps["b"].fresh
    assert main.steps["a"].task == "${inputs.task}"  # runtime placeholders stay for the engine
    with pytest.raises(ProjectError, match="not found"):
        p.pipeline("nope")


def test_levels_are_kahn_levels_and_name_a_cycle() -> None:
    assert step_levels({"z": [], "b": [], "c": ["b", "z"], "x": ["unknown"]}).plan == [["b", "x", "z"], ["c"]]
    cyc = step_levels({"a": ["b"], "b": ["a"], "r": []})
    assert (cyc.plan, cyc.cycle) == ([["r"]], ["a", "b"])


# -- the user's case: events.db beside project/, no .zymi/ ----------------------------------------
@pytest.fixture
def beside(tmp_path: Path) -> Path:
    """chat_profile as a user would unpack it: `<dir>/events.db` and `<dir>/project/`."""
    folder = tmp_path / "chat_profile"
    copy_store(ORACLE / "chat_profile" / "events.db", folder)
    shutil.copytree(ORACLE / "chat_profile" / "project", folder / "project")
    return folder


def requests() -> list[dict[str, Any]]:
    lines = (ORACLE / "chat_profile" / "requests.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def expected() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((ORACLE / "chat_profile" / "expected.json").read_text())
    return rows


def test_bare_launch_finds_the_store_and_its_project(beside: Path) -> None:
    target = choose_target(None, None, cwd=beside, bare=True)
    assert target.store == SqliteStore(beside / "events.db") and target.banner is None
    assert target.project == beside / "project"
    assert locate(str(beside)).project == beside / "project"


def test_runs_on_the_folder(beside: Path) -> None:
    run = cli("runs", str(beside))
    assert run.returncode == 0, run.stderr
    assert "chat-42" in run.stdout and "chat-7" in run.stdout


def test_context_uses_the_projects_prefix(beside: Path) -> None:
    """The largest agent call: rebuilt as recorded, its Layer A the system prompt and this turn's message."""
    call = max((e for e in expected() if e["request_kind"] == "agent"), key=lambda e: e["approx_context_chars"])
    body = next(r["body"] for r in requests() if r["n"] == call["request_n"])
    system, task = body["messages"][0], body["messages"][1]
    assert (system["role"], task["role"]) == ("system", "user")
    prefix = len(system["content"].encode()) + len(task["content"].encode())
    run = cli(
        "context", str(beside / "events.db"), "--stream", call["stream_id"], "--seq", str(call["sequence"]),
        "--profile", "chat", "--json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout)
    assert row["chars"] == call["approx_context_chars"]
    assert row["prefix_inferred"] is False
    assert sum(e["bytes"] for e in row["entries"] if e["layer"] == "A") == prefix


# -- honest what-if: the recorded knobs and Layer A say where they come from ----------------------
def replay_json(*args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    run = cli("replay", *args, "--json")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    return lines[:-1], lines[-1]


def test_replay_prints_the_projects_recorded_knobs(beside: Path) -> None:
    doc = yaml.safe_load((beside / "project" / "project.yml").read_text())["runtime"]["context"]
    rows, totals = replay_json(str(beside))
    assert totals["knobs_source"] == "project" and not totals["prefix_inferred"]
    assert f"soft {doc['soft_cap_chars']}," in totals["knobs"] and f"window {doc['observation_window']}," in totals[
        "knobs"]  # fmt: skip
    assert all(r["knobs_source"] == "project" and r["prefix_basis"] is None for r in rows)
    text = cli("replay", str(beside)).stdout
    assert f"soft {doc['soft_cap_chars']}" in text and "engine defaults" not in text


def test_without_a_project_the_estimate_says_so_and_strict_refuses(tmp_path: Path) -> None:
    db = copy_store(ORACLE / "chat_profile" / "events.db", tmp_path / "lone")
    rows, totals = replay_json(str(db))
    assert totals["knobs_source"] == "unknown" and totals["knobs"].startswith("unknown")
    assert totals["prefix_inferred"] and totals["prefix_basis"]
    agent = [r for r in rows if r["kind"] == "agent"]
    assert agent and all(r["prefix_inferred"] and r["prefix_basis"] and r["prefix_bytes"] is not None for r in agent)
    text = cli("replay", str(db)).stdout
    assert "Layer A inferred (no project)" in text.splitlines()[0]  # the table's title, above the figures
    assert "knobs: unknown" in text
    call = next(r for r in agent if r["iteration"] == 2)
    one = cli("context", str(db), "--stream", call["stream_id"], "--seq", str(call["sequence"]))
    assert f"Layer A ~{call['prefix_bytes']} B inferred (no project)" in one.stdout
    for argv in (["replay", str(db)], ["context", str(db), "--stream", call["stream_id"], "--seq", "1"]):
        refused = cli(*argv, "--strict")
        assert refused.returncode == 2 and refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1 and "--strict" in refused.stderr
        assert "--project DIR" in refused.stderr


def test_strict_accepts_a_store_with_its_project(beside: Path) -> None:
    assert cli("replay", str(beside), "--strict").returncode == 0


WHOLE_STORE = [["compare", "--profiles", "recorded,chat", "--format", "json"],
               ["sweep", "--window", "2,4", "--soft-cap", "40k", "--json", "--workers", "1"],
               ["replay", "--compare", "recorded,chat", "--json"]]  # fmt: skip
WHOLE_STORE_IDS = ["compare", "sweep", "replay-compare"]


@pytest.mark.parametrize("argv", WHOLE_STORE, ids=WHOLE_STORE_IDS)
def test_compare_and_sweep_strict_refuse_to_guess_without_a_project(tmp_path: Path, argv: list[str]) -> None:
    db = copy_store(ORACLE / "chat_profile" / "events.db", tmp_path / "lone")
    assert cli(argv[0], str(db), *argv[1:]).returncode == 0  # without --strict: estimates, marked as such
    refused = cli(argv[0], str(db), *argv[1:], "--strict")
    assert refused.returncode == 2 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "--strict: Layer A and the recorded knobs of chat-42:step:reply would be guessed" in refused.stderr
    assert "--project DIR" in refused.stderr


@pytest.mark.parametrize("argv", WHOLE_STORE, ids=WHOLE_STORE_IDS)
def test_compare_and_sweep_strict_change_nothing_with_the_project(beside: Path, argv: list[str]) -> None:
    plain = cli(argv[0], str(beside), *argv[1:])
    strict = cli(argv[0], str(beside), *argv[1:], "--strict")
    assert plain.returncode == strict.returncode == 0 and plain.stdout.strip()
    assert strict.stdout == plain.stdout


def test_knobs_our_engine_recorded_are_read_from_the_store(tmp_path: Path) -> None:
    """The bundled sample (made by our engine) alone: its knobs come from its WorkflowNodeStarted events."""
    sample = Path(__file__).resolve().parents[1] / "zymi_tui" / "data" / "sample" / "chat_session" / "events.db"
    db = copy_store(sample, tmp_path / "alone")
    with sqlite3.connect(db) as c:
        (data,) = c.execute("SELECT data FROM events WHERE kind_tag = 'workflow_node_started' LIMIT 1").fetchone()
    recorded = json.loads(data)["kind"]["data"]["zymi_tui"]["knobs"]
    _, totals = replay_json(str(db))
    assert totals["knobs_source"] == "store" and not totals["prefix_inferred"]
    assert f"soft {recorded['soft_cap_chars']}," in totals["knobs"]
    assert f"window {recorded['observation_window']}," in totals["knobs"]
