"""`zymi-tui advise` on the recorded stores, run as a subprocess: the signals each store must (and
must not) raise, and every recommendation's replayed effect against `zymi-tui compare`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ORACLE, SCENARIOS, copy_store, zymi_tui_bin

PRICES = "per_tokens: 1000000\nmodels:\n  oracle-: {input: 3.0, cached_input: 0.3, output: 15.0}\n"


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _scenario(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A private copy of a recorded store and its project."""
    store = copy_store(ORACLE / name / "events.db", tmp_path / name)
    project = tmp_path / name / "project"
    shutil.copytree(ORACLE / name / "project", project)
    return store, project


def _advise(store: Path, project: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_run("advise", str(store), "--project", str(project), "--json", *extra, env=env))
    return doc


def test_hard_cap_store_reports_hard_cap_exceeded(tmp_path: Path) -> None:
    store, project = _scenario(tmp_path, "hard_cap")
    doc = _advise(store, project)
    found = [f for f in doc["findings"] if f["signal"] == "hard_cap_exceeded"]
    assert len(found) == 1
    assert found[0]["figures"]["hard_cap_chars"] == 6000
    effect = found[0]["recommendation"]["effect"]
    assert effect["hard_cap_failures_before"] == 1 and effect["hard_cap_failures"] == 0


def test_chat_without_runtime_context(tmp_path: Path) -> None:
    store, project = _scenario(tmp_path, "chat_profile")
    doc_yml = yaml.safe_load((project / "project.yml").read_text(encoding="utf-8"))
    del doc_yml["runtime"]["context"]
    (project / "project.yml").write_text(yaml.safe_dump(doc_yml), encoding="utf-8")
    signals = set(_advise(store, project)["signals"])
    assert {"runtime_context_unset", "chat_under_coding_defaults"} <= signals
    # the untouched recording (runtime.context present, the chat profile) raises neither
    signals = set(_advise(ORACLE / "chat_profile" / "events.db", ORACLE / "chat_profile" / "project")["signals"])
    assert not signals & {"runtime_context_unset", "chat_under_coding_defaults"}


@pytest.mark.parametrize("name", ["coding_compaction", "chat_profile", "hard_cap"])
def test_no_knobs_not_biting_where_compaction_or_forgetting_acts(name: str) -> None:
    doc = _advise(ORACLE / name / "events.db", ORACLE / name / "project")
    assert "knobs_not_biting" not in doc["signals"]


def test_knobs_not_biting_on_a_growing_unmanaged_stream() -> None:
    doc = _advise(ORACLE / "memory" / "events.db", ORACLE / "memory" / "project")
    assert "knobs_not_biting" in doc["signals"]


@pytest.mark.parametrize("name", ["hard_cap", "coding_default"])
def test_each_recommendation_equals_compare(tmp_path: Path, name: str) -> None:
    store, project = ORACLE / name / "events.db", ORACLE / name / "project"
    prices = tmp_path / "prices.yml"
    prices.write_text(PRICES, encoding="utf-8")
    doc = _advise(store, project, "--prices", str(prices))
    recs = [f["recommendation"] for f in doc["findings"] if (f.get("recommendation") or {}).get("effect")]
    assert recs, "the store yields replayed recommendations"
    profiles = {r["effect"]["profile"]: r["knobs"] for r in recs}
    config = tmp_path / "config"
    config.mkdir()
    (config / "profiles.yml").write_text(yaml.safe_dump(profiles), encoding="utf-8")
    env = {**os.environ, "ZYMI_TUI_CONFIG_DIR": str(config)}
    for rec in recs:
        effect = rec["effect"]
        cmp = json.loads(
            _run("compare", str(store), "--project", str(project), "--profiles", f"recorded,{effect['profile']}",
                 "--prices", str(prices), "--format", "json", env=env)
        )  # fmt: skip
        before, after = (p["total"] for p in cmp["profiles"])
        assert effect["tokens_sum"] == after["tokens_sum"] and effect["tokens_sum_before"] == before["tokens_sum"]
        assert effect["hard_cap_failures"] == after["hard_cap_failures"]
        assert effect["compactions"] == after["compactions_recorded"] + after["compactions_simulated"]
        assert effect["chars_peak"] == after["chars_peak"]
        assert effect["cache_breaks"] == after["cache_breaks"]
        assert effect["cost_with_cache"] == round(after["cost_with_cache"]["total"], 6)
        assert effect["cost_with_cache"] is not None


HAIKU = "claude-3-5-haiku-20241022"
# every recorded store priced as gpt-4o, and Anthropic copies (the project on zymi's anthropic provider,
# priced as Claude Haiku 3.5: explicit cache, 2,048-token minimum)
CASES = [(name, "gpt-4o") for name in SCENARIOS] + [("coding_default", HAIKU), ("coding_compaction", HAIKU)]


def _case(tmp_path: Path, name: str, model: str) -> tuple[Path, Path]:
    store, project = _scenario(tmp_path, name)
    if model.startswith("claude"):
        doc = yaml.safe_load((project / "project.yml").read_text(encoding="utf-8"))
        doc["llm"] |= {"provider": "anthropic", "model": model}
        (project / "project.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return store, project


def _replay_totals(store: Path, project: Path, knobs: dict[str, int | None] | None = None) -> dict[str, Any]:
    sets = [f"--set={k}={'off' if v is None else v}" for k, v in (knobs or {}).items()]
    totals: dict[str, Any] = json.loads(
        _run("replay", str(store), "--project", str(project), "--json", *sets).splitlines()[-1]
    )
    return totals


def _knob_recommendations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    recs = [f["recommendation"] for f in doc["findings"] if (f.get("recommendation") or {}).get("knobs")]
    return recs + ([doc["best"]] if doc.get("best") else [])


@pytest.mark.parametrize(("name", "model"), CASES)
def test_each_effect_equals_replay_set(tmp_path: Path, name: str, model: str) -> None:
    """The replayed effect of every recommendation is what `zymi-tui replay --set` gives for its knobs, and its
    baseline what `zymi-tui replay` gives for the current ones."""
    store, project = _case(tmp_path, name, model)
    doc = _advise(store, project, "--model", model)
    base = _replay_totals(store, project)
    for rec in _knob_recommendations(doc):
        e, t = rec["effect"], _replay_totals(store, project, rec["knobs"])
        got = (e["chars_sum"], e["chars_peak"], e["compactions"], e["hard_cap_failures"], e["cache_breaks"])
        want = (t["chars_sum"], t["chars_peak"], t["compactions"], t["hard_cap_failures"], t["cache_breaks"])
        assert got == want, rec["text"]
        got = (e["chars_sum_before"], e["chars_peak_before"], e["compactions_before"], e["hard_cap_failures_before"],
               e["cache_breaks_before"])  # fmt: skip
        want = (base["chars_sum"], base["chars_peak"], base["compactions"], base["hard_cap_failures"],
                base["cache_breaks"])  # fmt: skip
        assert got == want


@pytest.mark.parametrize("name", SCENARIOS)
def test_counts_agree_across_advise_replay_and_rent(tmp_path: Path, name: str) -> None:
    """The advice's baseline and its findings' counts are `zymi-tui replay`'s, and its calls and rent are
    `zymi-tui rent`'s (a finding said "68 of 85 agent calls" where the replay's baseline said 81)."""
    store, project = _scenario(tmp_path, name)
    doc = _advise(store, project, "--model", "gpt-4o")
    t, b = _replay_totals(store, project), doc["baseline"]
    assert (b["agent_calls"], b["compactions"], b["hard_cap_failures"]) == (
        t["calls"] - t["compactions"], t["compactions"], t["hard_cap_failures"])  # fmt: skip
    assert (b["cache_breaks"], b["chars_sum"], b["chars_peak"]) == (t["cache_breaks"], t["chars_sum"], t["chars_peak"])
    assert doc["calls"] == b["agent_calls"]
    for f in doc["findings"]:
        if f["signal"] == "cache_breaks":
            assert (f["figures"]["cache_breaks"], f["figures"]["agent_calls"]) == (t["cache_breaks"], b["agent_calls"])
            assert f"{t['cache_breaks']} of {b['agent_calls']} agent calls" in f["summary"]
    rows = [json.loads(line) for line in _run("replay", str(store), "--project", str(project), "--json").splitlines()]
    streams = sorted({r["stream_id"] for r in rows if r.get("kind") == "agent"})
    calls, rent_by_tool = 0, dict[str, int]()
    for stream in streams:
        rent = json.loads(_run("rent", str(store), "--project", str(project), "--step-stream", stream, "--json",
                               "--top", "100000"))  # fmt: skip
        calls += rent["calls"]
        for o in rent["observations"]:
            rent_by_tool[o["tool"]] = rent_by_tool.get(o["tool"], 0) + o["rent_bytes"]
    assert calls == b["agent_calls"]
    for f in doc["findings"]:
        if f["signal"] == "dominant_tool":
            assert f["figures"]["rent_bytes"] == rent_by_tool[f["figures"]["tool"]]


@pytest.mark.parametrize(("name", "model"), CASES)
def test_no_recommendation_raises_cost_in_compare(tmp_path: Path, name: str, model: str) -> None:
    """`zymi-tui compare` (recorded vs the recommended knobs, the same model) prices every recommendation at
    no more hard-cap failures and a lower cost with cache than keeping the current knobs; an Anthropic
    breakpoint is recommended only where its own estimate is lower than the cost now."""
    store, project = _case(tmp_path, name, model)
    doc = _advise(store, project, "--model", model)
    assert doc["objective"]["kind"] == "cost_with_cache"
    recs = _knob_recommendations(doc)
    config = tmp_path / "config"
    config.mkdir()
    (config / "profiles.yml").write_text(yaml.safe_dump({r["effect"]["profile"]: r["knobs"] for r in recs}), "utf-8")
    env = {**os.environ, "ZYMI_TUI_CONFIG_DIR": str(config)}
    for rec in recs:
        e = rec["effect"]
        cmp = json.loads(
            _run("compare", str(store), "--project", str(project), "--profiles", f"recorded,{e['profile']}",
                 "--model", model, "--format", "json", env=env)
        )  # fmt: skip
        before, after = (p["total"] for p in cmp["profiles"])
        assert after["hard_cap_failures"] <= before["hard_cap_failures"]
        cost_before, cost_after = before["cost_with_cache"]["total"], after["cost_with_cache"]["total"]
        assert after["hard_cap_failures"] < before["hard_cap_failures"] or cost_after < cost_before, rec["text"]
        assert (e["cost_with_cache"], e["cost_with_cache_before"]) == (round(cost_after, 6), round(cost_before, 6))
        assert (e["tokens_sum"], e["tokens_sum_before"]) == (after["tokens_sum"], before["tokens_sum"])
        assert doc["baseline"]["cost_with_cache"] == round(cost_before, 6)
        # a trade-off is shown as one: every figure the change makes worse is named with both values
        if after["cache_breaks"] > before["cache_breaks"]:
            assert f"cache breaks {before['cache_breaks']} → {after['cache_breaks']}" in e["tradeoff"]
        if after["tokens_sum"] > before["tokens_sum"]:
            assert any(t.startswith(f"input tokens {before['tokens_sum']:,} → {after['tokens_sum']:,}")
                       for t in e["tradeoff"])  # fmt: skip
    for f in doc["findings"]:
        if f["signal"] == "anthropic_no_cache" and f.get("recommendation"):
            assert f["figures"]["cost_with_breakpoints"] < f["figures"]["cost_now"]
        if f["signal"] == "anthropic_no_cache":
            assert f["figures"]["min_tokens"] == 2048  # Haiku 3.5 (Anthropic: 2,048 tokens)


def test_nothing_to_change_when_no_candidate_beats_the_current_knobs(tmp_path: Path) -> None:
    """coding_compaction's cache breaks: every higher soft cap tried costs more with cache (the advice used to
    recommend soft 16000: breaks 13 -> 15 and cost up); the finding stays, its recommendation says so."""
    store, project = _case(tmp_path, "coding_compaction", "gpt-4o")
    doc = _advise(store, project, "--model", "gpt-4o")
    (f,) = [f for f in doc["findings"] if f["signal"] == "cache_breaks"]
    rec = f["recommendation"]
    assert rec["nothing_to_change"] and rec["knobs"] is None and rec["effect"] is None
    assert rec["text"].startswith("nothing to change") and rec["tried"] >= 2 and "not lower" in rec["rejected"]
    text = _run("advise", str(store), "--project", str(project), "--model", "gpt-4o")
    assert "nothing to change: of" in text
