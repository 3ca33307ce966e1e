"""STAND-IN for the context issue's knobs (CONTEXT_API.md names); replaced at merge by the real module."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ContextKnobs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    observation_window: int = Field(10, ge=0)
    soft_cap_chars: int = Field(400_000, ge=0)
    hard_cap_chars: int = Field(600_000, ge=0)
    min_tail_turns: int = Field(4, ge=0)
    forget_after_turns: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _caps(self) -> ContextKnobs:
        if self.hard_cap_chars < self.soft_cap_chars:
            raise ValueError("hard_cap_chars must be >= soft_cap_chars")
        return self


PROFILES: dict[str, ContextKnobs] = {
    "coding": ContextKnobs(),
    "chat": ContextKnobs(
        observation_window=2, soft_cap_chars=40_000, hard_cap_chars=80_000, min_tail_turns=2, forget_after_turns=12
    ),
    "eval": ContextKnobs(observation_window=1_000_000, soft_cap_chars=10**12, hard_cap_chars=10**12),
}
