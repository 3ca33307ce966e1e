"""What the engine loads before a run's first event: the context builder's modules load with the first
agent step (after the first events are written), not with the engine's modules. That a step still
builds its context is what tests/test_engine_conformance.py checks against zymi's recorded requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import NO_ZYMI, zymi_bin

LATER = ("zymi_tui.context.builder", "zymi_tui.context.rendered", "zymi_tui.events.replay_view")


def zymi_read_back(project: Path) -> list[dict[str, Any]]:
    """The store the run wrote, as the real zymi reads it: `zymi verify` passes, `zymi events --raw` lists it."""
    zymi = zymi_bin()
    assert zymi is not None, NO_ZYMI
    checked = subprocess.run([zymi, "verify"], cwd=project, capture_output=True, text=True, check=True)
    assert "\nVerified " in checked.stdout, checked.stdout
    listed = subprocess.run([zymi, "events", "--raw", "-l", "1000"], cwd=project, capture_output=True, text=True)
    return [json.loads(line) for line in listed.stdout.splitlines() if line.startswith("{")]


def test_the_run_commands_modules_leave_the_context_builder_for_the_first_step() -> None:
    code = (
        "import sys\n"
        "from zymi_tui.cli import build_parser\n"
        "build_parser('run')\n"  # the run command's modules, as `zymi-tui run` imports them
        "import zymi_tui.engine.runtime, zymi_tui.engine.runner, zymi_tui.events.sqlite_write\n"
        f"print(sorted(m for m in {LATER!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# The agent loop, the tool gate and the shell: what a `run` needs from its first step on, loaded after
# the run's first event is appended (the sandbox's probe, which says its line before the run, stays).
AFTER_FIRST_EVENT = (
    "zymi_tui.engine.agent",
    "zymi_tui.engine.tools",
    "zymi_tui.engine.policy",
    "zymi_tui.engine.shell",
    "zymi_tui.engine.shell_scan",
    "zymi_tui.engine.bash_parser",
    "zymi_tui.engine.nofollow",
)


def test_a_run_appends_its_first_event_before_loading_the_agent_and_the_tools(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    code = (
        "import sys\n"
        "import zymi_tui.engine.recorder as recorder\n"
        "emit, loaded = recorder.Recorder.emit, []\n"
        "async def first(self, *args, **kwargs):\n"
        "    if not loaded:\n"
        f"        loaded.append(sorted(m for m in {AFTER_FIRST_EVENT!r} if m in sys.modules))\n"
        "        print('at the first event:', loaded[0], file=sys.stderr, flush=True)\n"
        "    return await emit(self, *args, **kwargs)\n"
        "recorder.Recorder.emit = first\n"
        "from zymi_tui.cli import main\n"
        "sys.exit(main(['run', 'main', '-i', 'task=list the files']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout  # the agent and its tools did run, later
    assert "at the first event: []" in done.stderr, done.stderr
    kinds = [e["kind"]["type"] for e in zymi_read_back(tmp_path)]
    assert "ToolCallCompleted" in kinds, kinds  # the tools, loaded later, did run


# What a `run` needs only once its first event is written (engine/run_request.py writes it before any event
# loop): asyncio and what it brings (ssl, logging, sockets, threads' futures), the SQLite reader, the
# runner and the runtime. Their modules cost more than the rest of the start-up together.
AFTER_FIRST_EVENT_LOOP = (
    "asyncio",
    "ssl",
    "logging",
    "concurrent.futures",
    "socket",
    "selectors",
    "aiosqlite",
    "zymi_tui.engine.runner",
    "zymi_tui.engine.runtime",
    "zymi_tui.engine.recorder",
    "zymi_tui.engine.sandbox",
)

# the modules loaded when the store is first connected to (the first event is appended right after: an
# audit hook, so the check needs nothing of the code it checks)
AT_CONNECT = (
    "import sys\n"
    "seen = []\n"
    "def hook(event, args):\n"
    "    if event == 'sqlite3.connect' and not seen:\n"
    f"        seen.append(sorted(m for m in {AFTER_FIRST_EVENT_LOOP!r} if m in sys.modules))\n"
    "        print('at the store\\'s connect:', seen[0], file=sys.stderr, flush=True)\n"
    "sys.addaudithook(hook)\n"
    "from zymi_tui.cli import main\n"
    "sys.exit(main(['run', 'main', '-i', 'task=list the files']))\n"
)


def test_a_run_appends_its_first_event_before_loading_asyncio(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    done = subprocess.run([sys.executable, "-c", AT_CONNECT], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout
    assert "at the store's connect: []" in done.stderr, done.stderr
    kinds = [e["kind"]["type"] for e in zymi_read_back(tmp_path)]
    assert kinds[:2] == ["PipelineRequested", "WorkflowStarted"], kinds[:5]
    assert kinds.count("PipelineCompleted") == 1 and kinds.count("PipelineRequested") == 1, kinds


def test_a_run_on_an_http_model_makes_its_provider_before_its_first_event_without_asyncio(tmp_path: Path) -> None:
    """The provider is made (its configuration errors said) before the first event; its HTTP client
    loads asyncio and ssl at its first request. (No model listens: the run then fails, as it should.)"""
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    project = tmp_path / "project.yml"
    text = project.read_text().replace(
        "llm:\n  provider: demo\n  model: demo\n",
        "llm:\n  provider: openai\n  model: m\n  base_url: http://127.0.0.1:9/v1\n  api_key: k\n",
    )
    assert "provider: openai" in text
    project.write_text(text)
    done = subprocess.run([sys.executable, "-c", AT_CONNECT], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "at the store's connect: []" in done.stderr, done.stderr
    assert "Connection refused" in done.stdout + done.stderr, (done.stdout, done.stderr)  # the client did run


def test_the_derived_row_decoders_are_made_at_their_first_use_not_when_a_run_loads_them() -> None:
    """A run loads kind_json and row_envelope with its context builder and never decodes a stored row:
    the structs derived from the kinds (envelopes, a plot's fields) are not made then; they are once used."""
    code = (
        "import msgspec\n"
        "import zymi_tui.context.builder, zymi_tui.engine.agent\n"  # what a run's first agent step loads
        "def derived():\n"
        "    seen, todo = set(), [msgspec.Struct]\n"
        "    while todo:\n"
        "        for sub in todo.pop().__subclasses__():\n"
        "            todo.append(sub)\n"
        "            if sub.__module__ in ('zymi_tui.events.kind_json', 'zymi_tui.events.row_envelope'):\n"
        "                seen.add(sub.__name__)\n"
        "    return sorted(seen)\n"
        "print(derived())\n"
        "from zymi_tui.events.kind_json import LLM_CALL_COMPLETED, decode_row\n"
        "from zymi_tui.events.row_envelope import envelope, run_envelope\n"
        'row = \'{"id":"0b6e3c8e-9d4c-4a55-9d3c-1c1c1c1c1c1c","stream_id":"s","sequence":0,\''
        '\'"timestamp":"2026-01-01T00:00:00.000000000Z","kind":{"type":"WorkflowCompleted",'
        '"data":{"success":true}},"correlation_id":null,"causation_id":null,"source":"engine"}\'\n'
        "print(envelope(row).stream_id, run_envelope(row).kind.type, decode_row('WorkflowCompleted', row).kind.data)\n"
        "print(derived())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, decoded, after = done.stdout.splitlines()
    assert before == "['Kind']", before
    assert decoded == "s WorkflowCompleted WorkflowCompleted(success=True, zymi_tui=UNSET)", decoded
    assert {"Envelope", "RunEnvelope", "WorkflowCompletedEnvelope", "LlmCallCompletedFields"} <= set(eval(after))


def test_a_ctrl_c_as_the_first_event_is_written_waits_and_seals_the_run(tmp_path: Path) -> None:
    """The first event is written before the engine loads; a Ctrl-C pressed right then (here: sent by the
    process to itself as the store is connected to) waits until the run has started, then seals it."""
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    code = (
        "import os, signal, sys\n"
        # as a shell starts a command: Ctrl-C neither ignored nor blocked, whatever pytest's process was left with
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
        "def hook(event, args):\n"
        "    if event == 'sqlite3.connect' and not getattr(hook, 'sent', False):\n"
        "        hook.sent = True\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.addaudithook(hook)\n"
        "from zymi_tui.cli import main\n"
        "sys.exit(main(['run', 'main', '-i', 'task=list the files']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    store = tmp_path / ".zymi" / "events.db"
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.splitlines() == [
        f"interrupted (Ctrl-C): the run is sealed as failed; its events are kept in {store}"
    ], done.stderr
    events = zymi_read_back(tmp_path)
    kinds = [e["kind"]["type"] for e in events]
    assert kinds[0] == "PipelineRequested" and kinds.count("PipelineCompleted") == 1, kinds
    sealed = next(e["kind"]["data"] for e in events if e["kind"]["type"] == "PipelineCompleted")
    assert sealed["success"] is False and sealed["error"] == "interrupted (Ctrl-C)", sealed


def test_a_run_never_opens_a_reader_of_its_store(tmp_path: Path) -> None:
    """A `run` writes a stream it named itself and never reads it back: the store's reader (aiosqlite,
    its thread, a second connection) is not loaded at all; the store it wrote is whole for the real zymi."""
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    code = (
        "import sys\n"
        "from zymi_tui.cli import main\n"
        "code = main(['run', 'main', '-i', 'task=list the files'])\n"
        "print('loaded:', sorted(m for m in ('aiosqlite', 'zymi_tui.events.sqlite_read') if m in sys.modules), "
        "file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout
    assert "loaded: []" in done.stderr, done.stderr
    kinds = [e["kind"]["type"] for e in zymi_read_back(tmp_path)]
    assert kinds.count("LlmCallCompleted") >= 2 and kinds.count("PipelineCompleted") == 1, kinds
