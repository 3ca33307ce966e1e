"""Verify a store: every stream's hash chain (what `zymi verify` does, with a better report), and
what the store's engine finds wrong below the rows (`ChainScan.damage`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from zymi_tui.events.chain_heads import Heads
from zymi_tui.events.hashchain import ChainScan, StreamVerdict, check_head, walk_chain
from zymi_tui.events.store import EventReader, StoreError


class Verdicts:
    """Every stream's verdict, sorted by stream id, each made (and checked against the heads) as it is reached
    when iterated: a million-event store's 50,000 streams never hold a verdict each at once."""

    def __init__(
        self, scan: ChainScan, streams: list[str], again: dict[str, StreamVerdict], heads: Heads, heads_after: Heads
    ) -> None:
        self.scan, self.streams, self.again, self.heads, self.heads_after = scan, streams, again, heads, heads_after

    def __len__(self) -> int:
        return len(self.streams)

    def __iter__(self) -> Iterator[StreamVerdict]:
        scan, again, heads, heads_after = self.scan, self.again, self.heads, self.heads_after
        for s in self.streams:
            head = heads.get(s)
            v = again.get(s) or scan.verdict(s) or walk_chain(s, [], head)
            check_head(v, head, heads_after.get(s))
            yield v


@dataclass(slots=True)
class StoreReport:
    """One verdict per stream, sorted by stream id, and the storage damage found (one line each)."""

    verdicts: Verdicts
    damage: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damage and all(v.ok for v in self.verdicts)


async def verify_store(reader: EventReader, stream: str | None = None, *, thorough: bool = False) -> StoreReport:
    """Every stream (or `stream` alone), including streams that only `stream_heads` still knows (a
    whole stream deleted). The whole store is scanned even for one stream: the storage check and the
    scan of the table (not of an index, which a damaged store can hold incomplete) need it."""
    stamp = await reader.heads_stamp()  # (before the heads: an append between the two reads changes it)
    heads = Heads.of(await reader.stream_heads())
    if stream is not None:
        known = {s.stream_id for s in await reader.streams()}
        if stream not in known and stream not in heads:
            raise StoreError(f"no stream `{stream}` in {reader.label}")
    scan = await reader.scan_chains(heads, thorough=thorough)
    # a stream whose rows do not come in ascending sequence (ids assigned out of order) is walked again alone,
    # in sequence order
    again = {s: walk_chain(s, await reader.chain_rows(s), heads.get(s)) for s in scan.settle()}
    streams = list(scan.streams())
    streams += [s for s in again if s not in heads and scan.verdict(s) is None]  # (none, but not assumed)
    if stream is None:
        streams.sort()  # (in place: no second list of 50,000 on a million-event store)
    else:
        streams = [s for s in streams if s == stream]
    # the heads again after the rows: a head that moved meanwhile belongs to a store being written (read again
    # only when the stamp moved: on a million-event store, 50,000 heads cost 0.2 s and ~16 MB to read)
    moved = stamp is None or await reader.heads_stamp() != stamp
    heads_after = Heads.of(await reader.stream_heads()) if moved else heads
    return StoreReport(Verdicts(scan, streams, again, heads, heads_after), scan.damage)
