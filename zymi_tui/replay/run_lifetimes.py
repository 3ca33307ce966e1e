"""How long a store replay keeps a run and a step's builder (`calls.Replayer` inherits it): each is dropped
once the replay has passed the last event that can need it, so memory stays flat in the store's size."""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections import deque

from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.replay.call_builds import RunState as _Run
from zymi_tui.replay.call_builds import StepState as _Step
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_ends import Ends


class RunLifetimes:
    """When the replayer drops a run or a step (see `forget_finished`)."""

    runs: dict[str, _Run]
    steps: dict[str, _Step]
    queue: deque[CallContext]
    ends: Ends
    _expiry: list[tuple[int, bool, str]]
    _run_ends: dict[str, int]
    _closings: array[int]
    _stale: int

    def forget_finished(self, ends: Ends, closings: array[int] | None = None) -> None:
        """Drop a step's builder once the replay has passed the last event of its stream and of its run
        stream (`ends`: each stream's last global id, read before the replay): no later event can need
        it, so memory stays flat in the store's size. Events past `ends` must not be fed.

        `closings` (`RunClosings.closing_completions`, read after `ends`): a run is also dropped once the
        replay has passed its completion when that is one of these (no later row carries its
        correlation id) and no stream has its key for a name (a row without one would look it up): the
        runs of one long chat stream, a turn each, then go as they end, not at the stream's end."""
        self.ends = ends
        if closings is not None:
            self._closings = closings

    def idle_before(self, se: ReplayEvent) -> bool:
        """Whether this replayer, about to be fed `se`, holds nothing that depends on its knobs: every
        step passed and dropped (see `forget_finished`) and every row out. Two what-if replayers fed
        the same events (one forked from the other in lockstep) and idle here would then make the
        same decisions from here on under the same knobs."""
        self._expire(se.global_id)
        return not self.steps and not self.queue

    def _run(self, key: str, stream: str) -> _Run:
        """The run of `key`, read by its run stream's events: dropped once the replay has passed the last
        of them (its steps keep it as long as they need it), so memory stays flat in the store's size."""
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = _Run()
        end = self.ends.get(stream)
        if end is not None and end > self._run_ends.get(key, -1):
            self._run_ends[key] = end
            heapq.heappush(self._expiry, (end, True, key))
        return run

    def _expire(self, global_id: int) -> None:
        while self._expiry and self._expiry[0][0] < global_id:
            end, is_run, name = heapq.heappop(self._expiry)
            if not is_run:
                self.steps.pop(name, None)
            elif self._run_ends.get(name) == end:  # else its run stream (or another of its streams) goes on
                del self._run_ends[name]
                self.runs.pop(name, None)

    def _closed(self, key: str, global_id: int) -> None:
        """The run of `key` completed at `global_id`: dropped after it if that completion closes it (see
        `forget_finished`); its entry for its stream's end is then left behind, and such entries are swept
        out of `_expiry` once they are half of it. (Dropped at the next event, not here: replayers in
        lockstep share their runs, and each is fed this event.)"""
        closings = self._closings
        i = bisect_left(closings, global_id)
        if i == len(closings) or closings[i] != global_id or key not in self.runs or key in self.ends:
            return
        self._run_ends[key] = global_id
        heapq.heappush(self._expiry, (global_id, True, key))
        self._stale += 1
        if self._stale > 64 and 2 * self._stale > len(self._expiry):
            ends = self._run_ends
            self._expiry = [e for e in self._expiry if not e[1] or ends.get(e[2]) == e[0]]
            heapq.heapify(self._expiry)
            self._stale = 0
