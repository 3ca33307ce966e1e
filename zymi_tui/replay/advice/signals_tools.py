"""Tool signals: one tool's results dominating the input, results too large for the soft cap, runs that
carry earlier runs' retrieval (a `context: {mode: fresh}` candidate), tools sent and never called."""

from __future__ import annotations

from collections import Counter, defaultdict

from zymi_tui.events.messages import AssistantMessage, ToolResultMessage
from zymi_tui.replay.advice.model import Finding, Recommendation
from zymi_tui.replay.advice.signals import Signals, step_of_stream, values_text
from zymi_tui.replay.call_context import CallContext

LARGE_RESULT_SHARE = 0.25  # a tool result above this share of the soft cap
DOMINANT_SHARE = 0.5  # one tool's results above this share of all input bytes


def tool_bytes_walk(s: Signals) -> tuple[dict[str, int], dict[str, int], int]:
    """Per tool: bytes of its results as sent, summed over calls, and their rent (bytes x calls in full,
    `zymi-tui rent`'s measure); and all bytes sent."""
    sent_bytes: Counter[str] = Counter()
    rent: Counter[str] = Counter()
    total = 0
    for calls in s.streams.values():
        names: dict[str, str] = {}
        for c in calls:
            assert c.rendered is not None
            total += c.rendered.chars
            for e in c.rendered.entries:
                m = e.message
                if isinstance(m, AssistantMessage):
                    names.update((tc.id, tc.name) for tc in m.tool_calls)
                elif isinstance(m, ToolResultMessage):
                    tool = names.get(m.tool_call_id, "unknown")
                    sent_bytes[tool] += e.bytes
                    if not e.reason.startswith("masked"):
                        rent[tool] += e.bytes
    return dict(sent_bytes), dict(rent), total


def dominant_tool(s: Signals) -> list[Finding]:
    sent_bytes, rent, total = tool_bytes_walk(s)
    if not sent_bytes or not total:
        return []
    tool, nbytes = max(sent_bytes.items(), key=lambda kv: kv[1])
    share = nbytes / total
    if share < DOMINANT_SHARE:
        return []
    cands = s.candidates(s.grid.windows(-1))
    return [
        Finding(
            "dominant_tool",
            f"{tool}'s results are {share:.0%} of all input bytes ({nbytes:,} of {total:,}); "
            f"rent {rent.get(tool, 0):,} bytes (bytes x calls carried in full)",
            [f"{t}: {b:,} bytes ({b / total:.0%})" for t, b in sorted(sent_bytes.items(), key=lambda kv: -kv[1])[:5]],
            {
                "tool": tool,
                "bytes": nbytes,
                "share": round(share, 4),
                "rent_bytes": rent.get(tool, 0),
                "by_tool": sent_bytes,
            },
            recommendation=Recommendation(
                f"mask {tool}'s results sooner: a lower observation_window (or cut the tool's output at the source)",
                candidates=cands,
                searched=values_text("observation_window", cands),
            ),
        )
    ]


def large_tool_result(s: Signals) -> list[Finding]:
    soft = s.base.soft_cap_chars
    limit = LARGE_RESULT_SHARE * soft
    big: dict[tuple[str, int], int] = {}
    for stream, calls in s.streams.items():
        tails = {id(sh.tail): sh.tail for c in calls if c.rendered is not None and (sh := c.rendered.shape)}
        for tail in tails.values():  # every tool result the stream ever carried, at its full size
            for raw in tail.items:
                if isinstance(raw.message, ToolResultMessage) and raw.bytes > limit and not raw.simulated:
                    big[(stream, raw.seq)] = raw.bytes
    if not big:
        return []
    (stream, seq), nbytes = max(big.items(), key=lambda kv: kv[1])
    cands = s.candidates(s.grid.windows(-1))
    return [
        Finding(
            "large_tool_result",
            f"{len(big)} tool result(s) above {LARGE_RESULT_SHARE:.0%} of the soft cap ({soft:,} bytes); "
            f"the largest: {nbytes:,} bytes ({nbytes / soft:.0%}) at {stream} seq {seq}",
            [f"{st} seq {q}: {b:,} bytes" for (st, q), b in sorted(big.items(), key=lambda kv: -kv[1])[:5]],
            {"results": [[st, q, b] for (st, q), b in big.items()], "soft_cap_chars": soft},
            stream,
            next((c.sequence for c in s.streams[stream] if c.sequence > seq), s.streams[stream][-1].sequence),
            Recommendation(
                "limit the tool's output at the source, or mask sooner: a lower observation_window",
                candidates=cands,
                searched=values_text("observation_window", cands),
            ),
        )
    ]


def fresh_mode_candidate(s: Signals) -> list[Finding]:
    out = []
    for stream, calls in s.streams.items():
        pipeline = calls[0].pipeline
        step = step_of_stream(stream)
        if pipeline is None or (pipeline, step) in s.facts.fresh_steps:
            continue
        carried, retrieval, runs = 0, 0, 0
        seen_runs: set[str | None] = set()
        first_of_later: CallContext | None = None
        for c in calls:
            if c.correlation_id in seen_runs:
                continue
            seen_runs.add(c.correlation_id)
            if len(seen_runs) == 1:
                continue
            assert c.rendered is not None
            tool_bytes = sum(
                e.bytes for e in c.rendered.entries if e.layer == "C" and isinstance(e.message, ToolResultMessage)
            )
            carried += c.rendered.layer_bytes.get("C", 0)
            retrieval += tool_bytes
            runs += 1
            first_of_later = first_of_later or c
        if runs == 0 or not carried or retrieval / carried < 0.5 or first_of_later is None:
            continue
        out.append(
            Finding(
                "fresh_mode_candidate",
                f"{pipeline}/{step}: {runs} later run(s) start with {carried:,} bytes of earlier runs' Layer C, "
                f"{retrieval / carried:.0%} of it tool results",
                [f"{stream}: first call of each later run carries {carried // runs:,} bytes on average"],
                {"stream_id": stream, "runs": runs + 1, "carried_bytes": carried, "tool_result_bytes": retrieval},
                stream,
                first_of_later.sequence,
                Recommendation(
                    f"give step `{step}` of pipeline `{pipeline}` context: {{mode: fresh}}",
                    step=f"{pipeline}/{step}",
                    mode="fresh",
                    not_replayed="a step's context.mode is not a knob: fork a run with `zymi-tui resume` "
                    "after editing the pipeline to see it",
                ),
            )
        )
    return out


def unused_tools(s: Signals) -> list[Finding]:
    out = []
    calls_per_step: Counter[tuple[str, str]] = Counter()
    called: dict[tuple[str, str], set[str]] = defaultdict(set)
    for stream, calls in s.streams.items():
        if calls[0].pipeline is None:
            continue
        key = (calls[0].pipeline, step_of_stream(stream))
        calls_per_step[key] += len(calls)
        called[key] |= s.store.tools_called.get(stream, set())
    for key, n in sorted(calls_per_step.items()):
        agent = s.facts.step_agent.get(key)
        tools = s.facts.agent_tools.get(agent or "", ())
        unused = [t for t in tools if t not in called[key]]
        if not unused:
            continue
        sizes = {t: (s.tool_bytes(t) if s.tool_bytes else None) for t in unused}
        known = sum(v for v in sizes.values() if v)
        out.append(
            Finding(
                "unused_tools",
                f"{key[0]}/{key[1]}: {len(unused)} tool definition(s) sent on all {n} calls, never called: "
                f"{', '.join(unused)}" + (f" ({known:,} bytes x {n} calls = {known * n:,} bytes)" if known else ""),
                [f"{t}: {'?' if b is None else f'{b:,}'} bytes per call" for t, b in sizes.items()],
                {
                    "step": f"{key[0]}/{key[1]}",
                    "agent": agent,
                    "unused": unused,
                    "calls": n,
                    "bytes_per_call": known,
                    "bytes_total": known * n,
                },
                recommendation=Recommendation(
                    f"remove {', '.join(unused)} from agent `{agent}`'s tools",
                    not_replayed="tool definitions are not counted in approx_context_chars; "
                    f"they add ~{known * n:,} bytes of input over the store",
                ),
            )
        )
    return out
