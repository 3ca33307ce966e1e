"""Shared fixtures: the oracle stores recorded by the real zymi engine (tests/oracle/, inside the repository),
copied so nothing touches them."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import leftovers

pytest_plugins = ["pytester", "tests.skip_guard"]

ROOT = Path(__file__).resolve().parents[1]
# recorded from zymi-core 0.9.3, part of the repository (see tests/oracle/README.md)
ORACLE = ROOT / "tests" / "oracle"
SCENARIOS = sorted(p.name for p in ORACLE.iterdir() if (p / "events.db").exists())
HARNESS = ORACLE / "harness" / "make_stores.py"


@pytest.fixture(autouse=True, scope="session")
def _one_machine_for_every_test(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test sees the same time zone and a private config, cache and zymi home, whatever ran before it (the
    order is shuffled) and whatever the machine holds (~/.config/zymi-tui, ~/.zymi). Subprocesses inherit it."""
    home = tmp_path_factory.mktemp("home")
    # pytest started with Ctrl-C ignored (`.ci/run > log &` from a non-interactive shell) would hand that
    # to every child, and a command started so keeps it ignored: the tests that interrupt one need it live
    sigint = signal.getsignal(signal.SIGINT)
    if sigint == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with pytest.MonkeyPatch.context() as mp:
        # pytest-xdist's workers set COLUMNS=80 and LINES=24, which a TUI on a pty or in tmux takes over the
        # terminal's own size (shutil.get_terminal_size): a test that sizes its terminal would not get it
        mp.delenv("COLUMNS", raising=False)
        mp.delenv("LINES", raising=False)
        mp.setenv("TZ", "UTC")
        time.tzset()
        mp.setenv("ZYMI_TUI_CONFIG_DIR", str(home / "zymi-tui"))
        mp.setenv("ZYMI_HOME", str(home / "zymi"))
        mp.setenv("ZYMI_TUI_CACHE_DIR", str(home / "cache"))  # the tokenizer's ranks, made once a session
        yield
    time.tzset()
    signal.signal(signal.SIGINT, sigint)


LEFTOVER_WAIT_S = 10.0  # what is still exiting when the session ends gets this long
TEST_GRACE_S = 2.0  # what a test started and is still exiting when it ends gets this long
_left_by_tests: list[str] = []  # "pid N: command (left by test X)", each killed at its test's end


@pytest.fixture(autouse=True, scope="session")
def _no_process_left_behind() -> Iterator[None]:
    """The session fails (an error at its last teardown) if any test left a process behind (killed at that
    test's end, so none outlives it) or any process the session started is alive at its end (killed too):
    each is named with its command line, and the test that left it."""
    leftovers.become_subreaper()
    yield
    leftovers.run_session_cleanups()
    found = [
        f"pid {pid}: {cmd} (alive at the session's end)" for pid, cmd in leftovers.left_behind(LEFTOVER_WAIT_S).items()
    ]
    found = _left_by_tests + found
    if found:
        pytest.fail(f"{len(found)} process(es) outlived what started them (killed):\n  " + "\n  ".join(found))


@pytest.fixture(autouse=True)
def _no_process_left_by_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A process the test started (below pytest, at any depth: it is a subreaper) that is still alive when
    the test ends is killed then and reported at the session's end. Two /proc scans a test (~2 ms); a
    process started by a module or session fixture is there before the test and is left alone."""
    before = leftovers.descendants()
    sigint, mask = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, set())
    yield
    # a test that ignored or blocked Ctrl-C in this process does not hand that to every later test's children
    signal.signal(signal.SIGINT, sigint)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    for pid, cmd in leftovers.left_behind(TEST_GRACE_S, ignore=before, spared=True).items():
        _left_by_tests.append(f"pid {pid}: {cmd} (left by {request.node.nodeid})")
    leftovers.reap_orphans()


@pytest.fixture(autouse=True)
def _private_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A saved profile or price table written by one test is never read by another."""
    home = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("ZYMI_TUI_CONFIG_DIR", str(home / "zymi-tui"))
    monkeypatch.setenv("ZYMI_HOME", str(home / "zymi"))


def oracle_db(name: str) -> Path:
    return ORACLE / name / "events.db"


def noting_cli(module: str, method: str, note: str) -> str:
    """Source for `python -c SOURCE NOTES ARGS...`: the CLI (ARGS) in a process of its own, each call of
    `METHOD` ("Class.name") of `zymi_tui.commands.MODULE` noted first as a line of NOTES, the f-string
    `note` over its `self` (a tree without the module notes nothing)."""
    cls, name = method.split(".")
    return (
        "import os, sys\n"
        "from zymi_tui.cli import main\n"
        "try:\n"
        f"    from zymi_tui.commands import {module} as partners\n"
        "except ImportError:\n"
        "    partners = None\n"
        "if partners is not None:\n"
        f"    method = partners.{cls}.{name}\n"
        "    def noted(self, *args):\n"
        "        with open(sys.argv[1], 'a') as f:\n"
        f'            f.write(f"{note}\\n")\n'
        "        method(self, *args)\n"
        f"    partners.{cls}.{name} = noted\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )


def cloned_runs(tmp: Path, clones: int, scenario: str = "coding_default") -> Path:
    """`clones` copies of the run of `scenario`, one after another, each under its own stream ids."""
    src = sqlite3.connect(f"file:{oracle_db(scenario)}?mode=ro", uri=True)
    ddl = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'")]
    rows = src.execute(
        "SELECT stream_id, sequence, timestamp, kind_tag, data, source FROM events ORDER BY id"
    ).fetchall()
    src.close()
    db = tmp / "runs.db"
    out = sqlite3.connect(db)
    out.execute(ddl[0])
    for k in range(clones):
        for stream, seq, ts, tag, data, source in rows:
            new_stream = stream.replace("pipeline-main-", f"pipeline-main-{k}-", 1)
            env = json.loads(data) | {"id": str(uuid.uuid4()), "stream_id": new_stream}
            out.execute(
                "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (env["id"], new_stream, seq, ts, tag, json.dumps(env, separators=(",", ":")), source),
            )
    out.commit()
    out.close()
    return db


def long_run_store(folder: Path, events: int) -> Path:
    """One long run of `events` events in `folder`/events.db, made by benchmarks/make_long_run.py as a user would."""
    db = folder / "events.db"
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "make_long_run.py"
    subprocess.run([sys.executable, str(script), str(db), "--events", str(events)], check=True, capture_output=True)
    return db


def copy_store(src: Path, dst_dir: Path) -> Path:
    """A private copy made with SQLite's backup API (safe even if the source were being written)."""
    dst = dst_dir / src.name
    dst_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as s, sqlite3.connect(dst) as d:
        s.backup(d)
    return dst


def write_sql(db: Path, statement: str, *params: object) -> None:
    """One write to a copied store with plain sqlite3 (how a test tampers with it), committed."""
    con = sqlite3.connect(db)
    try:
        con.execute(statement, params)
        con.commit()
    finally:
        con.close()


def zymi_bin() -> str | None:
    """The real zymi-core 0.9.3 CLI: beside this Python (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "zymi"
    return str(beside) if beside.exists() else shutil.which("zymi")


def zymi_tui_bin() -> str:
    beside = Path(sys.executable).parent / "zymi-tui"
    return str(beside) if beside.exists() else "zymi-tui"


# The only reasons a test may skip (tests/skip_guard.py fails the run on any other): these prefixes.
NO_ZYMI = "no zymi binary: the real zymi-core 0.9.3 CLI is not installed in this venv nor on PATH"
NO_POSTGRES = "no PostgreSQL server"
NO_BWRAP = "no usable bubblewrap"  # the OS sandbox's tests (engine/sandbox.py), with the reason after it
NO_STRACE = "no strace"  # the oracle of what a shell command really opens (tests/test_engine_touch_oracle.py)
requires_zymi = pytest.mark.skipif(zymi_bin() is None, reason=NO_ZYMI)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot_dir(folder: Path) -> dict[str, str]:
    """Every file in a folder with its checksum: to prove a read left no byte and no file behind."""
    return {p.name: sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP port on loopback noting each connection made to it ("connected"): what a sandbox must stop."""
    got: list[str] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append("connected")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    stop.set()
    thread.join()
    server.close()
