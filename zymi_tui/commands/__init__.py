"""The `zymi-tui` subcommands: which module serves each, and the line `zymi-tui --help` shows for it.

This table is all `cli.py` reads to list the commands, so `--version` and `--help` import nothing
else. A command's module is imported only when that command runs (or asks for its own `--help`);
it defines `configure(command, parser)`, which adds the command's arguments and sets `func`.
Add a command here, in the order it should appear in `zymi-tui --help`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple


class CommandSpec(NamedTuple):  # not a dataclass: `dataclasses` imports `inspect` (~35 M instructions at start)
    name: str
    module: str  # under zymi_tui.commands
    help: str


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("observe", "tui_cmds", "the live dashboard: runs, events, context size, call inspector"),
    CommandSpec(
        "chat", "chat_cmds", "chat with the project's chat pipeline; its context grows beside the conversation"
    ),
    CommandSpec("demo", "chat_cmds", "make a demo project (offline demo model, no API key) and open the chat on it"),
    CommandSpec("serve-web", "chat_cmds", "serve the chat to a browser on 127.0.0.1 (textual-serve)"),
    CommandSpec("events", "store_cmds", "list events (oldest first), filtered by stream or kind; --follow to tail"),
    CommandSpec("runs", "runs_cmds", "list pipeline runs, newest first (--turns: one row per chat turn)"),
    CommandSpec("verify", "verify_cmds", "verify every stream's hash chain; exit 0 when all hold, 1 when one breaks"),
    CommandSpec("replay", "context_cmds", "rebuild the context of every LLM call of a store"),
    CommandSpec("context", "context_cmds", "one LLM call's context: layers, bytes, tokens and reasons"),
    CommandSpec("compare", "tuning_cmds", "replay a store under two or more profiles side by side (what-if)"),
    CommandSpec("sweep", "tuning_cmds", "replay a store over a grid of observation_window x soft_cap_chars"),
    CommandSpec("rent", "stream_cmds", "tool results of a stream ranked by what they cost while unmasked"),
    CommandSpec("find", "stream_cmds", "was TEXT in the context at each call of a stream (and why not)?"),
    CommandSpec("advise", "advise_cmds", "findings on a store and what to change (replayed: kept only if better)"),
    CommandSpec("export", "export_cmds", "a store's LLM calls as LHAR (context-lens) or OTLP/JSON spans"),
    CommandSpec(
        "collect", "telemetry_cmds", "receive OpenTelemetry GenAI traces (OTLP/HTTP) from any agent into a store, live"
    ),
    CommandSpec("import", "telemetry_cmds", "an OTLP/JSON or LHAR trace file into a store (any agent's model calls)"),
    CommandSpec("tune", "stream_cmds", "the knob editor (or --compare / --sweep screens) on a store"),
    CommandSpec("run", "engine_cmds", "run a pipeline of a zymi project (zymi's `run`)"),
    CommandSpec("init", "engine_cmds", "create a zymi project here (on the offline demo model)"),
    CommandSpec("serve", "engine_cmds", "run pipelines on every PipelineRequested (zymi's `serve`)"),
    CommandSpec(
        "resume",
        "resume_cmds",
        "fork a run at a step: upstream frozen, the rest re-run (zymi's `resume`), under other knobs",
    ),
    CommandSpec("policy", "policy_cmds", "check the verdict the project's policy gives a shell command or file path"),
    CommandSpec("migrate", "migrate_cmds", "copy an event store (SQLite <-> Postgres) row for row; resumable"),
)

COMMAND_BY_NAME: dict[str, CommandSpec] = {c.name: c for c in COMMANDS}


@contextmanager
def modules_loading(own_process: bool) -> Iterator[None]:
    """While a command's modules load, in a process that runs one command line (`own_process`; not a test
    calling `cli.main`): their classes, functions and schemas live as long as the process, so no GC pass
    traces them as they load, and they are frozen after (out of every later collection's way)."""
    if not own_process:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
