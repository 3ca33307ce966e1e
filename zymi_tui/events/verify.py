"""Verify every stream's hash chain in a store (what `zymi verify` does, with a better report)."""

from __future__ import annotations

from collections.abc import Callable

from zymi_tui.events.hashchain import StreamVerdict, check_head, walk_chain
from zymi_tui.events.store import EventReader, StoreError


async def verify_store(
    reader: EventReader,
    stream: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[StreamVerdict]:
    """One verdict per stream (or for `stream` alone), including streams that only
    `stream_heads` still knows (a whole stream deleted). Sorted by stream id."""
    heads = await reader.stream_heads()
    if stream is not None:
        known = {s.stream_id for s in await reader.streams()}
        if stream not in known and stream not in heads:
            raise StoreError(f"no stream `{stream}` in {reader.label}")
        names = [stream]
    else:
        names = sorted({s.stream_id for s in await reader.streams()} | set(heads))
    verdicts = []
    for i, name in enumerate(names):
        verdicts.append(walk_chain(name, await reader.chain_rows(name), heads.get(name)))
        if progress:
            progress(i + 1, len(names))
    # read the heads again after the rows: a head that moved meanwhile belongs to a store being written
    heads_after = await reader.stream_heads()
    for v in verdicts:
        check_head(v, heads.get(v.stream_id), heads_after.get(v.stream_id))
    return verdicts
