"""What the pipeline graph reads of a run's workflow events: its nodes in the order they started and the status
of each, folded as the events come. A long run's collector kept every such event whole (long_1m: 11,496, with
their stored text, ~10 MB held to the end; issue 34: the dashboard at a million events in 100 MB)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zymi_tui.events.stored import StoredEvent


@dataclass(slots=True)
class NodeStates:
    started: list[str] = field(default_factory=list)  # node ids, in the order they first started
    status: dict[str, str] = field(default_factory=dict)  # node id -> running | ok | failed | skipped

    @classmethod
    def of(cls, events: Iterable[StoredEvent]) -> NodeStates:
        """The states after these events (others than workflow nodes' are ignored)."""
        nodes = cls()
        for se in events:
            nodes.feed(se.event.kind)
        return nodes

    def feed(self, kind: object) -> None:
        """One event's kind (decoded); other kinds than the nodes' start, completion and skip change nothing."""
        # the event readers load with the first decoded event, not with the dashboard's first frame
        from zymi_tui.events import kinds as k

        if isinstance(kind, k.WorkflowNodeStarted):
            if kind.node_id not in self.started:
                self.started.append(kind.node_id)
            self.status[kind.node_id] = "running"
        elif isinstance(kind, k.WorkflowNodeCompleted):
            self.status[kind.node_id] = "ok" if kind.success else "failed"
        elif isinstance(kind, k.StepSkipped):
            self.status[kind.step_id] = "skipped"

    def copy(self) -> NodeStates:
        return NodeStates(list(self.started), dict(self.status))
