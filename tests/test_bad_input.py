"""Hostile stores × the five reading commands: one clear line or a named skip, never a traceback or a hang.

Every store here is an oracle store (recorded by the real zymi engine) tampered with `sqlite3`, or a
file system object that is not a store at all. For each one and each of `events`, `runs`, `verify`,
`replay`, `context` the CLI runs as a subprocess and must: exit 2 with one line on stderr when the
store cannot be read at all, exit 0 with every skipped row named on stderr when only some rows are
bad (1 from `verify` when a chain is broken), print no "Traceback", finish within the timeout, and
leave the bytes of the `.db` and `-wal` files as they were.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.unprivileged import interpreter_for_nobody, readable_install
from tests.waiting import LIMIT

from .conftest import copy_store, oracle_db, write_sql, zymi_tui_bin

SCENARIO = "coding_default"
STEP = ":step:work"
COMMANDS = ("events", "events-raw", "runs", "verify", "replay", "context")
NOBODY = 65534


# ---------------------------------------------------------------- tampering helpers (plain sqlite3)


def _ids(db: Path) -> tuple[str, int, int]:
    """The run stream, the first ToolCallCompleted row and the PipelineCompleted row of the store."""
    con = sqlite3.connect(db)
    run = con.execute("SELECT stream_id FROM events WHERE kind_tag = 'pipeline_requested'").fetchone()[0]
    tool = con.execute("SELECT min(id) FROM events WHERE kind_tag = 'tool_call_completed'").fetchone()[0]
    done = con.execute("SELECT id FROM events WHERE kind_tag = 'pipeline_completed'").fetchone()[0]
    con.close()
    return run, tool, done


def _set_data(db: Path, row: int, data: bytes, *, as_blob: bool = False) -> None:
    write_sql(db, f"UPDATE events SET data = {'?' if as_blob else 'CAST(? AS TEXT)'} WHERE id = ?", data, row)


def _data(db: Path, row: int) -> bytes:
    con = sqlite3.connect(db)
    value: bytes = con.execute("SELECT CAST(data AS BLOB) FROM events WHERE id = ?", (row,)).fetchone()[0]
    con.close()
    return value


def rechain(db: Path) -> None:
    """Recompute every v2 hash and stream head over the raw bytes, as a writer of those bytes would have:
    the chain then holds, so what is tested is reading, not tamper detection."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT id, CAST(stream_id AS BLOB), CAST(event_id AS BLOB), sequence, CAST(data AS BLOB) "
        "FROM events ORDER BY stream_id, sequence"
    ).fetchall()
    prev: dict[bytes, str] = {}
    heads: dict[bytes, tuple[int, str]] = {}
    for gid, stream, event_id, seq, data in rows:
        p = prev.get(stream, "")
        h = "v2:" + hashlib.sha256(b"v2" + event_id + int(seq).to_bytes(8, "little") + data + p.encode()).hexdigest()
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (p, h, gid))
        prev[stream] = h
        heads[stream] = (seq, h)
    con.execute("DELETE FROM stream_heads")
    for stream, (seq, h) in heads.items():
        con.execute("INSERT INTO stream_heads VALUES (CAST(? AS TEXT), ?, ?)", (stream, seq, h))
    con.commit()
    con.close()


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _with_extra(data: bytes, extra: bytes) -> bytes:
    """The envelope with one more field (`"extra": <extra>`) inside its kind payload."""
    head, sep, tail = data.partition(b'"data":{')
    assert sep
    return head + sep + b'"extra":' + extra + b"," + tail


# ---------------------------------------------------------------- the store kinds


@dataclass
class Case:
    """A hostile store. `store` is what is passed as STORE; `exits` the expected code per command
    (default 0); `skipped` the row ids each command must name on stderr; `says` text each failing
    command's one line must contain; `as_nobody`: run the command as an unprivileged user."""

    store: str
    files: list[Path] = field(default_factory=list)
    exits: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, list[int]] = field(default_factory=dict)
    says: str = ""
    as_nobody: bool = False
    context_stream: str = ""


Builder = Callable[[Path], Case]


def _copy(tmp: Path) -> Path:
    return copy_store(oracle_db(SCENARIO), tmp / "store")


def _reading_case(db: Path, bad: list[int], run: str, *, verify: int = 0, runs_bad: list[int] | None = None) -> Case:
    skipped = {c: bad for c in ("events", "events-raw", "replay")}
    skipped["runs"] = runs_bad if runs_bad is not None else [r for r in bad if r == max(bad)]
    skipped["context"] = [r for r in bad if r < max(bad)]
    return Case(str(db), [db], exits={"verify": verify}, skipped=skipped, context_stream=run + STEP)


def _tamper(tmp: Path, edit: Callable[[Path, int], None], *, rechained: bool = False) -> tuple[Path, str, list[int]]:
    """The oracle store copied, `edit` applied to its first ToolCallCompleted row and its
    PipelineCompleted row, and (`rechained`) its chain recomputed: (store, run stream, those rows)."""
    db = _copy(tmp)
    run, tool, done = _ids(db)
    for row in (tool, done):
        edit(db, row)
    if rechained:
        rechain(db)
    return db, run, [tool, done]


def _deepen(depth: int, *, kind: bytes | None = None) -> Callable[[Path, int], None]:
    """An edit nesting `depth` arrays inside the row's payload (and renaming its kind to `kind`)."""

    def edit(db: Path, row: int) -> None:
        data = _with_extra(_data(db, row), _nested(depth))
        if kind is not None:
            data = data.replace(b'"type":"ToolCallCompleted"', kind).replace(b'"type":"PipelineCompleted"', kind)
        _set_data(db, row, data)

    return edit


def _bad_utf8(db: Path, row: int) -> None:
    """One byte of the row's tool result (`source`) replaced by 0xff."""
    data = _data(db, row)
    i = data.index(b'"source":"') + len(b'"source":"')
    _set_data(db, row, data[:i] + b"\xff" + data[i + 1 :])


def _lone_surrogate(db: Path, row: int) -> None:
    """The row's tool result (`source`) starts with the JSON escape of a lone surrogate, `\\ud800`
    (valid JSON syntax, but no Unicode text: zymi's serde refuses the row)."""
    data = _data(db, row)
    i = data.index(b'"source":"') + len(b'"source":"')
    _set_data(db, row, data[:i] + b"\\ud800" + data[i:])


def _sql(statement: str) -> Callable[[Path, int], None]:
    """An edit running one UPDATE on the row (`?` is its id)."""
    return lambda db, row: write_sql(db, statement, row)


def blob_data(tmp: Path) -> Case:
    """`data` stored as a BLOB holding the same UTF-8 bytes: read as the text it holds."""
    db, run, _ = _tamper(tmp, lambda db, row: _set_data(db, row, _data(db, row), as_blob=True))
    return Case(str(db), [db], context_stream=run + STEP)


def blob_binary(tmp: Path) -> Case:
    """`data` a BLOB of bytes that are not text: those rows skipped, and the chain broken there."""
    db, run, bad = _tamper(tmp, lambda db, row: _set_data(db, row, b"\x00\xff\xfe binary \x80", as_blob=True))
    return _reading_case(db, bad, run, verify=1)


def deep_json(tmp: Path) -> Case:
    """100,000 nested arrays inside a payload (the chain recomputed, so only reading is tested)."""
    db, run, bad = _tamper(tmp, _deepen(100_000), rechained=True)
    return _reading_case(db, bad, run)


def deep_json_unknown_kind(tmp: Path) -> Case:
    """An unknown kind whose payload nests 100,000 deep: an unknown kind is kept, so it must not be walked."""
    db, run, bad = _tamper(tmp, _deepen(100_000, kind=b'"type":"FromTheFuture"'), rechained=True)
    return _reading_case(db, bad, run)


def medium_deep_json(tmp: Path) -> Case:
    """900 deep: past pydantic's JSON limit, within Python's json: read, never a RecursionError later."""
    db, run, _ = _tamper(tmp, _deepen(900), rechained=True)
    return Case(str(db), [db], context_stream=run + STEP)


def bad_utf8_data(tmp: Path) -> Case:
    """One byte of a tool result replaced by 0xff (chain recomputed over the raw bytes: it holds)."""
    db, run, bad = _tamper(tmp, _bad_utf8, rechained=True)
    return _reading_case(db, bad, run)


def bad_utf8_data_tampered(tmp: Path) -> Case:
    """The same, without recomputing the chain: verify names the broken stream, exit 1."""
    db, run, bad = _tamper(tmp, _bad_utf8)
    return _reading_case(db, bad, run, verify=1)


def escaped_lone_surrogate(tmp: Path) -> Case:
    """A tool result starting with an escaped lone surrogate (chain recomputed): every reader skips the row,
    as zymi refuses it; none reads it as text it cannot print or encode."""
    db, run, bad = _tamper(tmp, _lone_surrogate, rechained=True)
    return _reading_case(db, bad, run)


def bad_utf8_stream_id(tmp: Path) -> Case:
    """The `stream_id` column of two rows ends with 0xff: they are skipped; verify sees the gaps (exit 1)."""
    db, run, bad = _tamper(
        tmp, _sql("UPDATE events SET stream_id = CAST(CAST(stream_id AS BLOB) || x'ff' AS TEXT) WHERE id = ?")
    )
    return _reading_case(db, bad, run, verify=1)


def text_sequence(tmp: Path) -> Case:
    """A `sequence` column holding text: that row skipped."""
    db, run, bad = _tamper(tmp, _sql("UPDATE events SET sequence = 'seven' WHERE id = ?"))
    return _reading_case(db, bad, run, verify=1)


def fifo(tmp: Path) -> Case:
    path = tmp / "events.db"
    os.mkfifo(path)
    return Case(str(path), exits=dict.fromkeys(COMMANDS, 2), says="is a FIFO, not an SQLite store")


def fifo_in_project(tmp: Path) -> Case:
    (tmp / "proj" / ".zymi").mkdir(parents=True)
    os.mkfifo(tmp / "proj" / ".zymi" / "events.db")
    return Case(str(tmp / "proj"), exits=dict.fromkeys(COMMANDS, 2), says="is a FIFO, not an SQLite store")


def device(tmp: Path) -> Case:
    return Case("/dev/null", exits=dict.fromkeys(COMMANDS, 2), says="is a character device, not an SQLite store")


def symlink_loop(tmp: Path) -> Case:
    (tmp / "a.db").symlink_to(tmp / "b.db")
    (tmp / "b.db").symlink_to(tmp / "a.db")
    return Case(str(tmp / "a.db"), exits=dict.fromkeys(COMMANDS, 2), says="symlink loop at")


def postgres_port(tmp: Path) -> Case:
    return Case("postgres://u@localhost:99999/db", exits=dict.fromkeys(COMMANDS, 2), says="port")


def postgres_ipv6(tmp: Path) -> Case:
    return Case("postgres://u@[::1/db", exits=dict.fromkeys(COMMANDS, 2), says="postgres://u@[::1/db")


def unreadable_folder(tmp: Path) -> Case:
    db = copy_store(oracle_db(SCENARIO), tmp / "locked")
    (tmp / "locked").chmod(0o000)
    return Case(str(db), [db], exits=dict.fromkeys(COMMANDS, 2), says="permission denied", as_nobody=True)


def wal_read_only_folder(tmp: Path) -> Case:
    """A WAL store (no -wal, no -shm) in a folder the reader may not write: no writer can be active,
    so it is read whole as an immutable snapshot (`events --follow` warns that it will not move)."""
    db = copy_store(oracle_db(SCENARIO), tmp / "ro")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    assert sorted(p.name for p in db.parent.iterdir()) == ["events.db"]
    db.chmod(0o644)
    run, _, _ = _ids(db)
    return Case(str(db), [db], as_nobody=True, context_stream=run + STEP)


KINDS: dict[str, Builder] = {
    f.__name__: f
    for f in (
        blob_data,
        blob_binary,
        deep_json,
        deep_json_unknown_kind,
        medium_deep_json,
        bad_utf8_data,
        bad_utf8_data_tampered,
        escaped_lone_surrogate,
        bad_utf8_stream_id,
        text_sequence,
        fifo,
        fifo_in_project,
        device,
        symlink_loop,
        postgres_port,
        postgres_ipv6,
        unreadable_folder,
        wal_read_only_folder,
    )
}


# ---------------------------------------------------------------- running the CLI


def _command(case: Case, command: str) -> list[str]:
    args = [command.removesuffix("-raw"), case.store]
    if command == "events-raw":
        args += ["--raw"]
    if command == "context":
        args += ["--stream", case.context_stream or "pipeline-main:step:work", "--seq", "5"]
    if command.startswith("events"):
        args += ["--all"]
    if not case.as_nobody:
        return [zymi_tui_bin(), *args]
    python = [interpreter_for_nobody(), "-m", "zymi_tui", *args]
    if os.geteuid() != 0:
        return python  # permission bits already apply to this user
    # as root they do not: run as `nobody`
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to run a command as an unprivileged user"
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *python]


def _env(case: Case, readable_path: str) -> dict[str, str]:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    if case.as_nobody:
        env |= {"HOME": tempfile.gettempdir(), "PYTHONPATH": readable_path}
    return env


@pytest.fixture(scope="session")
def readable_path() -> Iterator[str]:
    """The package and its dependencies where an unprivileged user may read them, wherever the checkout
    lies (tests/unprivileged.py)."""
    with readable_install() as path:
        yield path


def _fingerprint(files: list[Path]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for f in files:
        for p in (f, Path(f"{f}-wal")):
            try:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            except FileNotFoundError:
                out[str(p)] = None
    return out


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A fresh folder any user may enter (pytest's tmp_path is private to its user, and an
    unprivileged reader must reach the store); removed afterwards, whatever modes the test set."""
    d = Path(tempfile.mkdtemp(prefix="zymi-bad-input-"))
    d.chmod(0o755)
    yield d
    for sub in [d, *d.iterdir()]:
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o755)
    shutil.rmtree(d)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_bad_input(kind: str, command: str, open_tmp: Path, readable_path: str) -> None:
    case = KINDS[kind](open_tmp)
    before = _fingerprint(case.files)
    try:
        done = subprocess.run(
            _command(case, command), capture_output=True, text=True, timeout=LIMIT, env=_env(case, readable_path),
            cwd=open_tmp, errors="replace",
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{kind} × {command}: no answer within {LIMIT:.0f} s (a hang)")
    err = done.stderr
    assert "Traceback" not in err and "Traceback" not in done.stdout, err
    expected = case.exits.get(command, 0)
    assert done.returncode == expected, f"exit {done.returncode}, expected {expected}: {err}"
    if expected == 2:
        assert err.count("\n") == 1, err
        assert case.says.lower() in err.lower(), err
    elif case.says:
        assert case.says in err, err
    for row in case.skipped.get(command, []):
        assert f"row {row}" in err, f"row {row} is not named on stderr: {err!r}"
    if not case.skipped.get(command) and expected != 2 and not case.says:
        assert "skipped" not in err, err
    assert _fingerprint(case.files) == before


@pytest.mark.parametrize("flag", ["--kind", "--run"])
def test_a_skipped_row_does_not_end_the_listing_early(flag: str, tmp_path: Path) -> None:
    """`events -k KIND -l N` / `-r RUN -l N` list N events even when a row among them is skipped."""
    db = _copy(tmp_path)
    run, _, _ = _ids(db)
    con = sqlite3.connect(db)
    second_tool = con.execute(
        "SELECT id FROM events WHERE kind_tag = 'tool_call_completed' ORDER BY id LIMIT 1 OFFSET 1"
    ).fetchone()[0]
    con.execute("UPDATE events SET data = substr(data, 1, 30) WHERE id IN (2, ?)", (second_tool,))
    con.commit()
    con.close()
    value = "tool_call_completed" if flag == "--kind" else run
    done = subprocess.run(
        [zymi_tui_bin(), "events", str(db), flag, value, "-l", "5"], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    listed = [line for line in done.stdout.splitlines() if line.startswith("#")]
    assert len(listed) == 5, done.stdout
    bad = second_tool if flag == "--kind" else 2
    assert f"row {bad} " in done.stderr and str(bad) not in [line.split()[0][1:] for line in listed]
