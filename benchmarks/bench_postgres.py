"""Postgres store against SQLite, measured in the same run.

    .venv/bin/python benchmarks/bench_postgres.py [--events 150] [--read 100000] [--repeat 3]
        [--only append,read,tail,snapshot]

1. appends per second with 1, 4 and 8 concurrent writer processes (each its own connection,
   streams shared between writers, zymi's one-transaction-per-event append);
2. a full read of N events through the store's reader (decoded, paged by global id) against a
   bare SELECT of the same rows; the Postgres copy of that store is made by `migrate` (timed too);
3. the tail delay (commit -> seen by a tailing reader, default poll) under 4 writers, p50/p95/max,
   and how many of those events a naive `id > cursor` tail on Postgres never saw; repeated, SQLite
   and Postgres alternated, median (min) of each run's p95;
4. an append's latency (p95, slowest of 100) while a reader holds a repeatable-read snapshot open
   and keeps reading, against the same appends with no reader, alternated, median (min).

Uses ZYMI_TUI_TEST_PG when set, otherwise starts a server with scripts/pg_start and stops it after.
Every Postgres figure is printed with its ratio to SQLite's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.kinds import Event, ResponseReady
from zymi_tui.events.location import location_of
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.tail import DEFAULT_POLL_S, tail

ROOT = Path(__file__).resolve().parents[1]
STREAMS = 8
WRITER = """
import asyncio, json, os, sys, time
from zymi_tui.events.kinds import Event
from zymi_tui.events.kinds import ResponseReady
from zymi_tui.events.factory import open_writer
from zymi_tui.events.location import location_of

async def main(store, me, n, log_path, go):
    writer = await open_writer(location_of(store))
    open(go + f"-{me}.ready", "w").close()
    events = [Event.new(f"s{(i + me) % %(streams)d}", ResponseReady(conversation_id="c", content="x" * 200), f"w{me}")
              for i in range(n)]
    while not os.path.exists(go):
        await asyncio.sleep(0.002)
    log = []
    for event in events:
        await writer.append(event)
        log.append([event.id, time.time()])
    await writer.close()
    with open(log_path, "w") as f:
        json.dump(log, f)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]))
""".replace("%(streams)d", str(STREAMS))


def ratio(pg: float, base: float) -> str:
    return f"{pg / base:.2f}x SQLite" if base else "n/a"


class Server:
    """The Postgres URL to measure against, and a fresh schema per measurement."""

    def __init__(self) -> None:
        self.started: dict[str, str] | None = None
        url = os.environ.get("ZYMI_TUI_TEST_PG")
        if not url:
            env = {**os.environ, "ZYMI_TUI_PG_STATE": tempfile.mkdtemp(prefix="zymi-tui-pg-bench-")}
            done = subprocess.run([str(ROOT / "scripts" / "pg_start")], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"bench_postgres: no server: set ZYMI_TUI_TEST_PG or fix scripts/pg_start ({done.stderr})")
            url = done.stdout.strip().split("=", 1)[1].strip("'")
            self.started = env
        self.url = url
        self.schemas: list[str] = []

    async def fresh(self) -> str:
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        conn = await asyncpg.connect(self.url)
        await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.close()
        self.schemas.append(schema)
        return f"{self.url}{'&' if '?' in self.url else '?'}search_path={schema}"

    async def close(self) -> None:
        conn = await asyncpg.connect(self.url)
        for schema in self.schemas:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await conn.close()
        if self.started:
            subprocess.run([str(ROOT / "scripts" / "pg_stop")], env=self.started, capture_output=True)


def start_writers(store: str, writers: int, n: int, work: Path) -> tuple[list[subprocess.Popen[bytes]], Path]:
    go = work / f"go-{uuid.uuid4().hex}"
    procs = []
    for me in range(writers):
        log = str(work / f"{go.name}-{me}.json")
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, store, str(me), str(n), log, str(go)]))
    return procs, go


async def wait_ready(store: str) -> None:
    await (await open_writer(location_of(store))).close()  # schema in place before any writer or reader starts


async def writers_connected(go: Path, writers: int) -> None:
    while len(list(go.parent.glob(f"{go.name}-*.ready"))) < writers:
        await asyncio.sleep(0.02)


async def appends_per_second(store: str, writers: int, n: int, work: Path) -> float:
    await wait_ready(store)
    procs, go = start_writers(store, writers, n, work)
    await writers_connected(go, writers)
    started = time.perf_counter()
    go.touch()
    for p in procs:
        if await asyncio.to_thread(p.wait) != 0:
            sys.exit("bench_postgres: a writer failed")
    return writers * n / (time.perf_counter() - started)


async def naive_tail(url: str, stop: asyncio.Event, seen: set[int]) -> None:
    """What zymi's own watcher does on Postgres: `id > cursor`, the cursor moved to the last id read."""
    conn = await asyncpg.connect(url)
    cursor = 0
    while not stop.is_set():
        rows = await conn.fetch("SELECT id FROM events WHERE id > $1 ORDER BY id", cursor)
        if rows:
            seen.update(r[0] for r in rows)
            cursor = rows[-1][0]
        await asyncio.sleep(DEFAULT_POLL_S)
    await conn.close()


async def tail_delays(store: str, writers: int, n: int, work: Path) -> tuple[list[float], int | None]:
    """Commit-to-seen delays of our tail; on Postgres also how many events a naive tail never saw."""
    await wait_ready(store)
    procs, go = start_writers(store, writers, n, work)
    reader = await open_reader(location_of(store))
    seen: dict[str, float] = {}
    stop = asyncio.Event()
    naive: set[int] = set()
    order: list[int] = []
    naive_task = asyncio.create_task(naive_tail(store, stop, naive)) if store.startswith("postgres") else None

    async def follow() -> None:
        async for batch in tail(reader, await reader.max_global_id(), poll_s=DEFAULT_POLL_S, stop=stop):
            now = time.time()
            seen.update((se.event.id, now) for se in batch)
            order.extend(se.global_id for se in batch)
            if len(seen) >= writers * n:
                stop.set()

    task = asyncio.create_task(follow())
    await writers_connected(go, writers)
    go.touch()
    for p in procs:
        await asyncio.to_thread(p.wait)
    await asyncio.wait_for(task, 30)
    await reader.close()
    if naive_task:
        await asyncio.sleep(2 * DEFAULT_POLL_S)
        stop.set()
        await naive_task
    committed: dict[str, float] = {}
    for me in range(writers):
        committed.update(dict(json.loads((work / f"{go.name}-{me}.json").read_text())))
    if order != sorted(set(order)) or len(order) != writers * n:
        sys.exit(f"bench_postgres: the tail on {store} did not deliver every event once, in order")
    delays = sorted(seen[eid] - t for eid, t in committed.items())
    return delays, (writers * n - len(naive)) if naive_task else None


async def fill_sqlite(path: Path, n: int) -> None:
    writer = await SqliteWriter.open(path)
    t0 = time.time_ns()
    for start in range(0, n, 1000):
        await writer.append_many([
            Event.new(f"run-{i // 500}", ResponseReady(conversation_id="c", content="x" * 300), "bench",
                      timestamp_ns=t0 + i * 1000)
            for i in range(start, min(n, start + 1000))
        ])  # fmt: skip
    await writer.close()


async def read_all(store: str) -> tuple[float, int]:
    reader = await open_reader(location_of(store))
    started = time.perf_counter()
    cursor, count = 0, 0
    while True:
        page = await reader.read_after(cursor, 2000)
        count += len(page.events)
        cursor = page.last_global_id
        if page.rows_scanned < 2000:
            break
    elapsed = time.perf_counter() - started
    await reader.close()
    return elapsed, count


async def bare_select_pg(url: str) -> float:
    conn = await asyncpg.connect(url)
    started = time.perf_counter()
    await conn.fetch("SELECT id, stream_id, sequence, data FROM events ORDER BY id")
    elapsed = time.perf_counter() - started
    await conn.close()
    return elapsed


def bare_select_sqlite(path: Path) -> float:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        started = time.perf_counter()
        con.execute("SELECT id, stream_id, sequence, data FROM events ORDER BY id").fetchall()
        return time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))] * 1000


def med_min(values: list[float]) -> str:
    return f"{statistics.median(values):5.0f} ({min(values):.0f})"


async def append_latencies(url: str, reading: bool, n: int = 100) -> list[float]:
    """Seconds each of n appends took, with or without a reader holding a snapshot and reading."""
    writer = await open_writer(location_of(url))
    for i in range(20):
        await writer.append(Event.new(f"s{i % 3}", ResponseReady(conversation_id="c", content="x"), "bench"))
    conn = await asyncpg.connect(url)
    tx = conn.transaction(isolation="repeatable_read", readonly=True)
    await tx.start()
    await conn.fetch("SELECT * FROM events")  # the snapshot taken, its locks held until the end
    reader = await open_reader(location_of(url))
    stop = asyncio.Event()

    async def keep_reading() -> None:
        cursor = 0
        while not stop.is_set():
            cursor = (await reader.read_after(cursor, 5)).last_global_id
            await asyncio.sleep(0)

    busy = asyncio.create_task(keep_reading()) if reading else None
    took: list[float] = []
    for i in range(n):
        started = time.perf_counter()
        await writer.append(Event.new(f"s{i % 3}", ResponseReady(conversation_id="c", content="y"), "bench"))
        took.append(time.perf_counter() - started)
    stop.set()
    if busy:
        await busy
    await tx.rollback()
    await conn.close()
    await reader.close()
    await writer.close()
    return sorted(took)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=150, help="events per writer process (default 150)")
    ap.add_argument("--read", type=int, default=100_000, help="events in the full-read store (default 100000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the tail and snapshot figures (default 3)")
    ap.add_argument("--only", default="append,read,tail,snapshot", help="sections to run, comma-separated")
    args = ap.parse_args()
    only = set(args.only.split(","))
    server = Server()
    work = Path(tempfile.mkdtemp(prefix="zymi-tui-bench-"))
    print(f"bench_postgres: {os.cpu_count()} CPU(s); Postgres at {server.url.split('@')[-1]}; SQLite in {work}")
    try:
        if "append" in only:
            await appends_section(server, work, args.events)
        if "read" in only:
            await read_section(server, work, args.read)
        if "tail" in only:
            await tail_section(server, work, args.events, args.repeat)
        if "snapshot" in only:
            await snapshot_section(server, args.repeat)
    finally:
        await server.close()


async def appends_section(server: Server, work: Path, events: int) -> None:
    print("\nappends per second (one transaction per event, concurrent writer processes)")
    for writers in (1, 4, 8):
        lite = await appends_per_second(str(work / f"append-{writers}.db"), writers, events, work)
        pg = await appends_per_second(await server.fresh(), writers, events, work)
        print(f"  {writers} writer(s): Postgres {pg:7.0f}/s   SQLite {lite:7.0f}/s   ({ratio(pg, lite)})")


async def read_section(server: Server, work: Path, n: int) -> None:
    print(f"\nfull read of {n} events (reader: decoded, paged by 2000) vs a bare SELECT of the rows")
    db = work / "read.db"
    await fill_sqlite(db, n)
    url = await server.fresh()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zymi_tui.cli", "migrate", str(db), url], capture_output=True)
    migrate_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"bench_postgres: migrate failed: {done.stderr.decode()}")
    pg_read, pg_n = await read_all(url)
    lite_read, lite_n = await read_all(str(db))
    assert pg_n == lite_n == n, (pg_n, lite_n)
    pg_bare, lite_bare = await bare_select_pg(url), bare_select_sqlite(db)
    print(f"  Postgres: reader {pg_read:.2f} s, bare SELECT {pg_bare:.2f} s ({pg_read / pg_bare:.1f}x bare)"
          f"   reader vs SQLite reader: {ratio(pg_read, lite_read)}")  # fmt: skip
    print(f"  SQLite:   reader {lite_read:.2f} s, bare SELECT {lite_bare:.2f} s ({lite_read / lite_bare:.1f}x bare)")
    print(f"  migrate SQLite -> Postgres: {migrate_s:.1f} s ({n / migrate_s:.0f} events/s, CLI start incl.)")


async def tail_section(server: Server, work: Path, events: int, repeat: int) -> None:
    print(f"\ntail delay under 4 writers (commit -> seen by a tailing reader, poll 100 ms), {repeat} run(s)")
    p95: dict[str, list[float]] = {"Postgres": [], "SQLite": []}
    for run in range(repeat):
        lite_d, _ = await tail_delays(str(work / f"tail-{run}.db"), 4, events, work)
        pg_d, missed = await tail_delays(await server.fresh(), 4, events, work)
        for name, d in (("Postgres", pg_d), ("SQLite", lite_d)):
            p95[name].append(pct(d, 0.95))
            print(f"  run {run + 1} {name:8}: p50 {pct(d, 0.5):5.0f} ms   p95 {pct(d, 0.95):5.0f} ms"
                  f"   max {d[-1] * 1000:5.0f} ms   ({len(d)} events)")  # fmt: skip
        print(f"  run {run + 1}: a naive `id > cursor` tail on the same Postgres run never saw {missed} of"
              f" {len(pg_d)} events; ours saw every one, once, in order")  # fmt: skip
    pg, lite = statistics.median(p95["Postgres"]), statistics.median(p95["SQLite"])
    print(f"  p95, median (min) of {repeat}: Postgres {med_min(p95['Postgres'])} ms"
          f"   SQLite {med_min(p95['SQLite'])} ms   ({ratio(pg, lite)})")  # fmt: skip


async def snapshot_section(server: Server, repeat: int) -> None:
    print(f"\nan append while a reader holds a snapshot and keeps reading, vs no reader (100 appends), {repeat} run(s)")
    figures: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
    for _ in range(repeat):
        for reading in (False, True):
            took = await append_latencies(await server.fresh(), reading)
            figures[reading][0].append(pct(took, 0.95))
            figures[reading][1].append(took[-1] * 1000)
    for reading, label in ((True, "reader reading"), (False, "no reader     ")):
        p95s, slowest = figures[reading]
        print(f"  {label}: p95 {med_min(p95s)} ms   slowest {med_min(slowest)} ms   (median (min) of {repeat})")
    ratio_p95 = statistics.median(figures[True][0]) / statistics.median(figures[False][0])
    print(f"  p95 with a reader vs without: {ratio_p95:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
