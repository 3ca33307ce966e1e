"""Python's cyclic garbage collector around the knob editor's edits, so a collection never lands
inside an edit's frame.

The editor keeps a loaded run and its base replay for as long as it is open, and each edit allocates
a what-if's thousands of rows: a full collection walks all of it, and one came in the middle of an
edit every few edits. So the collector is held from an edit's first key until its what-if is on
screen, what lives on is then frozen out of later walks, and what was frozen and has since become
garbage is collected in one walk once the editor is idle (figures: docs/performance-notes.md).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

GC_HOLD_MAX_S = 2.0  # the longest the cyclic collector is held for an edit that never draws
RECLAIM_EVERY = 100  # edits between two full collections of what the editor froze (see `reclaim`)
RECLAIM_IDLE_S = 1.0  # ... made once no edit has come for this long


_gc_lock = threading.Lock()
_gc_pauses = 0  # what-ifs running with the cyclic garbage collector paused
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a what-if runs (threads may overlap: it is on again
    when the last one ends, if it was on before the first). A replay allocates thousands of rows
    that live on, so full collections (each a walk over every object of the loaded run) come every
    few edits and doubled or tripled an edit's time; reference counting still frees the rest."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


class EditCollector:
    """The collector's state for one editor; `set_timer` is the screen's (Textual's `set_timer`)."""

    def __init__(self, set_timer: Callable[[float, Callable[[], None]], object]) -> None:
        self.set_timer = set_timer
        self.held = ExitStack()
        self.held_since = 0.0  # when the collector was last held for an edit (0: it is not held)
        self.frozen_edits, self.released = 0, 0.0  # edits frozen since the last `reclaim`; the last release

    def keep_loaded(self) -> None:
        """The loaded run and the base replay live as long as the editor: out of the collector's walks."""
        gc.freeze()

    def close(self) -> None:
        """The editor is closed: what it kept is the collector's again."""
        self.held.close()
        self.frozen_edits = 0  # (a reclaim still timed then finds nothing to do)
        gc.unfreeze()

    def hold(self) -> None:
        """No cyclic collection from an edit until its what-if is on screen (`release`)."""
        if not self.held_since:
            self.held.enter_context(gc_paused())
        self.held_since = time.perf_counter()
        self.set_timer(GC_HOLD_MAX_S, self.release_stale)

    def release_stale(self) -> None:
        """A hold that no what-if ended (one that failed never draws)."""
        if self.held_since and time.perf_counter() - self.held_since >= GC_HOLD_MAX_S:
            self.release()

    def release(self) -> None:
        """The edit is on screen: what it left is collected now, at rest, and what lives on (the
        what-if shown) is kept out of later collections' walks (each then walks one edit's objects)."""
        if not self.held_since:
            return
        self.held.close()
        self.held_since = 0.0
        gc.collect()
        gc.freeze()
        self.frozen_edits += 1
        self.released = time.perf_counter()
        if self.frozen_edits >= RECLAIM_EVERY:
            self.set_timer(RECLAIM_IDLE_S, self.reclaim)

    def reclaim(self) -> None:
        """What was frozen alive and has become garbage since (Textual's widgets replaced at each edit)
        collected, in one full walk, once the editor is idle.

        Asked again until it is done, never left to a later release: Textual's timers call back up to
        0.5 ms before their delay (its `_time.sleep` sleeps that much less), so a reclaim timed from the
        last release could find the editor idle for not quite `RECLAIM_IDLE_S`; an edit held when it
        comes may never be released by a what-if that draws (a stale hold's release is timed too); and
        `gc.collect` does nothing while another thread's collection is running."""
        if self.frozen_edits < RECLAIM_EVERY:
            return  # done already (asked twice), or the editor is closed
        if self.held_since:
            self.set_timer(RECLAIM_IDLE_S, self.reclaim)  # an edit is being made: once it is at rest
            return
        idle = time.perf_counter() - self.released
        if idle < RECLAIM_IDLE_S:
            self.set_timer(RECLAIM_IDLE_S - idle, self.reclaim)
            return
        walks = gc.get_stats()[2]["collections"]
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        if gc.get_stats()[2]["collections"] == walks:  # another thread was collecting: ours did not run
            self.set_timer(RECLAIM_IDLE_S, self.reclaim)
            return
        self.frozen_edits = 0
