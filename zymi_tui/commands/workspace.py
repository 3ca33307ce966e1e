"""What the engine commands (run, serve, chat --plain, resume) share: loading the project, zymi's output."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from zymi_tui.commands.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, drop_stdout
from zymi_tui.engine.loader import Workspace, find_root, load_workspace
from zymi_tui.events.location import StoreLocation
from zymi_tui.project.errors import ProjectError

if TYPE_CHECKING:
    from zymi_tui.engine.run_seal import SealWatch


def load_project(directory: str | None) -> Workspace:
    """The validated project at `-d DIR` (default: the current folder), failing as zymi words it."""
    try:
        return load_workspace(find_root(directory))
    except ProjectError as e:
        if e.message.startswith("no project.yml"):
            raise
        hint = e.hint
        if e.message.startswith("unresolved template variable `${env.") and "KEY" in e.message.upper():
            hint = "set it in the environment or in .env, or try the offline demo model: `llm: {provider: demo}`"
        raise ProjectError(f"failed to load project: {e.message}", hint) from None


def say(text: str) -> None:
    """One line of a run's output on stdout, flushed (zymi's progress lines). When the reader has gone
    (`zymi-tui run main | head -1`) the run goes on to its end, recorded, with its output dropped."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        drop_stdout()


def print_footer(success: bool, final_output: str | None) -> int:
    """zymi's end-of-run footer after the `---` line; the exit code it implies."""
    say("Pipeline completed successfully." if success else "Pipeline completed with errors.")
    if final_output is not None:
        say("")
        say("Final output:")
        say(final_output)
    if not success:
        print("error: pipeline had failing steps", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def say_interrupted(store: StoreLocation, watch: SealWatch) -> int:
    """The one line on stderr when Ctrl-C stopped a `run` or `resume`; exit 130."""
    where = f"its events are kept in {store}"
    if watch.sealed is None:
        text = "interrupted (Ctrl-C) before the run started"
    elif watch.interrupted:
        text = f"interrupted (Ctrl-C): the run is sealed as failed; {where}"
    else:
        text = f"interrupted (Ctrl-C) after the run ended; {where}"
    print(text, file=sys.stderr)
    return EXIT_INTERRUPTED
