"""The pipeline graph of a run: steps by rank (zymi's layout), status from the run's events.

Pure apart from `load_pipeline_steps` (one small YAML read, done in a worker). Topology comes
from `pipelines/<name>.yml` (or `.yaml`) as it is now; when that file is missing, unreadable or
no longer matches the run, zymi's fallback is used: one node per started step, in order, with a
banner saying why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from zymi_tui.events import kinds as k
from zymi_tui.events.envelope import StoredEvent
from zymi_tui.events.store import step_of

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


class PipelineError(Exception):
    pass


def load_pipeline_steps(project: Path | None, name: str) -> list[StepDef]:
    """Steps of `pipelines/<name>.yml` (or .yaml); PipelineError with a one-line reason otherwise."""
    if project is None:
        raise PipelineError("no project folder (pass -d DIR to show the pipeline's graph)")
    for ext in ("yml", "yaml"):
        path = project / "pipelines" / f"{name}.{ext}"
        if path.is_file():
            break
    else:
        raise PipelineError(f"pipelines/{name}.yml not found in {project}")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise PipelineError(f"{path.name} is not valid YAML: {str(e).splitlines()[0]}") from None
    steps = doc.get("steps") if isinstance(doc, dict) else None
    if not isinstance(steps, list) or not steps:
        raise PipelineError(f"{path.name} has no `steps:` list")
    out: list[StepDef] = []
    for s in steps:
        if not isinstance(s, dict) or not isinstance(s.get("id"), str):
            raise PipelineError(f"{path.name}: a step without an `id`")
        deps = s.get("depends_on") or []
        if isinstance(deps, str):
            deps = [deps]
        what = "—"
        if "agent" in s:
            what = f"agent: {s['agent']}"
        elif "tool" in s:
            what = f"tool: {s['tool']}"
        elif "ask" in s:
            ask = s["ask"]
            what = f"ask: {ask.get('channel', 'caller') if isinstance(ask, dict) else ask}"
        out.append(StepDef(s["id"], tuple(str(d) for d in deps), what))
    return out


def ranks_of(steps: list[StepDef]) -> dict[str, int]:
    """rank = max(rank of dependencies) + 1, roots 0 (zymi's graph.rs); unknown deps are ignored."""
    by_id = {s.id: s for s in steps}
    memo: dict[str, int] = {}

    def rank(sid: str, seen: frozenset[str]) -> int:
        if sid in memo:
            return memo[sid]
        deps = [d for d in by_id[sid].depends_on if d in by_id and d not in seen]
        r = max((rank(d, seen | {sid}) + 1 for d in deps), default=0)
        memo[sid] = r
        return r

    return {s.id: rank(s.id, frozenset()) for s in steps}


def build_graph(pipeline: str, steps: list[StepDef] | None, problem: str | None,
                events: Iterable[StoredEvent]) -> Graph:  # fmt: skip
    """Nodes with status, LLM call count and last context size, from the run's events."""
    events = list(events)
    started: list[str] = []
    status: dict[str, str] = {}
    calls: dict[str, int] = {}
    last: dict[str, int] = {}
    for se in events:
        d = se.event.kind
        if isinstance(d, k.WorkflowNodeStarted):
            if d.node_id not in started:
                started.append(d.node_id)
            status[d.node_id] = "running"
        elif isinstance(d, k.WorkflowNodeCompleted):
            status[d.node_id] = "ok" if d.success else "failed"
        elif isinstance(d, k.StepSkipped):
            status[d.step_id] = "skipped"
        elif isinstance(d, k.LlmCallStarted) and d.iteration > 0 and (step := step_of(se.event.stream_id)):
            calls[step] = calls.get(step, 0) + 1
            last[step] = d.approx_context_chars
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
        graph.nodes.append(Node(sd.id, sd.what, ranks[sd.id], status.get(sd.id, "pending"), calls.get(sd.id, 0),
                                last.get(sd.id)))  # fmt: skip
    return graph
