"""The knob editor's what-if: the picked call's made at once on the UI thread when it is quick, the whole
stream's by a worker that posts the picked call first, then its calls as they come."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.worker import get_current_worker

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.replay.call_context import CallContext
from zymi_tui.tui.tuning.collector import gc_paused
from zymi_tui.tui.tuning.editor_drawing import EditorDrawing
from zymi_tui.tui.tuning.editor_parts import Quiet, WhatIfPartial, WhatIfPicked, WhatIfReady
from zymi_tui.tui.tuning.model import CallDiff, diff_contexts

PENDING_NOTICE_S = 0.1  # a running what-if says so after this long (if its picked call is not drawn yet)
PAINT_WAIT_S = 0.25  # the longest a what-if waits for its picked call's frame before going on
PICK_HERE_S = 0.025  # the picked call's what-if is made on the UI thread if it took at most this long last time
PICK_HERE_MAX_S = 0.1  # and given up there (then made by the worker) if it takes longer than this


class EditorWhatIf(EditorDrawing):
    """The what-if of the knobs in the form, started on every edit and drawn as it comes."""

    def recompute(self) -> bool:
        """The what-if of the knobs in the form, started; whether it runs (else it is drawn already)."""
        knobs = self.form.knobs
        if knobs is None or not self.ready:
            return False
        if knobs == self.recorded:
            self.retire(self.what_if_calls, self.partial)
            self.what_if_calls, self.diff, self.diff_knobs, self.last_ms, self.pending = None, None, None, None, False
            self.partial = None
            self.workers.cancel_group(self, "whatif")
            self.redraw(then=self.collector.release)
            return False
        self.collector.hold()
        self.started = time.perf_counter()
        self.pending, self.partial = True, []
        diff = self.picked_here(knobs)
        if diff is None:
            self.run_whatif(knobs)
            # "replaying…" only if the picked call is not known by then: a figures-only what-if knows it
            # within a frame or two, and drawing the notice first cost a frame on the way to its figures
            self.set_timer(PENDING_NOTICE_S, self.show_summary)
            return True
        painted = threading.Event()
        self.show_picked(knobs, diff, then=painted.set)
        self.run_whatif(knobs, (diff, painted))
        return True

    def picked_here(self, knobs: ContextKnobs) -> CallDiff | None:
        """The picked call's what-if and its diff, made on the UI thread while the key that changed the
        knobs is being handled, so that its figures are in the frame that shows the key; None (the
        worker makes it) when the last what-if took longer than `PICK_HERE_S` to get there (`pick_s`),
        or this one does not within `PICK_HERE_MAX_S` (a loaded machine can double the time: giving
        up at the same bound wasted it, and the worker started from nothing)."""
        before = self.picked_call(self.recorded_calls)
        if self.whatif is None or before is None or before.rendered is None:
            return None
        if self.pick_s is not None and self.pick_s > PICK_HERE_S:
            return None
        t0 = time.perf_counter()
        try:
            with gc_paused():  # (a collection's walk over the loaded run would cost more than the work)
                after = self.whatif.call_at(knobs, before.sequence, within_s=PICK_HERE_MAX_S)
                reached = time.perf_counter() - t0
                if after is None or after.rendered is None:
                    self.pick_s = math.inf
                    return None
                diff = diff_contexts(before.rendered, after.rendered)
        except Exception:  # the worker makes the same what-if, and shows its failure where failures go
            self.pick_s = math.inf
            return None
        self.pick_s = reached
        return diff

    @work(thread=True, exclusive=True, group="whatif", exit_on_error=False, description="the stream's what-if")
    def run_whatif(self, knobs: ContextKnobs, known: tuple[CallDiff, threading.Event] | None = None) -> None:
        """The exact what-if of the whole stream; stops as soon as a newer edit arrives (the worker is
        cancelled, or the form holds other knobs), posting its calls to the plot as they come, and the
        picked call's diff first. `known`: that diff is made already, and on screen once the event is
        set (the worker waits for it, so that it does not take the interpreter from that frame)."""
        assert self.whatif is not None
        worker = get_current_worker()
        diff: CallDiff | None = None
        if known is not None:
            diff = known[0]
            known[1].wait(PAINT_WAIT_S)
        t0 = time.perf_counter()
        before = self.picked_call(self.recorded_calls)

        def picked(after: CallContext) -> None:  # the picked call is known: drawn before the rest
            nonlocal diff
            if before is not None and before.rendered is not None and after.rendered is not None:
                reached = time.perf_counter() - t0
                diff = diff_contexts(before.rendered, after.rendered)
                message = WhatIfPicked(knobs, diff, reached)
                self.post_message(message)
                message.painted.wait(PAINT_WAIT_S)

        calls = self.whatif.run(
            knobs,
            stop=lambda: worker.is_cancelled or self.form.knobs != knobs,
            partial=lambda rows: self.post_message(WhatIfPartial(knobs, rows)),
            want=None if before is None or known is not None else before.sequence,
            on_want=picked,
        )
        if calls is None:
            return
        self.post_message(WhatIfReady(knobs, calls, diff, (time.perf_counter() - t0) * 1000))

    def on_what_if_picked(self, message: WhatIfPicked) -> None:
        self.pick_s = message.reached_s
        if message.knobs != self.form.knobs or not self.pending:
            message.painted.set()
            return
        self.show_picked(message.knobs, message.diff, then=message.painted.set)

    def show_picked(self, knobs: ContextKnobs, diff: CallDiff, *, then: Callable[[], object]) -> None:
        """The picked call's what-if, drawn before the rest of the stream is known; `then` once on screen."""
        self.diff, self.diff_knobs = diff, knobs
        self.show_summary(then=then)
        self.draw_diff()
        self.picked_ms = (time.perf_counter() - self.started) * 1000  # edit -> picked call drawn

    def on_what_if_partial(self, message: WhatIfPartial) -> None:
        if message.knobs != self.form.knobs or not self.pending:
            return
        self.partial = message.calls
        self.draw_curve(self.form.knobs, message.calls, partial=True)
        self.query_one("#elapsed", Quiet).show(Text(self.progress_text(), style="dim"))

    def on_what_if_ready(self, message: WhatIfReady) -> None:
        if message.knobs != self.form.knobs:
            return  # a newer edit is on its way
        self.retire(self.what_if_calls, self.partial)
        self.what_if_calls, self.diff, self.last_ms, self.pending = message.calls, message.diff, message.ms, False
        self.diff_knobs = message.knobs
        self.partial = None
        self.redraw(then=self.collector.release)
        self.redraw_ms = (time.perf_counter() - self.started) * 1000  # edit -> redrawn (the benchmark reads it)
