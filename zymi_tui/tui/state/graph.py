"""The pipeline graph of a run: steps by rank (zymi's layout), status from the run's events.

Pure apart from `load_pipeline_steps` (the project read, done in a worker). Topology comes
from the project's pipeline `<name>` as it is now; when that file is missing, unreadable or
no longer matches the run, zymi's fallback is used: one node per started step, in order, with a
banner saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zymi_tui.project.errors import ProjectError
from zymi_tui.project.levels import step_levels
from zymi_tui.project.reader import read_project
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.state.node_states import NodeStates
from zymi_tui.tui.state.plot import StepCalls

GLYPH = {"pending": "·", "running": "◷", "ok": "✓", "failed": "✗", "skipped": "⊘"}


@dataclass(frozen=True, slots=True)
class StepDef:
    id: str
    depends_on: tuple[str, ...]
    what: str  # "agent: coder" | "tool: say" | "ask: human"


@dataclass(slots=True)
class Node:
    id: str
    what: str
    rank: int
    status: str = "pending"
    llm_calls: int = 0
    last_chars: int | None = None


@dataclass(slots=True)
class Graph:
    pipeline: str
    nodes: list[Node] = field(default_factory=list)
    banner: str | None = None  # why the fallback is shown, or what changed

    def ranks(self) -> list[list[Node]]:
        out: list[list[Node]] = []
        for n in self.nodes:
            while len(out) <= n.rank:
                out.append([])
            out[n.rank].append(n)
        return out


def load_pipeline_steps(project: Path | None, name: str) -> list[StepDef]:
    """Steps of the project's pipeline `name`; ProjectError with a one-line reason otherwise."""
    if project is None:
        raise ProjectError("no project folder (pass -d DIR to show the pipeline's graph)")
    spec = read_project(project).pipeline(name)
    return [StepDef(s.id, s.depends_on, s.what) for s in spec.steps.values()]


def ranks_of(steps: list[StepDef]) -> dict[str, int]:
    """rank = max(rank of dependencies) + 1, roots 0 (zymi's graph.rs); unknown deps are ignored."""
    return step_levels({s.id: s.depends_on for s in steps}).of()


def build_graph(pipeline: str, steps: list[StepDef] | None, problem: str | None,
                nodes: NodeStates, calls: dict[str, StepCalls]) -> Graph:  # fmt: skip
    """Nodes with status (from the run's workflow events, as `nodes` folded them), LLM call count and last
    context size (from the plot's calls per step)."""
    started, status = nodes.started, nodes.status
    counts = {step: len(sc.calls) for step, sc in calls.items() if step != RUN_GROUP}
    last = {step: sc.calls[-1].chars for step, sc in calls.items() if step != RUN_GROUP and sc.calls}
    graph = Graph(pipeline)
    if steps is None:
        graph.banner = f"pipeline config not loadable: {problem}; showing the steps that started, in order"
        defs = [StepDef(s, (), "—") for s in started]
        ranks = {s: i for i, s in enumerate(started)}
    else:
        defs = list(steps)
        unknown = [s for s in started if s not in {d.id for d in defs}]
        if unknown:
            graph.banner = f"pipelines/{pipeline}.yml changed since this run: it has no step {', '.join(unknown)}"
            defs += [StepDef(s, (), "— (not in the file)") for s in unknown]
        ranks = ranks_of(defs)
    for sd in defs:
        graph.nodes.append(Node(sd.id, sd.what, ranks[sd.id], status.get(sd.id, "pending"), counts.get(sd.id, 0),
                                last.get(sd.id)))  # fmt: skip
    return graph
