"""`?`: what each panel shows, every key, and how the figures are measured."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# zymi-tui observe

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

| key | action |
|---|---|
| ↑↓ j k, PgUp PgDn, Home End | move in the focused list |
| Tab / Shift+Tab | next / previous panel |
| Enter | runs: go to events · events: expand · plot: inspect |
| ← → (plot) | pick the previous / next LLM call |
| i | inspect the selected LLM call's context |
| / | search the focused list (runs or events); Esc clears |
| s | step filter (events and plot) |
| t | kind filter (all, LLM calls, tools, workflow) |
| u | run status filter |
| o | events grouped by step / flat |
| g | go to the events a compaction replaced |
| x | plot x axis: call index / seconds |
| f | freeze live updates (events keep arriving and are applied on unfreeze) |
| n | follow the newest run |
| c | copy the selected stream id |
| L | message life: every Layer C message of the stream at every call (`r` rent, `/` find, `p` what-if) |
| A | advice: findings, the knobs to change, replayed here (`e` knob editor, `f` fork with them) |
| Ctrl+P | command palette (every action, kind and step filters) |
| q | quit |

The dashboard never writes to the store.
"""


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(HELP)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
