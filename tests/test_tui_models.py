"""The dashboard's pure models on the oracle stores (figures from the real engine or counted by SQL)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import ORACLE, oracle_db
from tests.tui_support import sql
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.runs import RunSummary, list_runs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.project.errors import ProjectError
from zymi_tui.tui.model import RunKey, RunsModel, format_duration, format_size
from zymi_tui.tui.source import knobs_of
from zymi_tui.tui.state.events import RUN_GROUP, EventsModel, Header
from zymi_tui.tui.state.graph import StepDef, build_graph, load_pipeline_steps, ranks_of
from zymi_tui.tui.state.node_states import NodeStates
from zymi_tui.tui.state.plot import collect_calls, downsample


async def _events(name: str, stream: str | None = None) -> list:  # type: ignore[type-arg]
    async with await SqliteReader.open(oracle_db(name)) as r:
        if stream is None:
            stream = (await list_runs(r))[0].stream_id
        return await r.read_stream(stream, include_steps=True)


def test_durations_use_zymis_three_forms() -> None:
    assert format_duration(1753) == "1.753s"
    assert format_duration(61_000) == "1:01"
    assert format_duration(3_723_000) == "1:02:03"
    assert format_duration(None) == "—"
    assert format_size(999) == "999 B"
    assert format_size(11_900) == "11.9k"


async def test_chat_stream_splits_into_turns_under_a_header() -> None:
    async with await SqliteReader.open(oracle_db("chat_profile")) as r:
        model = RunsModel()
        model.set_runs(await list_runs(r, turns=True))
    q = "SELECT stream_id, COUNT(*) FROM events WHERE kind_tag='pipeline_requested' GROUP BY 1"
    per_stream = dict(sql(oracle_db("chat_profile"), q))
    headers = [row for row in model.rows if not row.is_turn]
    turns = [row for row in model.rows if row.is_turn]
    assert {h.key.stream_id for h in headers} == set(per_stream)
    assert len(turns) == sum(n for n in per_stream.values() if n > 1)  # type: ignore[misc]
    chat42 = [t for t in turns if t.key.stream_id == "chat-42"]
    assert [t.summary.turn for t in chat42] == list(range(1, per_stream["chat-42"] + 1))  # type: ignore[operator]
    model.search = "chat-7"
    model.rebuild()
    assert {row.key.stream_id for row in model.rows} == {"chat-7"}


async def test_plot_points_are_the_recorded_calls_and_masking_starts_at_iteration_12() -> None:
    expected = json.loads((ORACLE / "coding_default" / "expected.json").read_text())
    steps = collect_calls(await _events("coding_default"), window=10)
    calls = steps["work"].calls
    agent = [e for e in expected if e["iteration"] > 0]
    assert [c.chars for c in calls] == [e["approx_context_chars"] for e in agent]
    assert [c.global_id for c in calls] == [e["global_id"] for e in agent]
    # oracle README: "masking starts at iteration 12" under the default window of 10
    assert calls[steps["work"].masking_from - 1].iteration == 12  # type: ignore[operator]


async def test_compactions_are_markers_not_points() -> None:
    events = await _events("coding_compaction")
    steps = collect_calls(events, window=10)
    compacted = sql(oracle_db("coding_compaction"), "SELECT COUNT(*) FROM events WHERE kind_tag='context_compacted'")
    assert len(steps["work"].compactions) == compacted[0][0] == 12
    started = sql(oracle_db("coding_compaction"),
                  "SELECT data FROM events WHERE kind_tag='llm_call_started'")  # fmt: skip
    agent_calls = [d for (d,) in started if '"iteration":0' not in str(d)]
    assert len(steps["work"].calls) == len(agent_calls)


async def test_usage_input_tokens_are_paired_with_their_call() -> None:
    events = await _events("coding_default")
    steps = collect_calls(events)
    rows = sql(oracle_db("coding_default"),
               "SELECT data FROM events WHERE kind_tag='llm_call_completed' ORDER BY id")  # fmt: skip
    recorded = [json.loads(str(d))["kind"]["data"]["usage"]["input_tokens"] for (d,) in rows]
    assert [c.input_tokens for c in steps["work"].calls] == recorded


def test_downsample_keeps_spikes_and_drops_within_the_budget() -> None:
    xs = [float(i) for i in range(10_000)]
    ys = [float(i % 100) for i in range(10_000)]
    ys[5_000] = 1e6  # a spike
    ys[7_777] = -5.0  # a drop
    dx, dy = downsample(xs, ys, 200)
    assert len(dx) <= 200
    assert 1e6 in dy and -5.0 in dy
    assert dx == sorted(dx)
    assert downsample([1.0, 2.0], [3.0, 4.0], 200) == ([1.0, 2.0], [3.0, 4.0])


async def test_events_grouped_by_step_with_run_stream_first() -> None:
    events = await _events("coding_default")
    m = EventsModel()
    m.set_events(events)
    headers = [it for it in m.layout.items if isinstance(it, Header)]
    assert [h.group for h in headers] == [RUN_GROUP, "work"]
    stream = events[0].event.stream_id
    counts = dict(sql(oracle_db("coding_default"), "SELECT stream_id, COUNT(*) FROM events GROUP BY 1"))
    assert headers[0].count == counts[stream]
    assert headers[1].count == counts[stream + ":step:work"]
    assert m.layout.line_count == len(events) + 2


async def test_expand_shows_the_full_tool_result_and_keeps_the_cursor() -> None:
    events = await _events("coding_default")
    m = EventsModel(width=100)
    m.set_events(events)
    big = max((se for se in events if se.event.tag == "tool_call_completed"),
              key=lambda se: len(se.event.kind.result))  # type: ignore[union-attr]  # fmt: skip
    assert m.jump_to(big.global_id)
    before = m.layout.line_count
    m.toggle_expand()
    text = "".join(line.strip() for line in m.detail_lines(big))
    result = big.event.kind.result  # type: ignore[union-attr]
    assert len(result) > 200  # longer than zymi's result_preview
    assert "".join(result.split())[:2000] in "".join(text.split())
    assert m.layout.line_count == before + len(m.detail_lines(big))
    m.append([])
    assert m.cursor_gid == big.global_id


async def test_kind_and_step_filters() -> None:
    events = await _events("coding_default")
    m = EventsModel()
    m.set_events(events)
    m.kinds = {"llm_call_started"}
    m.relayout()
    n = sql(oracle_db("coding_default"), "SELECT COUNT(*) FROM events WHERE kind_tag='llm_call_started'")[0][0]
    assert m.layout.visible_count == n
    m.kinds = None
    m.step = RUN_GROUP
    m.relayout()
    assert all(":step:" not in row[1] for row in m.layout.items if not isinstance(row, Header))


async def test_compaction_links_to_the_events_it_replaced() -> None:
    events = await _events("coding_compaction")
    m = EventsModel()
    m.set_events(events)
    comp = next(se for se in events if se.event.tag == "context_compacted")
    lo, hi = comp.event.kind.replaces_seq_range  # type: ignore[union-attr]
    replaced = m.replaced_by(comp)
    assert [seq for _, _, seq, _ in replaced] == list(range(lo, hi + 1))


def test_graph_from_the_project_and_zymis_fallback(tmp_path: Path) -> None:
    steps = load_pipeline_steps(ORACLE / "memory" / "project", "main")
    assert steps and all(isinstance(s, StepDef) for s in steps)
    with pytest.raises(ProjectError, match=r"no project\.yml"):
        load_pipeline_steps(tmp_path, "main")
    (tmp_path / "project.yml").write_text("name: p\n")
    with pytest.raises(ProjectError, match="not found"):
        load_pipeline_steps(tmp_path, "main")
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "main.yml").write_text("steps: [unclosed")
    with pytest.raises(ProjectError, match="invalid YAML"):
        load_pipeline_steps(tmp_path, "main")
    assert ranks_of([StepDef("a", (), ""), StepDef("b", ("a",), ""), StepDef("c", ("a",), ""),
                     StepDef("d", ("b", "c"), "")]) == {"a": 0, "b": 1, "c": 1, "d": 2}  # fmt: skip


async def test_graph_node_status_and_llm_calls() -> None:
    events = await _events("coding_default")
    steps = load_pipeline_steps(ORACLE / "coding_default" / "project", "main")
    g = build_graph("main", steps, None, NodeStates.of(events), collect_calls(events))
    (node,) = g.nodes
    expected = json.loads((ORACLE / "coding_default" / "expected.json").read_text())
    agent = [e for e in expected if e["iteration"] > 0]
    assert (node.id, node.status, node.llm_calls, node.last_chars) == (
        "work", "ok", len(agent), agent[-1]["approx_context_chars"])  # fmt: skip
    fallback = build_graph("main", None, "pipelines/main.yml not found", NodeStates.of(events), collect_calls(events))
    assert fallback.banner and "not loadable" in fallback.banner
    assert [n.id for n in fallback.nodes] == ["work"]


def test_caps_come_from_project_yml_or_the_engine_defaults(tmp_path: Path) -> None:
    knobs, _ = knobs_of(ORACLE / "chat_profile" / "project")
    assert (knobs.soft_cap_chars, knobs.hard_cap_chars, knobs.observation_window) == (40_000, 80_000, 2)
    knobs, why = knobs_of(None)
    assert (knobs.soft_cap_chars, knobs.hard_cap_chars, knobs.observation_window) == (400_000, 600_000, 10)
    (tmp_path / "project.yml").write_text("runtime: [broken")
    knobs, why = knobs_of(tmp_path)
    assert (knobs.soft_cap_chars, knobs.hard_cap_chars) == (400_000, 600_000) and "engine defaults" in why


def test_runs_model_keeps_peaks_by_key() -> None:
    m = RunsModel()
    assert m.set_peak(RunKey("s"), 10)
    assert not m.set_peak(RunKey("s"), 5)
    assert m.peaks[RunKey("s")] == 10


def test_a_listed_runs_peak_holds_no_copy_of_its_ids() -> None:
    """Peaks come keyed by ids read from the rows (new strings each time): a listed run's is kept under its row's
    key. Main kept the key it was handed: ~270 B a turn (the key, its stream id and correlation id); now ~80 (the
    dict's entry, its int)."""
    n = 3000
    cids = [f"{k:08d}-0000-4000-8000-000000000000" for k in range(n)]
    summaries = [
        RunSummary("chat-long", "chat", cid, k, 5, "ok", {}, None, None, None, k, k + 1, n)
        for k, cid in enumerate(cids)
    ]
    m = RunsModel()
    m.set_runs(summaries)
    tracemalloc.start()
    try:
        for k in range(n):
            stream, cid = "".join(["chat-", "long"]), "".join([cids[k][:8], cids[k][8:]])  # (new strings)
            assert m.set_peak(RunKey(stream, cid), 1000 + k)
            assert m.set_peak(RunKey(stream), 1000 + k)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [row.peak_chars for row in m.rows[:3]] == [1000 + n - 1, 1000, 1001]  # (the stream's header, its turns)
    assert held / n < 100, f"{held / n:.0f} B a turn"


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("sparse", [True, False])
async def test_appending_lays_out_as_a_fresh_load(grouped: bool, sparse: bool) -> None:
    """Live events added one batch at a time give the list a whole load gives (in place or laid out again)."""
    events = await _events("coding_compaction")
    for cut in (len(events) // 3, len(events) - 5):
        m = EventsModel(group_by_step=grouped)
        if sparse:
            m.set_index(
                RunIndex((se.global_id, se.event.stream_id, se.event.sequence, se.event.tag) for se in events[:cut]),
                events[:cut],  # read (an expanded event's lines are counted once it is read)
            )
        else:
            m.set_events(events[:cut])
        m.end()
        m.toggle_expand()  # an expanded event keeps its lines
        for i in range(cut, len(events), 4):
            m.append(events[i : i + 4])
        whole = EventsModel(group_by_step=grouped, expanded=set(m.expanded))
        whole.set_events(events)
        assert list(m.layout.items) == list(whole.layout.items) and len(whole.layout.items) > cut
        assert m.layout.line_count == whole.layout.line_count
        assert [m.layout.span_of(se.global_id) for se in events] == [
            whole.layout.span_of(se.global_id) for se in events
        ]
