"""Chaos rounds on one SQLite store: writers (ours and the real zymi), readers, kill -9 and SIGINT at
random moments; after each round, issue 29's invariants.

Used by tests/test_store_chaos.py (a few short rounds) and benchmarks/soak_store.py (as long as asked).
Every random choice comes from one seed, printed, so a failing round can be replayed
(`ZYMI_TUI_CHAOS_SEED=<seed>`); the moments processes reach are the machine's own.

A round starts, at once:
- writers: `zymi-tui run` and `zymi run` of a tool-only pipeline (no model needed), each a few runs in
  a row; and appenders, Python processes that append events through our `SqliteWriter` to a stream they
  share and print each event's id once its append has returned;
- readers: `zymi-tui events --follow`, and `zymi-tui verify` / `runs` in a loop;
- some writers are sent SIGKILL or SIGINT after a random delay.
After it, with every process gone:
- `PRAGMA integrity_check` is `ok`;
- every run whose process exited 0 is listed, by `zymi-tui runs` and by `zymi runs`, as ok;
- every event id an appender printed is in the store;
- `zymi-tui verify` and `zymi verify` pass, and no process printed a traceback (but one sent SIGINT:
  that SIGINT during start-up prints one is item 5 of issue 29).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
OURS = str(BIN / "zymi-tui")
ZYMI = str(BIN / "zymi")
WAIT_S = 120.0  # a process still running this long after its round is a failure (it is killed)

PROJECT = """name: chaos
version: "0.1"
policy:
  enabled: true
  allow: ["echo *"]
"""
PIPELINE = """name: p
inputs:
  - name: tag
    required: true
steps:
  - id: a
    tool: execute_shell_command
    args:
      command: "echo a ${inputs.tag}"
  - id: b
    tool: execute_shell_command
    args:
      command: "echo b ${steps.a.output}"
    depends_on: [a]
  - id: c
    tool: execute_shell_command
    args:
      command: "echo c ${inputs.tag}"
    depends_on: [a]
output:
  step: b
"""
# appends `n` events to a shared stream; prints each id once its append has returned
APPENDER = """
import asyncio, sys
from zymi_tui.events.kinds import Event
from zymi_tui.events.kinds import UserMessageReceived
from zymi_tui.events.messages import UserMessage
from zymi_tui.events.sqlite_write import SqliteWriter

async def go(db, tag, n):
    writer = await SqliteWriter.open(db)
    try:
        for i in range(n):
            kind = UserMessageReceived(content=UserMessage(content=f"{tag} {i}"), connector="chaos")
            event = Event.new("chaos-appenders", kind, "chaos")
            await writer.append(event)
            print(event.id, flush=True)
    finally:
        await writer.close()

asyncio.run(go(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
READ_LOOP = """
import subprocess, sys, time
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    for args in (["verify"], ["runs"]):
        done = subprocess.run([sys.argv[1], *args], capture_output=True, text=True)
        if done.returncode != 0 or "Traceback" in done.stderr:
            print(f"`zymi-tui {args[0]}` during the round exited {done.returncode}: {done.stderr.strip()[:300]}")
            sys.exit(1)
"""


def make_project(root: Path) -> Path:
    (root / "pipelines").mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text(PROJECT, encoding="utf-8")
    (root / "pipelines" / "p.yml").write_text(PIPELINE, encoding="utf-8")
    return root


@dataclass
class Proc:
    kind: str  # ours | zymi | appender | follow | read-loop
    tags: list[str]  # the runs' tags, in order (writers of runs)
    popen: subprocess.Popen[str]
    signals: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, signal) still to send
    sent: list[int] = field(default_factory=list)
    out: str = ""
    err: str = ""

    def run_codes(self) -> dict[str, int]:
        """tag -> exit status of each run the writer's loop made (`RC <tag> <status>` lines)."""
        lines = (line.split() for line in self.out.splitlines() if line.startswith("RC "))
        return {parts[1]: int(parts[2]) for parts in lines if len(parts) == 3}


@dataclass
class Round:
    number: int
    procs: list[Proc] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    runs_ok: int = 0
    appended: int = 0

    def summary(self) -> str:
        kinds = ", ".join(
            f"{p.kind}{''.join('/' + signal.Signals(n).name for n in p.sent)}={p.popen.returncode}" for p in self.procs
        )
        return f"round {self.number}: {self.runs_ok} run(s) ok, {self.appended} appended; {kinds}"


def _writer_command(kind: str, tags: list[str]) -> list[str]:
    """A shell loop of runs, one after another, each run's exit status printed (`RC <tag> <status>`);
    a run signalled ends alone, the loop goes on to the next."""
    engine = OURS if kind == "ours" else f"{ZYMI} --no-venv"
    return ["bash", "-c", f"exec 2>&1; for t in {' '.join(tags)}; do {engine} run p -i tag=$t >/dev/null; "
            'echo "RC $t $?"; done']  # fmt: skip


def _start(cmd: list[str], cwd: Path, *, quiet: bool = False) -> subprocess.Popen[str]:
    """In a session of its own (signalled as a group); `quiet`: its stdout dropped (a tail prints much)."""
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    return subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.PIPE, text=True, start_new_session=True)


def start_round(project: Path, rng: random.Random, number: int) -> Round:
    db = project / ".zymi" / "events.db"
    rnd = Round(number)
    now = time.monotonic()
    writers = [rng.choice(["ours", "ours", "ours", "zymi", "appender"]) for _ in range(rng.randint(4, 6))]
    for i, kind in enumerate(writers):
        tag = f"r{number}w{i}"
        if kind == "appender":
            proc = Proc(kind, [tag], _start([sys.executable, "-c", APPENDER, str(db), tag, str(rng.randint(20, 80))],
                                            project))  # fmt: skip
        else:
            tags = [f"{tag}n{k}" for k in range(rng.randint(2, 4))]
            proc = Proc(kind, tags, _start(_writer_command(kind, tags), project))
        for _ in range(rng.choice([0, 0, 1, 2])):
            proc.signals.append((now + rng.uniform(0.05, 2.0), rng.choice([signal.SIGKILL, signal.SIGINT])))
        proc.signals.sort()
        rnd.procs.append(proc)
    if rng.random() < 0.7:
        rnd.procs.append(
            Proc("follow", [], _start([OURS, "events", str(db), "--follow", "--raw"], project, quiet=True))
        )
    if rng.random() < 0.7:
        rnd.procs.append(Proc("read-loop", [], _start([sys.executable, "-c", READ_LOOP, OURS, "1.5"], project)))
    return rnd


def _signal(proc: Proc, sig: int) -> None:
    """To an appender, or to the run a writer's loop is making (the loop itself goes on)."""
    pids = [proc.popen.pid]
    if proc.kind in ("ours", "zymi"):
        with contextlib.suppress(OSError):
            pids = [int(c) for c in Path(f"/proc/{proc.popen.pid}/task/{proc.popen.pid}/children").read_text().split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    if pids:
        proc.sent.append(sig)


def finish_round(rnd: Round) -> None:
    """Send the planned signals, wait for the writers, stop the readers; every process ends here."""
    writers = [p for p in rnd.procs if p.kind in ("ours", "zymi", "appender")]
    deadline = time.monotonic() + WAIT_S
    try:
        while any(p.popen.poll() is None for p in writers):
            now = time.monotonic()
            for p in writers:
                while p.signals and now >= p.signals[0][0]:
                    _, sig = p.signals.pop(0)
                    if p.popen.poll() is None:
                        _signal(p, sig)
            if now > deadline:
                rnd.problems.append(f"writers still running {WAIT_S:.0f} s into the round: killed")
                break
            time.sleep(0.02)
        loop = [p for p in rnd.procs if p.kind == "read-loop"]
        for p in loop:
            try:
                p.popen.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                rnd.problems.append("the read loop did not end")
        for p in rnd.procs:
            if p.kind == "follow" and p.popen.poll() is None:
                p.popen.send_signal(signal.SIGINT)
    finally:
        for p in rnd.procs:
            try:
                p.out, p.err = (text or "" for text in p.popen.communicate(timeout=10))
            except subprocess.TimeoutExpired:
                os.killpg(p.popen.pid, signal.SIGKILL)
                p.out, p.err = (text or "" for text in p.popen.communicate())
                rnd.problems.append(f"{p.kind} did not end when asked: killed")


def _listed(cmd: list[str], cwd: Path) -> dict[str, str]:
    """prompt (`tag=…`) -> status, from a `runs --raw` listing."""
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=WAIT_S)
    if done.returncode != 0:
        return {"<listing failed>": done.stderr.strip()[:300]}
    out: dict[str, str] = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        out[str(row.get("prompt"))] = str(row.get("status"))
    return out


def check_round(project: Path, rnd: Round) -> None:
    """Issue 29's invariants on the store after `rnd`, each one broken added to `rnd.problems`."""
    db = project / ".zymi" / "events.db"
    for p in rnd.procs:
        # a SIGINT during start-up may still print a traceback (issue 29, item 5, not this check's)
        if signal.SIGINT not in p.sent and ("Traceback" in p.err or "Traceback" in p.out):
            rnd.problems.append(f"{p.kind} printed a traceback: {(p.err or p.out)[-400:]}")
        if p.kind == "read-loop" and p.popen.returncode != 0:
            rnd.problems.append(p.out.strip() or p.err.strip())
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found = [r[0] for r in con.execute("PRAGMA integrity_check")]
        ids = {r[0] for r in con.execute("SELECT event_id FROM events")}
    except sqlite3.DatabaseError as e:
        found, ids = [f"cannot be read: {e}"], set()
    finally:
        con.close()
    if found != ["ok"]:
        rnd.problems.append(f"integrity_check: {'; '.join(found[:3])}")
    ours = _listed([OURS, "runs", "--raw"], project)
    theirs = _listed([ZYMI, "--no-venv", "runs", "--raw", "-l", "1000000"], project)
    for p in rnd.procs:
        if p.kind in ("ours", "zymi"):
            for tag in [t for t, code in p.run_codes().items() if code == 0]:
                rnd.runs_ok += 1
                for who, listing in (("zymi-tui runs", ours), ("zymi runs", theirs)):
                    if listing.get(f"tag={tag}") != "ok":
                        rnd.problems.append(
                            f"run {tag} ({p.kind}) exited 0 but {who} shows {listing.get(f'tag={tag}')}"
                        )
        if p.kind == "appender":
            printed = p.out.split()
            rnd.appended += len(printed)
            lost = [e for e in printed if e not in ids]
            if lost:
                rnd.problems.append(f"{len(lost)} of {len(printed)} appended event(s) not in the store: {lost[:3]}")
    for name, cmd in (("zymi-tui verify", [OURS, "verify", str(db)]), ("zymi verify", [ZYMI, "verify", "-d", "."])):
        done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=WAIT_S)
        if done.returncode != 0:
            rnd.problems.append(f"{name} exited {done.returncode}: {(done.stderr or done.stdout).strip()[:300]}")


def chaos(
    project: Path, seed: int, *, rounds: int, seconds: float, log: Callable[[str], object] = print
) -> list[Round]:
    """Rounds until `rounds` are done or `seconds` have passed (a round once started is finished); stops
    at the first round that breaks an invariant. The first run of the store is made alone."""
    rng = random.Random(seed)
    make_project(project)
    first = subprocess.run([OURS, "run", "p", "-i", "tag=first"], cwd=project, capture_output=True, text=True,
                           timeout=WAIT_S)  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    end = time.monotonic() + seconds
    done: list[Round] = []
    while len(done) < rounds and time.monotonic() < end:
        rnd = start_round(project, rng, len(done) + 1)
        finish_round(rnd)
        check_round(project, rnd)
        done.append(rnd)
        log(rnd.summary())
        if rnd.problems:
            break
    return done
