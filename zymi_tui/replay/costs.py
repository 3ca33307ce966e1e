"""Prices per model (a YAML table the user can edit) and the cost of token counts under them."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zymi_tui.context.knobs import config_dir
from zymi_tui.errors import UserError

PRICES_FILE = "prices.yml"


class PriceError(UserError):
    """A price table that cannot be used; the message is one line naming the file and the problem."""

    title = "Prices"


class ModelPrice(BaseModel):
    """Prices of one model, per `PriceTable.per_tokens` tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # None: cached tokens cost the input price
    output: float = Field(ge=0)


class PriceTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    currency: str = "USD"
    per_tokens: int = Field(default=1_000_000, gt=0)
    models: dict[str, ModelPrice] = Field(default_factory=dict)

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

    @property
    def total(self) -> float:
        return self.input + self.cached_input + self.output

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.input + other.input, self.cached_input + other.cached_input, self.output + other.output)


def cost_of(
    table: PriceTable, price: ModelPrice, *, input_tokens: int, cached_input_tokens: int = 0, output_tokens: int = 0
) -> Cost:
    """`input_tokens` is the whole prompt, cached part included (zymi's usage); it is never added twice."""
    cached = min(max(cached_input_tokens, 0), input_tokens)
    fresh = input_tokens - cached
    cached_price = price.input if price.cached_input is None else price.cached_input
    per = table.per_tokens
    return Cost(fresh * price.input / per, cached * cached_price / per, output_tokens * price.output / per)


def default_prices_text() -> str:
    return resources.files("zymi_tui.data").joinpath(PRICES_FILE).read_text(encoding="utf-8")


def user_prices_path() -> Path:
    return config_dir() / PRICES_FILE


def parse_prices(text: str, label: str) -> PriceTable:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise PriceError(f"{label}: not valid YAML{where}") from None
    if not isinstance(raw, dict):
        raise PriceError(f"{label}: expected a mapping with `models:` (model -> input/cached_input/output)")
    try:
        return PriceTable.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise PriceError(
            f"{label}: `{loc}`: {first['msg']}; accepted: models: {{NAME: {{input: USD, cached_input: USD, "
            "output: USD}}}} per per_tokens tokens"
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
