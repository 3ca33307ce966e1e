"""Tool signals: one tool's results dominating the input, results too large for the soft cap, runs that
carry earlier runs' retrieval (a `context: {mode: fresh}` candidate), tools sent and never called."""

from __future__ import annotations

from zymi_tui.replay.advice.model import Finding, Recommendation
from zymi_tui.replay.advice.signals import Signals, in_order, values_text
from zymi_tui.replay.advice.watch import LARGE_RESULT_SHARE

DOMINANT_SHARE = 0.5  # one tool's results above this share of all input bytes


def tool_bytes_walk(s: Signals) -> tuple[dict[str, int], dict[str, int], int]:
    """Per tool: bytes of its results as sent, summed over calls (in the order the tools first come,
    stream after stream), and their rent (bytes x calls in full, `zymi-tui rent`'s measure); and all
    bytes sent."""
    w = s.watch
    order = sorted(w.first_use, key=lambda tool: w.first_use[tool])
    return {t: w.sent_bytes[t] for t in order}, dict(w.rent), w.total_bytes


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
    found = sorted(s.watch.large, key=lambda o: o[0])
    big = {(stream, seq): nbytes for _, stream, large in found for seq, nbytes in large.results}
    if not big:
        return []
    (stream, seq), nbytes = max(big.items(), key=lambda kv: kv[1])
    after = next(large.next_sequence for _, st, large in found if st == stream)
    cands = s.candidates(s.grid.windows(-1))
    return [
        Finding(
            "large_tool_result",
            f"{len(big)} tool result(s) above {LARGE_RESULT_SHARE:.0%} of the soft cap ({soft:,} bytes); "
            f"the largest: {nbytes:,} bytes ({nbytes / soft:.0%}) at {stream} seq {seq}",
            [f"{st} seq {q}: {b:,} bytes" for (st, q), b in sorted(big.items(), key=lambda kv: -kv[1])[:5]],
            {"results": [[st, q, b] for (st, q), b in big.items()], "soft_cap_chars": soft},
            stream,
            after,
            Recommendation(
                "limit the tool's output at the source, or mask sooner: a lower observation_window",
                candidates=cands,
                searched=values_text("observation_window", cands),
            ),
        )
    ]


def fresh_mode_candidate(s: Signals) -> list[Finding]:
    out = []
    for c in in_order(s.watch.carried):
        runs, carried, retrieval = c.runs, c.carried, c.retrieval
        out.append(
            Finding(
                "fresh_mode_candidate",
                f"{c.pipeline}/{c.step}: {runs} later run(s) start with {carried:,} bytes of earlier runs' Layer C, "
                f"{retrieval / carried:.0%} of it tool results",
                [f"{c.stream}: first call of each later run carries {carried // runs:,} bytes on average"],
                {"stream_id": c.stream, "runs": runs + 1, "carried_bytes": carried, "tool_result_bytes": retrieval},
                c.stream,
                c.first_of_later,
                Recommendation(
                    f"give step `{c.step}` of pipeline `{c.pipeline}` context: {{mode: fresh}}",
                    step=f"{c.pipeline}/{c.step}",
                    mode="fresh",
                    not_replayed="a step's context.mode is not a knob: fork a run with `zymi-tui resume` "
                    "after editing the pipeline to see it",
                ),
            )
        )
    return out


def unused_tools(s: Signals) -> list[Finding]:
    out = []
    called = s.watch.called
    for key, n in sorted(s.watch.calls_per_step.items()):
        agent = s.facts.step_agent.get(key)
        tools = s.facts.agent_tools.get(agent or "", ())
        unused = [t for t in tools if t not in called.get(key, ())]
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
