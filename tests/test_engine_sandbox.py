"""The OS sandbox under the shell policy (engine/sandbox.py): where bubblewrap works, the agent's shell
runs in it (project read-only, allowed_dirs writable, no network, own /proc, no disks), and a run says
so at start-up; where it does not, the start-up line says the parser alone decides. Checked with real
processes: a real `bwrap`, a real shell, a real listener on loopback, a real `zymi-tui run`."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NO_BWRAP
from tests.test_engine_failures import BIN, Script, _answer, llm  # noqa: F401  (llm: a fixture)
from tests.waiting import LIMIT, wait_until
from zymi_tui.engine.config import ShellRuntime
from zymi_tui.engine.sandbox import bwrap_problem, make_sandbox
from zymi_tui.engine.shell import ShellSession

PROBLEM = bwrap_problem(shutil.which("bwrap"))
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"{NO_BWRAP}: {PROBLEM}")


def test_without_bwrap_the_start_up_line_says_the_parser_alone_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    box = make_sandbox(tmp_path, ["./out"], ShellRuntime())
    assert not box.active
    assert box.line == "sandbox: none (bubblewrap (bwrap) is not installed); the shell policy's parser alone decides"
    off = make_sandbox(tmp_path, [], ShellRuntime(sandbox=False))
    assert not off.active and "parser alone decides" in off.line


@needs_bwrap
async def test_the_sandboxed_shell_cannot_write_the_project_nor_reach_the_network(
    tmp_path: Path, listener: tuple[int, list[str]]
) -> None:
    port, connections = listener
    root = tmp_path / "proj"
    root.mkdir()
    (root / "project.yml").write_text("name: t\n")
    box = make_sandbox(root, ["./out"], ShellRuntime())
    assert box.active and box.line == "sandbox: bubblewrap (project read-only; writable: out; no network)"
    session = await ShellSession.start(ShellRuntime(), root, box.prefix)
    try:
        assert Path(f"/proc/{session.pid}/comm").read_text().strip() == "bash"  # the shell, not bwrap
        wrote = await session.run("echo x > out/ok.txt && echo y > project.yml", 10)
        net = await session.run(f"exec 3<>/dev/tcp/127.0.0.1/{port}", 10)
        procs = await session.run("ls /proc | grep -c '^[0-9]'", 10)
        disks = await session.run("ls /dev", 10)
        await session.run("cd out", 10)
        cwd = session.cwd()
        slow = await session.run("sleep 20", 1)  # a timeout kills the command, not the sandbox
        after = await session.run("echo alive", 10)
    finally:
        await session.close()
    assert (root / "out" / "ok.txt").read_text() == "x\n"
    assert wrote.exit_code != 0 and "Read-only file system" in wrote.stderr
    assert (root / "project.yml").read_text() == "name: t\n"
    assert net.exit_code != 0 and connections == []
    assert int(procs.stdout) < 10  # its own processes only: no /proc/1/root of the host
    assert not any(d.startswith(("sd", "nvme", "vd")) for d in disks.stdout.split())
    assert cwd == (root / "out").resolve()
    assert slow.timed_out
    assert after.stdout == "alive" or after.exit_code == 0


@needs_bwrap
async def test_the_projects_own_files_stay_read_only_inside_an_allowed_folder(tmp_path: Path) -> None:
    from zymi_tui.engine.places import Places

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "project.yml").write_text("name: t\n")
    places = Places.make(root, [], ["."], None)
    box = make_sandbox(root, ["."], ShellRuntime(), places.protected)
    session = await ShellSession.start(ShellRuntime(), root, box.prefix)
    try:
        own = await session.run("echo y > project.yml", 10)
        git = await session.run("echo y > .git/config", 10)
        free = await session.run("echo z > notes.txt", 10)
    finally:
        await session.close()
    assert own.exit_code != 0 and git.exit_code != 0 and free.exit_code == 0
    assert (root / "project.yml").read_text() == "name: t\n" and not (root / ".git" / "config").exists()
    assert (root / "notes.txt").read_text() == "z\n"


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line holds `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_bwrap
async def test_ctrl_c_while_the_sandbox_starts_leaves_nothing_behind(tmp_path: Path) -> None:
    """Cancelled at any point of its start, the sandboxed shell and its bwrap processes go, and the
    cancellation ends (it hung: bwrap killed before its child was set up left the child holding the
    pipes, so the wait for the process never ended)."""
    root = tmp_path / "proj"
    root.mkdir()
    box = make_sandbox(root, [], ShellRuntime())
    for delay in (0, 0.0003, 0.0007, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.008):
        task = asyncio.ensure_future(ShellSession.start(ShellRuntime(), root, box.prefix))
        await asyncio.sleep(delay)
        task.cancel()
        finished, _ = await asyncio.wait({task}, timeout=LIMIT)  # not wait_for: it would wait for a hung task
        assert finished, f"cancelled at {delay}s, the start never ended"
        if not task.cancelled() and task.exception() is None:
            await task.result().close()
        wait_until(lambda: not _processes_naming(str(root)), f"the sandbox cancelled at {delay}s to go")


@needs_bwrap
def test_a_run_uses_the_sandbox_when_present(
    llm: tuple[Script, int],  # noqa: F811
    listener: tuple[int, list[str]],
    tmp_path: Path,
) -> None:
    """The policy approves what it cannot see into (`python3 -c …` where the project allows it); the
    sandbox still stops the write to the project and the connection out."""
    script, port = llm
    tcp_port, connections = listener
    root = tmp_path / "p"
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "project.yml").write_text(
        f"name: t\nllm:\n  provider: openai\n  model: mock\n  base_url: http://127.0.0.1:{port}/v1\n"
        'policy:\n  enabled: true\n  allow: ["python3 *"]\n'
        'contracts:\n  file_write:\n    allowed_dirs: ["./out"]\n'
    )
    (root / "agents" / "bot.yml").write_text("name: bot\ntools: [execute_shell_command]\n")
    (root / "pipelines" / "p.yml").write_text(
        "name: p\ninputs: [{name: task}]\nsteps:\n  - id: l\n    agent: bot\n    task: '${inputs.task}'\n"
    )
    write = "python3 -c \"open('proof.txt', 'w').write('x')\""
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {tcp_port}), 3)\""
    for i, command in enumerate([write, connect]):
        script.replies.append((200, _answer(None, [(f"c{i}", "execute_shell_command", {"command": command})])))
    script.replies.append((200, _answer("done")))
    run = subprocess.run(
        [str(BIN), "run", "p", "-i", "task=go", "-d", str(root)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "sandbox: bubblewrap (project read-only; writable: out; no network)" in run.stdout
    results = [body["messages"][-1]["content"] for body in script.bodies[1:]]
    assert results[0].startswith("[tool error] exit code 1") and "Read-only file system" in results[0], results[0]
    assert results[1].startswith("[tool error] exit code 1"), results[1]
    assert not (root / "proof.txt").exists() and connections == []
    con = sqlite3.connect(f"file:{root / '.zymi' / 'events.db'}?mode=ro", uri=True)
    verdicts = [r[0] for r in con.execute("SELECT data FROM events WHERE kind_tag = 'intention_evaluated'")]
    con.close()
    assert len(verdicts) == 2 and all('"approved"' in v for v in verdicts)  # the parser let both through


def test_the_same_commands_without_the_sandbox_do_escape(
    llm: tuple[Script, int],  # noqa: F811
    listener: tuple[int, list[str]],
    tmp_path: Path,
) -> None:
    """The control for the test above: with `runtime.shell.sandbox: false` both commands succeed, so
    it is the sandbox (and nothing else) that stopped them."""
    script, port = llm
    tcp_port, connections = listener
    root = tmp_path / "p"
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "project.yml").write_text(
        f"name: t\nllm:\n  provider: openai\n  model: mock\n  base_url: http://127.0.0.1:{port}/v1\n"
        'policy:\n  enabled: true\n  allow: ["python3 *"]\nruntime:\n  shell:\n    sandbox: false\n'
    )
    (root / "agents" / "bot.yml").write_text("name: bot\ntools: [execute_shell_command]\n")
    (root / "pipelines" / "p.yml").write_text(
        "name: p\ninputs: [{name: task}]\nsteps:\n  - id: l\n    agent: bot\n    task: '${inputs.task}'\n"
    )
    write = "python3 -c \"open('proof.txt', 'w').write('x')\""
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {tcp_port}), 3)\""
    for i, command in enumerate([write, connect]):
        script.replies.append((200, _answer(None, [(f"c{i}", "execute_shell_command", {"command": command})])))
    script.replies.append((200, _answer("done")))
    run = subprocess.run(
        [str(BIN), "run", "p", "-i", "task=go", "-d", str(root)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "sandbox: off (runtime.shell.sandbox: false)" in run.stdout
    assert (root / "proof.txt").read_text() == "x"
    wait_until(lambda: connections, "the listener to accept the connection")
    assert connections == ["connected"]
