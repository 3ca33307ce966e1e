"""Cost with cache: recorded cache usage summed exactly and priced as by hand; the cache model's
prefix rounding and lifetime on hand-made numbers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ORACLE, copy_store, zymi_tui_bin
from zymi_tui.replay.cache import predict
from zymi_tui.replay.costs import CacheFamily


@dataclass(frozen=True)
class CacheInput:
    """A sent call as the cache model reads it (`replay.cache.CacheCall`), made by hand."""

    stream_id: str
    ts_ns: int | None
    tokens: int
    chars: int
    reuse_chars: int | None
    whole_previous: bool


PRICES = """per_tokens: 1000000
models:
  oracle-coding: {input: 2.0, cached_input: 0.5, output: 10.0}
cache:
  oracle: {models: [oracle-], mode: explicit, read: 0.1, write: 1.25, min_tokens: 1024, ttl_seconds: 300}
"""


def test_recorded_cache_usage_is_summed_and_priced_exactly(tmp_path: Path) -> None:
    store = copy_store(ORACLE / "coding_default" / "events.db", tmp_path / "s")
    with sqlite3.connect(store) as db:  # known cache figures on every call: half read, 7 written
        db.execute(
            "UPDATE events SET data = json_set(data, "
            "'$.kind.data.usage.cached_input_tokens', json_extract(data, '$.kind.data.usage.input_tokens') / 2, "
            "'$.kind.data.usage.cache_creation_tokens', 7) WHERE kind_tag = 'llm_call_completed'"
        )
        inp, cached, written, out = db.execute(
            "SELECT sum(json_extract(data, '$.kind.data.usage.input_tokens')), "
            "sum(json_extract(data, '$.kind.data.usage.cached_input_tokens')), "
            "sum(json_extract(data, '$.kind.data.usage.cache_creation_tokens')), "
            "sum(json_extract(data, '$.kind.data.usage.output_tokens')) FROM events "
            "WHERE kind_tag = 'llm_call_completed'"
        ).fetchone()
    assert cached > 0
    prices = tmp_path / "prices.yml"
    prices.write_text(PRICES, encoding="utf-8")
    proc = subprocess.run(
        [zymi_tui_bin(), "compare", str(store), "--project", str(ORACLE / "coding_default" / "project"),
         "--profiles", "recorded,chat", "--prices", str(prices), "--model", "oracle-coding", "--format", "json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    recorded = next(p for p in doc["profiles"] if p["name"] == "recorded")["total"]
    assert recorded["tokens_sum"] == inp
    assert recorded["cached_tokens_recorded"] == cached
    assert recorded["cache_creation_tokens_recorded"] == written
    # by hand: fresh at 2.0, reads at 0.1 x 2.0, writes at 1.25 x 2.0, output at 10.0 per million
    by_hand = ((inp - cached - written) * 2.0 + cached * 0.2 + written * 2.5 + out * 10.0) / 1e6
    assert recorded["cost_recorded_cache"]["total"] == pytest.approx(by_hand, rel=1e-12)
    assert recorded["cost"]["total"] == pytest.approx(by_hand, rel=1e-12)  # the main cost row prices it too
    table = subprocess.run(
        [zymi_tui_bin(), "compare", str(store), "--project", str(ORACLE / "coding_default" / "project"),
         "--profiles", "recorded,chat", "--prices", str(prices), "--model", "oracle-coding", "--format", "md"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    cost_row = next(line for line in table.splitlines() if line.startswith("| cost |"))
    assert f"recorded cache: {cached:,} read, {written:,} written" in cost_row
    advice = json.loads(subprocess.run(
        [zymi_tui_bin(), "advise", str(store), "--project", str(ORACLE / "coding_default" / "project"),
         "--prices", str(prices), "--model", "oracle-coding", "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout)  # fmt: skip
    base = advice["baseline"]
    assert base["cost_recorded_cache"] == round(by_hand, 6)
    assert (base["cached_tokens_recorded"], base["cache_creation_tokens_recorded"]) == (cached, written)
    # zymi sends no cache_control breakpoint: an explicit family caches nothing
    assert recorded["cached_tokens_modelled"] == 0
    assert recorded["cost_with_cache"]["total"] == pytest.approx((inp * 2.0 + out * 10.0) / 1e6, rel=1e-12)
    assert doc["cache_family"] == "oracle"
    replay = subprocess.run(
        [zymi_tui_bin(), "replay", str(store), "--project", str(ORACLE / "coding_default" / "project"), "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    totals = json.loads(replay.stdout.splitlines()[-1])
    assert totals["recorded_cached_input_tokens_sum"] == cached
    assert totals["recorded_cache_creation_tokens_sum"] == written


def test_automatic_cache_rounds_to_steps_and_expires() -> None:
    fam = CacheFamily(mode="automatic", min_tokens=1024, step_tokens=128, ttl_seconds=300)
    s = 1_000_000_000
    calls = [
        CacheInput("a", 0, 3000, 12000, 0, True),  # the stream's first call: nothing cached yet
        CacheInput("a", 10 * s, 3000, 12000, 8000, True),  # prefix 2000 tokens -> 1024 + 7 x 128
        CacheInput("a", 20 * s, 3000, 12000, 3000, False),  # prefix 750 tokens: under the minimum
        CacheInput("a", 400 * s, 3000, 12000, 12000, True),  # 380 s later: the cache expired
    ]
    got = [(p.cached, p.written, p.expired) for p in predict(calls, fam)]
    assert got == [(0, 0, False), (1920, 0, False), (0, 0, False), (0, 0, True)]


def test_explicit_cache_with_breakpoints_reads_whole_previous_and_writes_the_rest() -> None:
    fam = CacheFamily(mode="explicit", read=0.1, write=1.25, min_tokens=1024)
    calls = [CacheInput("a", 0, 2000, 8000, 0, True), CacheInput("a", 1, 3000, 12000, 8000, True)]
    assert [(p.cached, p.written) for p in predict(calls, fam)] == [(0, 0), (0, 0)]  # as zymi sends them
    got = [(p.cached, p.written) for p in predict(calls, fam, breakpoints=True)]
    assert got == [(0, 2000), (2000, 1000)]


# the providers' published minimum cacheable prompt (Anthropic, late 2026): 1,024 (Sonnet 4/4.5,
# Opus 4/4.1, Sonnet 3.7); 2,048 (Sonnet 4.6, Haiku 3/3.5); 4,096 (Opus 4.5/4.6, Haiku 4.5); OpenAI 1,024
SPEC_MINIMUM = {
    "claude-sonnet-4-20250514": 1024, "claude-sonnet-4-5": 1024, "claude-opus-4-20250514": 1024,
    "claude-opus-4-1": 1024, "claude-3-7-sonnet-20250219": 1024, "claude-sonnet-4-6": 2048,
    "claude-3-haiku-20240307": 2048, "claude-3-5-haiku-20241022": 2048, "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096, "claude-haiku-4-5": 4096, "gpt-4o": 1024, "gpt-4.1-mini": 1024,
}  # fmt: skip


@pytest.mark.parametrize("model", sorted(SPEC_MINIMUM))
def test_built_in_minimum_cacheable_prefix_per_model(model: str) -> None:
    from zymi_tui.replay.costs import load_prices

    found = load_prices().cache_family(model, None)
    assert found is not None and found[1].min_tokens == SPEC_MINIMUM[model]


def test_a_users_table_sets_a_models_minimum(tmp_path: Path) -> None:
    from zymi_tui.replay.costs import parse_prices

    table = parse_prices(
        PRICES.replace("min_tokens: 1024,", "min_tokens: 1024, min_tokens_by_model: {oracle-big: 3000},"), "t"
    )
    assert table.cache_family("oracle-big-1", None)[1].min_tokens == 3000  # type: ignore[index]
    assert table.cache_family("oracle-coding", None)[1].min_tokens == 1024  # type: ignore[index]
