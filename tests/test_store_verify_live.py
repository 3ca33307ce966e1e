"""Verifying a stream that another process appends to while we read it."""

from __future__ import annotations

from zymi_tui.events.hashchain import ChainRow, check_head, hash_v2, walk_chain

EVENT_IDS = [f"0210708e-ab3f-4c59-9186-f3c3dc8fd3e{i}" for i in range(1, 6)]


def chain(n: int) -> list[ChainRow]:
    rows, prev = [], ""
    for seq in range(1, n + 1):
        data = f'{{"n":{seq}}}'
        h = hash_v2(EVENT_IDS[seq - 1], seq, data, prev)
        rows.append(ChainRow(seq, EVENT_IDS[seq - 1], seq, data, prev, h))
        prev = h
    return rows


def head_of(rows: list[ChainRow], seq: int) -> tuple[int, str]:
    return (seq, rows[seq - 1].hash)


def verdict(rows: list[ChainRow], head: tuple[int, str], after: tuple[int, str]) -> str | None:
    v = walk_chain("s", rows, head)
    check_head(v, head, after)
    return v.problem


def test_quiet_store_passes_and_truncation_is_caught() -> None:
    rows = chain(5)
    assert verdict(rows, head_of(rows, 5), head_of(rows, 5)) is None
    problem = verdict(rows[:3], head_of(rows, 5), head_of(rows, 5))
    assert problem is not None and "truncated" in problem and "missing 2" in problem


def test_rows_appended_while_reading_are_not_truncation() -> None:
    rows = chain(5)
    # head read at seq 3, rows read up to 5, head read again at 5: a live writer
    assert verdict(rows, head_of(rows, 3), head_of(rows, 5)) is None
    # head read at 3, rows read up to 4, then a fifth append moved the head to 5
    assert verdict(rows[:4], head_of(rows, 3), head_of(rows, 5)) is None


def test_rows_past_a_head_that_never_moved_are_flagged() -> None:
    rows = chain(5)
    problem = verdict(rows, head_of(rows, 3), head_of(rows, 3))
    assert problem is not None and "after sequence 3" in problem


def test_a_head_whose_hash_is_not_in_the_chain_fails() -> None:
    rows = chain(5)
    forged = (3, "v2:" + "0" * 64)
    problem = verdict(rows[:3], forged, forged)
    assert problem is not None and "does not carry the hash" in problem
    # the head moved on, but the row at the sequence it first named is not the one it recorded
    problem = verdict(rows[:4], forged, head_of(rows, 5))
    assert problem is not None
