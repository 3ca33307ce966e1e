"""The dashboard's `?` help text: what each panel shows and how the figures are measured.

The keys themselves are listed from the action registry (zymi_tui/tui/actions.py), never here.
"""

from __future__ import annotations

from zymi_tui.tui.actions import Nav

DASHBOARD_PANELS = """\
**Runs** (left): every run, newest first. A chat stream with several turns shows a header (the
whole stream) and one entry per turn. Columns: status, pipeline, start, duration, **peak context
size** (largest `approx_context_chars` of the run), inputs. ⚠ = the hash chain does not verify.
The full stream id is under the list (`c` copies it).

**Pipeline**: steps by level, status (✓ ok, ✗ failed, ◷ running, · pending, ⊘ skipped), each
step's LLM call count and last context size.

**Events**: the run stream *and* its step sub-streams, grouped by step, newest last. `Enter`
expands the full payload (whole tool result and response). On a compaction, `g` marks the
events it replaced.

**Context size**: `approx_context_chars` per LLM call (UTF-8 bytes of the message texts, as zymi
counts them), one series per step; dots are the recorded `usage.input_tokens` (right axis).
Horizontal lines: soft cap (orange), hard cap (red). Vertical: compactions (yellow, red when the
summary grew), where masking starts (blue, estimated from the window W), the picked call (grey).

The dashboard never writes to the store."""

DASHBOARD_NAV = (
    Nav("↑ ↓  j k  PgUp PgDn  Home End", "move in the focused list"),
    Nav("Tab / Shift+Tab", "next / previous panel"),
    Nav("← → (plot focused)", "pick the previous / next LLM call"),
)
