"""The dashboard's `?` help text: what each panel shows and how the figures are measured.

The keys themselves are listed from the action registry (zymi_tui/tui/actions.py), never here.
"""

from __future__ import annotations

from zymi_tui.tui.actions import Nav

DASHBOARD_PANELS = """\
**Runs** (left): every run, newest first. A chat stream with several turns shows a header (the
whole stream) and one entry per turn. Columns: status, pipeline, start, duration, **peak context
size** (largest `approx_context_chars` of the run), inputs. ⚠ = the hash chain does not verify;
↯ interrupted = no end row and no live process writing it (killed), as opposed to ◷ running.
The full stream id is under the list (`c` copies it).

**Pipeline**: steps by level, status (✓ ok, ✗ failed, ◷ running, · pending, ⊘ skipped), each
step's LLM call count and last context size.

**Events**: the run stream *and* its step sub-streams, grouped by step, newest last. `Enter`
expands the full payload (whole tool result and response). On a compaction, `g` marks the
events it replaced.

**Context**: `approx_context_chars` per LLM call (UTF-8 bytes of the message texts, as zymi
counts them), one colour per series: each step's chars (left axis) and its recorded
`usage.input_tokens` (`•`, right axis). The legend is under the plot; the picked call's figures are in
its title. Labelled horizontal lines: the soft and hard caps. Markers: `▼` a compaction with what it
saved, `▲ ⚠ grew` a compaction whose summary came back larger than what it replaced (lower
`soft_cap_chars`), `◆` where masking starts, `◇` where forgetting starts (estimated from the knobs where
not rebuilt); the grey vertical line is the picked call.

The dashboard never writes to the store."""

DASHBOARD_NAV = (
    Nav("↑ ↓  j k  PgUp PgDn  Home End", "move in the focused list"),
    Nav("Tab / Shift+Tab", "next / previous panel"),
    Nav("← → (plot focused)", "pick the previous / next LLM call"),
)
