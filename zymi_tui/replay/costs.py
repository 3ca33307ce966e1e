"""Prices per model (a YAML table the user can edit) and the cost of token counts under them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct, field

from zymi_tui.context.knobs import config_dir
from zymi_tui.errors import UserError
from zymi_tui.project.validation import Refused, convert
from zymi_tui.project.yamlfile import import_yaml

PRICES_FILE = "prices.yml"


class PriceError(UserError):
    """A price table that cannot be used; the message is one line naming the file and the problem."""

    title = "Prices"


Price = Annotated[float, Meta(ge=0)]
Positive = Annotated[float, Meta(gt=0)]


class ModelPrice(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Prices of one model, per `PriceTable.per_tokens` tokens."""

    input: Price
    cached_input: Price | None = None  # None: cached tokens cost the input price
    output: Price


class CacheFamily(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one provider family caches a prompt prefix, and what it bills for it."""

    models: tuple[str, ...] = ()  # model-name prefixes of the family
    providers: tuple[str, ...] = ()  # zymi `llm.provider` values that always mean this family
    mode: Literal["automatic", "explicit"] = "automatic"  # explicit: only up to a cache_control breakpoint
    read: Price | None = None  # x input price; None: the model's cached_input price
    write: Price = 1.0  # x input price for tokens written to the cache
    min_tokens: Annotated[int, Meta(ge=0)] = 1024  # the shortest cacheable prefix
    # model-name prefix -> its own shortest cacheable prefix (the longest matching prefix wins)
    min_tokens_by_model: dict[str, int] = field(default_factory=dict)
    step_tokens: Annotated[int, Meta(gt=0)] = 1  # the cached part grows in steps of this many tokens
    ttl_seconds: Positive = 300  # unused this long, the prefix is gone

    def for_model(self, model: str | None) -> CacheFamily:
        """The family with `min_tokens` of `model` (its longest prefix in `min_tokens_by_model`)."""
        hits = [pre for pre in self.min_tokens_by_model if model and model.startswith(pre)]
        if not hits:
            return self
        return msgspec.structs.replace(self, min_tokens=self.min_tokens_by_model[max(hits, key=len)])


class PriceTable(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    currency: str = "USD"
    per_tokens: Annotated[int, Meta(gt=0)] = 1_000_000
    models: dict[str, ModelPrice] = field(default_factory=dict)
    cache: dict[str, CacheFamily] | None = None  # None: the built-in table's families

    def cache_family(self, model: str | None, provider: str | None) -> tuple[str, CacheFamily] | None:
        """The family of a provider that names one (zymi's anthropic provider), else of the model name
        (longest prefix), else of the provider; with the model's own minimum cacheable prefix."""
        found = self._family(model, provider)
        return None if found is None else (found[0], found[1].for_model(model))

    def _family(self, model: str | None, provider: str | None) -> tuple[str, CacheFamily] | None:
        families = self.cache if self.cache is not None else builtin_cache_families()
        for name, fam in families.items():
            if provider and provider in fam.providers and fam.mode == "explicit":
                return name, fam
        if model:
            hits = [(len(pre), name) for name, fam in families.items() for pre in fam.models if model.startswith(pre)]
            if hits:
                name = max(hits)[1]
                return name, families[name]
        for name, fam in families.items():
            if provider and provider in fam.providers:
                return name, fam
        return None

    def price_for(self, model: str | None) -> tuple[str, ModelPrice] | None:
        """The entry for `model`: exact name, else the longest entry that is a prefix of it."""
        if not model:
            return None
        if model in self.models:
            return model, self.models[model]
        prefixes = [name for name in self.models if model.startswith(name)]
        if not prefixes:
            return None
        best = max(prefixes, key=len)
        return best, self.models[best]


@dataclass(frozen=True)
class Cost:
    """Money for one call or a sum of calls, split the way providers bill it."""

    input: float = 0.0
    cached_input: float = 0.0
    output: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.cached_input + self.output + self.cache_write

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.cached_input + other.cached_input,
            self.output + other.output,
            self.cache_write + other.cache_write,
        )


def cost_of(
    table: PriceTable,
    price: ModelPrice,
    *,
    input_tokens: int,
    cached_input_tokens: int = 0,
    output_tokens: int = 0,
    cache_creation_tokens: int = 0,
    family: CacheFamily | None = None,
) -> Cost:
    """`input_tokens` is the whole prompt, cached and cache-written parts included (zymi's usage);
    neither is added twice. Cached reads cost the family's `read` multiplier of the input price when
    it has one, else the model's `cached_input` price; cache writes cost `write` x the input price."""
    cached = min(max(cached_input_tokens, 0), input_tokens)
    written = min(max(cache_creation_tokens, 0), input_tokens - cached)
    fresh = input_tokens - cached - written
    if family is not None and family.read is not None:
        cached_price = family.read * price.input
    else:
        cached_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input * (family.write if family is not None else 1.0)
    per = table.per_tokens
    return Cost(
        fresh * price.input / per, cached * cached_price / per, output_tokens * price.output / per,
        written * write_price / per,
    )  # fmt: skip


def builtin_cache_families() -> dict[str, CacheFamily]:
    table = parse_prices(default_prices_text(), "built-in prices.yml")
    return dict(table.cache or {})


def default_prices_text() -> str:
    from importlib import resources  # (with tempfile and random: not loaded by a replay that reads no price)

    return resources.files("zymi_tui.data").joinpath(PRICES_FILE).read_text(encoding="utf-8")


def user_prices_path() -> Path:
    return config_dir() / PRICES_FILE


def parse_prices(text: str, label: str) -> PriceTable:
    yaml = import_yaml()  # (not loaded by a replay that reads no price)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise PriceError(f"{label}: not valid YAML{where}") from None
    if not isinstance(raw, dict):
        raise PriceError(f"{label}: expected a mapping with `models:` (model -> input/cached_input/output)")
    try:
        return convert(raw, PriceTable)
    except Refused as e:
        raise PriceError(
            f"{label}: `{e.path}`: {e.problem}; accepted: models: {{NAME: {{input: USD, cached_input: USD, "
            "output: USD}} per per_tokens tokens"
        ) from None


def load_prices(path: Path | None = None) -> PriceTable:
    """`path`, else the user's prices.yml if it exists, else the table shipped with the package."""
    if path is None and user_prices_path().is_file():
        path = user_prices_path()
    if path is None:
        return parse_prices(default_prices_text(), "built-in prices.yml")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PriceError(f"{path}: cannot read the price table ({e.strerror or e})") from None
    return parse_prices(text, str(path))


@dataclass(frozen=True)
class Pricing:
    """The price table's entry for a model (if any) and the cache family of its provider (if any)."""

    price: tuple[PriceTable, ModelPrice] | None
    price_entry: str | None
    family: tuple[str, CacheFamily] | None

    @property
    def cache_family(self) -> CacheFamily | None:
        return self.family[1] if self.family else None


def pricing(prices: PriceTable | None, model: str | None, provider: str | None) -> Pricing:
    """How calls of `model` (served by `provider`) are priced under `prices`."""
    found = prices.price_for(model) if prices is not None else None
    family = prices.cache_family(model, provider) if prices is not None else None
    return Pricing(None if found is None or prices is None else (prices, found[1]), found[0] if found else None, family)
