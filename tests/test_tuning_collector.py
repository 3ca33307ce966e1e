"""The knob editor's collector (`EditCollector`) on its own, its timers fired by hand: what it froze and has
become garbage is reclaimed once the editor is idle, however its reclaim's timer lands (Textual's timers call
back up to 0.5 ms early; another thread's collection can make it a no-op)."""

from __future__ import annotations

import gc
import types
import weakref
from collections.abc import Callable, Iterator

import pytest

from zymi_tui.tui.tuning import collector
from zymi_tui.tui.tuning.collector import EditCollector

IDLE_S = 1.0


class Clock:
    """The collector's `time.perf_counter`, moved by the test (a loaded machine cannot make it late)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


class Timers:
    """`set_timer` as the screen's, its callbacks kept to be fired by the test."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> object:
        self.due.append((delay, callback))
        return None

    def fire(self, name: str) -> bool:
        """Fire the first pending timer calling `name` (removed); False when none is pending."""
        for i, (_, callback) in enumerate(self.due):
            if getattr(callback, "__name__", "") == name:
                del self.due[i]
                callback()
                return True
        return False


@pytest.fixture
def frozen_garbage(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[EditCollector, Timers, weakref.ref[_Cycle], Clock]]:
    """A collector after one edit released (RECLAIM_EVERY of them): an object alive then, frozen with it,
    garbage now; the reclaim's timer pending."""
    monkeypatch.setattr(collector, "RECLAIM_EVERY", 1)
    monkeypatch.setattr(collector, "RECLAIM_IDLE_S", IDLE_S)
    clock = Clock()
    monkeypatch.setattr(collector, "time", types.SimpleNamespace(perf_counter=clock))
    timers = Timers()
    edits = EditCollector(timers)
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    try:
        edits.hold()
        edits.release()  # `cycle` is frozen alive
        del cycle
        gc.collect()
        assert gone() is not None, "frozen: no collection walks it"
        assert any(getattr(cb, "__name__", "") == "reclaim" for _, cb in timers.due)
        yield edits, timers, gone, clock
    finally:
        edits.close()


def test_a_reclaim_timer_that_fires_early_asks_again(
    frozen_garbage: tuple[EditCollector, Timers, weakref.ref[_Cycle], Clock],
) -> None:
    """The timer fires before RECLAIM_IDLE_S has passed on the collector's clock (as Textual's may, by up to
    0.5 ms): the reclaim is timed again, not left to an edit that may never come."""
    edits, timers, gone, clock = frozen_garbage
    clock.now += IDLE_S - 0.0005  # the timer's delay, less Textual's 0.5 ms
    assert timers.fire("reclaim")
    assert gone() is not None
    clock.now += IDLE_S
    assert timers.fire("reclaim"), "no reclaim timed again: the frozen garbage would stay until 100 more edits"
    assert gone() is None
    assert edits.frozen_edits == 0


def test_a_reclaim_whose_collection_did_not_run_asks_again(
    frozen_garbage: tuple[EditCollector, Timers, weakref.ref[_Cycle], Clock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gc.collect` does nothing while another thread's collection runs: the garbage it did not walk is not
    frozen for good, the reclaim is asked again."""
    edits, timers, gone, clock = frozen_garbage
    clock.now += IDLE_S
    with monkeypatch.context() as m:
        m.setattr(gc, "collect", lambda generation=2: 0)  # as when `gcstate->collecting` is set
        assert timers.fire("reclaim")
    assert gone() is not None
    clock.now += IDLE_S
    assert timers.fire("reclaim"), "no reclaim timed again after a collection that did not run"
    assert gone() is None
    assert edits.frozen_edits == 0
