"""`gen_ai.input.messages` made from a context's shape (telemetry/otel_inputs.py, a text kept per item
shown the same way) is the context's own message list (`RenderedContext.entries`, made by the context
package), message for message, on every oracle store with and without its project: an item that
leaves the observation window between two calls of a step is shown masked from then on, and its kept
full text must not be served again (the stores make that happen; the test checks that they do)."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.messages import MessageModel, SystemMessage
from zymi_tui.telemetry.export_calls import walk
from zymi_tui.telemetry.otel_content import message_texts
from zymi_tui.telemetry.otel_inputs import ShownInputs, shape_length


def masked_since(entries: list[ContextEntry], seen: set[int]) -> int:
    """How many of a call's Layer C items are shown masked after being shown in full by an earlier call
    of the step (`seen`: the sequences shown in full so far, kept up to date)."""
    went = 0
    for e in entries:
        if e.layer == "C" and e.source_seq is not None:
            if e.reason.startswith(("masked by", "cut to")) and e.source_seq in seen:
                went += 1
                seen.discard(e.source_seq)
            elif not e.reason.startswith(("masked", "cut", "kept (turn")):
                seen.add(e.source_seq)
    return went


async def _compare(store: str, with_project: bool) -> tuple[int, int]:
    """(calls compared, items seen shown in full and later masked in their step); asserts each call."""
    project = ORACLE / store / "project" if with_project else None
    shown = ShownInputs(message_texts)
    calls = 0
    full_before: dict[str, set[int]] = {}  # step stream -> seqs shown in full so far
    went_masked = 0
    reader = await open_reader(SqliteStore(ORACLE / store / "events.db"))
    try:
        async for _se, rows in walk(reader, project if project and project.exists() else None):
            for row in rows:
                r = row.rendered
                if r is None or r.shape is None:
                    continue
                assert shape_length(r.shape) == len(r.entries)
                for drop in (False, True):
                    for prompt_first in (True, False):
                        models: list[MessageModel] = [e.message for e in r.entries if not (drop and e.layer == "A")]
                        want_prompt = None
                        if prompt_first and models and isinstance(models[0], SystemMessage):
                            want_prompt, models = models[0], models[1:]
                        key = f"{row.stream_id}|{drop}|{prompt_first}"
                        prompt, texts = shown.inputs(key, r.shape, drop_prefix=drop, prompt_first=prompt_first)
                        assert prompt == want_prompt
                        assert texts == [message_texts(m) for m in models], (store, row.stream_id, row.sequence)
                went_masked += masked_since(r.entries, full_before.setdefault(row.stream_id, set()))
                calls += 1
    finally:
        await reader.close()
    return calls, went_masked


@pytest.mark.parametrize("store", SCENARIOS)
def test_shown_inputs_are_the_contexts_messages(store: str) -> None:
    got = [asyncio.run(_compare(store, p)) for p in (True, False)]
    assert all(calls > 0 for calls, _ in got)


def test_the_stores_mask_items_shown_in_full_before() -> None:
    masked_later = sum(asyncio.run(_compare(s, True))[1] for s in SCENARIOS)
    assert masked_later > 0
