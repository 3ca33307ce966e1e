"""Verify every stream's hash chain in a store (what `zymi verify` does, with a better report)."""

from __future__ import annotations

from zymi_tui.events.hashchain import StreamVerdict, check_head, walk_chain
from zymi_tui.events.store import EventReader, StoreError


async def verify_store(reader: EventReader, stream: str | None = None) -> list[StreamVerdict]:
    """One verdict per stream (or for `stream` alone), including streams that only
    `stream_heads` still knows (a whole stream deleted). Sorted by stream id."""
    heads = await reader.stream_heads()
    if stream is not None:
        known = {s.stream_id for s in await reader.streams()}
        if stream not in known and stream not in heads:
            raise StoreError(f"no stream `{stream}` in {reader.label}")
        verdicts = [walk_chain(stream, await reader.chain_rows(stream), heads.get(stream))]
    else:
        verdicts = await _walk_all(reader, heads)
    # read the heads again after the rows: a head that moved meanwhile belongs to a store being written
    heads_after = await reader.stream_heads()
    for v in verdicts:
        check_head(v, heads.get(v.stream_id), heads_after.get(v.stream_id))
    return verdicts


async def _walk_all(reader: EventReader, heads: dict[str, tuple[int, str]]) -> list[StreamVerdict]:
    """Every stream's chain in one pass over the rows, a walker per stream. A stream whose rows do not
    come in ascending sequence (ids assigned out of order) is walked again alone, in sequence order."""
    scan = await reader.scan_chains(heads)
    verdicts = {s: w.verdict for s, w in scan.walkers.items()}
    for s in scan.out_of_order:
        verdicts[s] = walk_chain(s, await reader.chain_rows(s), heads.get(s))
    for s in heads.keys() - verdicts.keys():
        verdicts[s] = walk_chain(s, [], heads[s])
    return [verdicts[s] for s in sorted(verdicts)]
