"""Make a store holding ONE long run: a recorded run's events cloned as turns of a single stream.

    .venv/bin/python benchmarks/make_long_run.py /tmp/long_100k.db --events 100000 [--from coding_default]
    .venv/bin/python benchmarks/make_long_run.py /tmp/many.db --events 5000 --many  # one run per clone

Every clone of the source run becomes one more turn of the same run stream (`chat-long`) and of
the same step sub-streams: new event ids and correlation ids, sequences continued, timestamps
moved forward, a fresh v2 hash chain and `stream_heads`, so `verify` passes. With `--many` each
clone is a run of its own (`run-<n>`), as shared/tools/make_big_store.py makes them. Output goes
where you say (use /tmp). Tests call `write_clones` to make their long stores.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import uuid
from pathlib import Path

from zymi_tui.events.hashchain import hash_v2
from zymi_tui.events.sqlite_schema import SCHEMA
from zymi_tui.events.timestamps import format_timestamp, parse_timestamp_ns

ORACLE = Path(__file__).resolve().parents[1] / "tests" / "oracle"
RUN = "chat-long"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("out", type=Path)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--from", dest="src", default="coding_default", help="a recording under tests/oracle/")
    ap.add_argument("--many", action="store_true", help="each clone a run of its own, not a turn of one run")
    a = ap.parse_args()
    if a.out.exists():
        sys.exit(f"{a.out} exists: choose a new path")
    written, clones, streams = write_clones(a.out, a.events, a.src, many=a.many)
    what = f"{clones} run(s)" if a.many else f"one run `{RUN}` of {clones} turn(s)"
    print(f"{a.out}: {written} events, {what} ({streams} streams) from {a.src}")


def write_clones(
    out: Path, events: int, src_name: str = "coding_default", *, many: bool = False
) -> tuple[int, int, int]:
    """Write `events` events of clones of the recording's first run into a new store at `out`;
    returns (events, clones, streams)."""
    src = sqlite3.connect(f"file:{ORACLE / src_name / 'events.db'}?mode=ro", uri=True)
    rows = src.execute("SELECT stream_id, kind_tag, data, source FROM events ORDER BY id").fetchall()
    src.close()
    run = rows[0][0].split(":step:")[0]
    rows = [r for r in rows if r[0].split(":step:")[0] == run]  # the first run of the recording
    first_ns = parse_timestamp_ns(json.loads(rows[0][2])["timestamp"])
    last_ns = parse_timestamp_ns(json.loads(rows[-1][2])["timestamp"])
    db = sqlite3.connect(out)
    db.executescript("PRAGMA journal_mode=WAL;" + SCHEMA)
    db.executescript("ALTER TABLE events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';"
                     "ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';")  # fmt: skip
    heads: dict[str, tuple[int, str]] = {}
    written, clone = 0, 0
    while written < events:
        shift = clone * (last_ns - first_ns + 1_000_000_000)
        corr: dict[str, str] = {}
        batch = []
        name = f"run-{clone}" if many else RUN
        for stream, tag, data, source in rows[: events - written]:
            env = json.loads(data)
            step = stream.partition(":step:")[2]
            new_stream = name + (":step:" + step if step else "")
            env["id"], env["stream_id"] = str(uuid.uuid4()), new_stream
            ns = parse_timestamp_ns(env["timestamp"]) + shift
            env["timestamp"] = format_timestamp(ns)
            if env.get("correlation_id"):
                env["correlation_id"] = corr.setdefault(env["correlation_id"], str(uuid.uuid4()))
            text = json.dumps(env, ensure_ascii=False, separators=(",", ":"))
            seq, prev = heads.get(new_stream, (0, ""))
            h = hash_v2(env["id"], seq + 1, text, prev)
            heads[new_stream] = (seq + 1, h)
            batch.append((env["id"], new_stream, seq + 1, format_timestamp(ns, zulu=False), tag, text,
                          env.get("correlation_id"), None, source, prev, h))  # fmt: skip
        db.executemany(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, correlation_id,"
            " causation_id, source, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            batch,
        )
        written += len(batch)
        clone += 1
    db.executemany("INSERT INTO stream_heads VALUES (?,?,?)", [(s, q, h) for s, (q, h) in heads.items()])
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return written, clone, len(heads)


if __name__ == "__main__":
    main()
