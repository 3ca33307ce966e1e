"""How a run stopped by Ctrl-C ends in the store: its sealing `PipelineCompleted` (written by `run`,
`resume` and `serve`) and the watch that tells a command whether its run ended that way."""

from __future__ import annotations

import msgspec

from zymi_tui.engine.recorder import Recorder
from zymi_tui.events.kinds import PipelineCompleted
from zymi_tui.events.stored import StoredEvent

INTERRUPTED = "interrupted (Ctrl-C)"


class SealWatch(msgspec.Struct):
    """A recorder listener: the last `PipelineCompleted` this process wrote, i.e. how its run ended."""

    sealed: PipelineCompleted | None = None

    def __call__(self, stored: StoredEvent) -> None:
        if isinstance(stored.event.kind, PipelineCompleted):
            self.sealed = stored.event.kind

    @property
    def interrupted(self) -> bool:
        return self.sealed is not None and self.sealed.error == INTERRUPTED


async def seal_interrupted(
    recorder: Recorder, stream: str, pipeline: str, correlation_id: str, source: str = "engine"
) -> None:
    """Write the `PipelineCompleted` of a run stopped by Ctrl-C (success false), then checkpoint."""
    done = PipelineCompleted(pipeline=pipeline, success=False, final_output=None, error=INTERRUPTED)
    await recorder.emit(stream, done, source, correlation_id)
    await recorder.checkpoint()
