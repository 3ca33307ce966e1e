"""ContextKnobs is a record (zymi_tui.record): it must accept, make and refuse exactly as the pydantic model it
replaced (declared again below, as it was), whether made from keywords or a mapping."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs
from zymi_tui.record import Invalid


class PydanticKnobs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, title="ContextKnobs")

    observation_window: int = 10
    soft_cap_chars: int = 400_000
    hard_cap_chars: int = 600_000
    min_tail_turns: int = 4
    forget_after_turns: int | None = None

    @model_validator(mode="after")
    def _check(self) -> PydanticKnobs:
        for name in KNOB_NAMES:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name}={value}: must be an integer >= 0")
        if self.hard_cap_chars < self.soft_cap_chars:
            raise ValueError(f"hard_cap_chars={self.hard_cap_chars}: must be >= soft_cap_chars ({self.soft_cap_chars})")
        return self


def outcome(make: Any, doc: dict[str, Any]) -> tuple[Any, ...]:
    try:
        made = make(doc)
    except (ValidationError, Invalid) as e:
        errors = [{**d, "ctx": {k: str(v) for k, v in d.get("ctx", {}).items()}} for d in e.errors(include_url=False)]
        return "refused", str(e).replace("PydanticKnobs(", "ContextKnobs("), errors
    return "made", made.model_dump(), made.model_fields_set, repr(made).replace("PydanticKnobs(", "ContextKnobs(")


VALUES = [None, 0, 1, -1, 5, True, "3", 2.0, 10**9, [], {}]
BASES: list[dict[str, Any]] = [{}, {"soft_cap_chars": 100, "hard_cap_chars": 50}, {"forget_after_turns": 3}]
DOCS = [{**base, key: value} for key in [*KNOB_NAMES, "nope"] for value in VALUES for base in BASES]


@pytest.mark.parametrize("how", ["model_validate", "keywords"])
def test_every_knob_given_every_value_agrees_with_pydantic(how: str) -> None:
    def make(cls: Any) -> Any:
        return cls.model_validate if how == "model_validate" else (lambda doc: cls(**doc))

    for doc in DOCS:
        assert outcome(make(ContextKnobs), doc) == outcome(make(PydanticKnobs), doc), doc


def test_frozen_hashable_copied_and_pickled() -> None:
    knobs = ContextKnobs(soft_cap_chars=5)
    assert knobs == ContextKnobs.model_validate({"soft_cap_chars": 5}) != ContextKnobs()
    assert {knobs: 1}[ContextKnobs(soft_cap_chars=5)] == 1
    assert pickle.loads(pickle.dumps(knobs)) == knobs == copy.deepcopy(knobs)
    with pytest.raises(AttributeError):
        knobs.soft_cap_chars = 3  # type: ignore[misc]
    changed = knobs.model_copy(update={"hard_cap_chars": 7})
    assert changed.hard_cap_chars == 7 and changed.model_fields_set == {"soft_cap_chars", "hard_cap_chars"}
    assert knobs.hard_cap_chars == 600_000
