"""From a million events (pass one keeps none of its decoded events) `advise` works out pass one's tokens
per byte (the sums of the store's recorded calls) in no pass of its own: with no cache model, pass one sums
them from the events it decodes anyway and totals the estimated tokens at the end; with one (a priced
model: it reads each call's tokens as they come), on two cores, a forked child sums them while pass one
replays (a pass of their own before pass one: ~2.1 s at a million events, 3.7 s of CPU on long_1m).

Seen from outside the code under test: every reading of the store from its first event (`read_kinds_rows`
after id 0) is logged with the pid of the process reading and the kinds it asks for. The advice (stdout)
and the rows named unreadable (stderr, in their order: a recorded call's first, as a pass over those
kinds names it) are byte for byte those of `--workers 1`, which forks nothing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import ORACLE, cloned_runs, long_run_store, write_sql
from zymi_tui.cores import usable_cores

# the command line's own process, pass one keeping none of its events (as from WHATIF_POOL_MIN_EVENTS), each
# pass over the store from its first event logged (pid, kinds) to the file READS names, forks counted
OBSERVED = """
import os, sys
import zymi_tui.replay.advice.run as advice_run
from zymi_tui.events.sqlite_read import SqliteReader
advice_run.WHATIF_POOL_MIN_EVENTS = 1
original = SqliteReader.read_kinds_rows
async def logged(self, tags, after, limit):
    if after == 0:
        with open(os.environ["READS"], "a") as log:
            log.write(f"{os.getpid()} {','.join(tags)}\\n")
    return await original(self, tags, after, limit)
SqliteReader.read_kinds_rows = logged
forks = []
sys.addaudithook(lambda event, _args: forks.append(event) if event == "os.fork" else None)
sys.argv = ["zymi-tui", *sys.argv[1:]]
from zymi_tui.cli import main
code = main()
print(code, len(forks), os.getpid(), file=sys.stderr)
"""
CALLS = "llm_call_started,llm_call_completed,llm_call_failed"
LEARNED = "context_compacted"  # (the compactions before pass two's later range, `learned_before`: not a replay)


def _advise(
    db: Path, project: Path | None, reads: Path, *more: str, load_below: str = "1000"
) -> tuple[str, str, int, list[tuple[bool, str]]]:
    """stdout, stderr (without the last line), the forks, and each pass from the store's start: (made by
    the command's own process, its kinds). `load_below`: a core counts as free below this load average."""
    line = ["advise", str(db), "--json", *(["--project", str(project)] if project else []), *more]
    env = {**os.environ, "ZYMI_TUI_ADVISE_HALVES_FROM": "1", "ZYMI_TUI_ADVISE_LOAD_BELOW": load_below,
           "READS": str(reads)}  # fmt: skip
    reads.write_text("")
    done = subprocess.run([sys.executable, "-c", OBSERVED, *line], capture_output=True, text=True, env=env, timeout=300)
    *err, last = done.stderr.splitlines()
    code, forks, pid = last.split()
    assert code == "0", done.stderr
    passes = [(p == pid, kinds) for p, kinds in (row.split() for row in reads.read_text().splitlines())]
    return done.stdout, "\n".join(err), int(forks), passes


def _store(shape: str, tmp: Path) -> tuple[Path, Path | None]:
    if shape == "many runs":
        db = cloned_runs(tmp, 6)
        # two unreadable rows, a recorded call's and another's: named once each, in the order of one process
        write_sql(db, "UPDATE events SET data = '{' WHERE id = (SELECT max(id) FROM events WHERE kind_tag = ?)",
                  "llm_call_completed")  # fmt: skip
        write_sql(db, "UPDATE events SET data = '{' WHERE id = (SELECT min(id) FROM events WHERE kind_tag = ?)",
                  "tool_call_completed")  # fmt: skip
        return db, ORACLE / "coding_default" / "project"
    return long_run_store(tmp, 3000), None


PRICED = ("--model", "gpt-4o")  # a cache model (OpenAI's automatic caching) prices the calls


@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_no_cache_model_pass_one_sums_the_recorded_calls_itself(shape: str, tmp_path: Path) -> None:
    db, _ = _store(shape, tmp_path)  # (no project: no provider, whose cache family would model the cache)
    out, err, forks, passes = _advise(db, None, tmp_path / "reads.log")
    out_alone, err_alone, _, passes_alone = _advise(db, None, tmp_path / "reads.log", "--workers", "1")
    assert CALLS not in [kinds for _, kinds in passes + passes_alone]  # no pass over the recorded calls
    assert [own for own, kinds in passes_alone if kinds != LEARNED] == [True]  # pass one (two: its events, spilled)
    assert forks == (1 if shape == "many runs" and usable_cores() >= 2 else 0)  # (pass two's later range)
    assert out == out_alone
    assert err == err_alone
    if shape == "many runs":
        call_row, tool_row = (_bad_row(db, kind) for kind in ("llm_call_completed", "tool_call_completed"))
        assert tool_row < call_row
        assert err.count("skipped unreadable") == 2, err
        assert err.index(f"row {call_row} ") < err.index(f"row {tool_row} "), err  # a recorded call's first


def _bad_row(db: Path, kind: str) -> int:
    with closing(sqlite3.connect(db)) as c:
        (gid,) = c.execute("SELECT id FROM events WHERE kind_tag = ? AND data = '{'", (kind,)).fetchone()
    return int(gid)


@pytest.mark.skipif(usable_cores() < 2, reason="one usable core: nothing is forked")
@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_the_recorded_calls_are_summed_in_a_forked_child_while_pass_one_replays(shape: str, tmp_path: Path) -> None:
    db, project = _store(shape, tmp_path)
    out, err, forks, passes = _advise(db, project, tmp_path / "reads.log", *PRICED)
    out_alone, err_alone, forks_alone, passes_alone = _advise(
        db, project, tmp_path / "reads.log", *PRICED, "--workers", "1"
    )
    assert forks_alone == 0
    assert [own for own, _ in passes_alone] == [True, True]  # one process: the recorded calls, pass one
    assert passes_alone[0][1] == CALLS
    own = [kinds for mine, kinds in passes if mine and kinds != LEARNED]
    assert CALLS not in own  # no pass of its own over the recorded calls in the command's process
    assert len(own) == 1  # pass one (pass two replays pass one's events, set down in a file)
    assert [kinds for mine, kinds in passes if not mine].count(CALLS) == 1  # summed by a forked child
    assert forks == (2 if shape == "many runs" else 1)  # (many runs: pass two's later range forked too)
    assert out == out_alone
    assert err == err_alone
    if shape == "many runs":
        assert err.count("skipped unreadable") == 2, err  # both rows named, in the same order as one process


def test_no_core_free_the_recorded_calls_are_summed_before_pass_one(tmp_path: Path) -> None:
    """With a cache model, on a busy machine (no core free) a child would only add the fork's cost: nothing
    is forked and the command's process sums the recorded calls in a pass of its own."""
    db, project = _store("one long run", tmp_path)
    out, _, forks, passes = _advise(db, project, tmp_path / "reads.log", *PRICED, load_below="0")
    out_alone, *_ = _advise(db, project, tmp_path / "reads.log", *PRICED, "--workers", "1")
    assert forks == 0
    assert passes == [(True, CALLS), (True, passes[1][1])]  # the calls, pass one (pass two: its events, spilled)
    assert out == out_alone
