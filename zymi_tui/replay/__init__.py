"""Store-level replay of the context engine (used by `replay`, `context` and the TUI).

Models: the price table read from prices.yml is msgspec `Struct`s (costs.py, checked by
`zymi_tui.project.validation`); the replay's figures are `@dataclass`es.
"""

from zymi_tui.replay.call_context import SAME_TRAJECTORY, CallContext, ReplayError
from zymi_tui.replay.store_replay import context_at, replay_store

__all__ = ["SAME_TRAJECTORY", "CallContext", "ReplayError", "context_at", "replay_store"]
