"""The price table: the shipped default, lookup by model name, and costs by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from zymi_tui.replay.costs import PriceError, cost_of, load_prices, parse_prices


def test_default_table_loads_and_matches_by_prefix() -> None:
    table = load_prices(Path(__file__).parents[1] / "zymi_tui" / "data" / "prices.yml")
    found = table.price_for("gpt-4o-mini-2024-07-18")
    assert found is not None and found[0] == "gpt-4o-mini"
    assert table.price_for("oracle-coding") is None
    assert table.price_for(None) is None


def test_cost_splits_cached_and_never_counts_it_twice() -> None:
    table = parse_prices("per_tokens: 1000\nmodels:\n  m: {input: 2, cached_input: 0.5, output: 10}\n", "t")
    price = table.models["m"]
    c = cost_of(table, price, input_tokens=1000, cached_input_tokens=400, output_tokens=100)
    assert (c.input, c.cached_input, c.output) == (1.2, 0.2, 1.0)
    assert c.total == pytest.approx(2.4)
    no_cache_price = parse_prices("per_tokens: 1000\nmodels:\n  m: {input: 2, output: 10}\n", "t")
    assert cost_of(no_cache_price, no_cache_price.models["m"], input_tokens=1000, cached_input_tokens=400).total == 2.0


def test_bad_tables_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(PriceError, match=r"models\.m\.input"):
        parse_prices("models:\n  m: {input: -1, output: 1}\n", "p.yml")
    with pytest.raises(PriceError, match="not valid YAML"):
        parse_prices("models: [\n", "p.yml")
    with pytest.raises(PriceError, match="cannot read"):
        load_prices(tmp_path / "missing.yml")


def test_user_table_wins_over_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZYMI_TUI_CONFIG_DIR", str(tmp_path))
    (tmp_path / "prices.yml").write_text("models:\n  oracle-coding: {input: 1, output: 2}\n")
    assert load_prices().price_for("oracle-coding") is not None
