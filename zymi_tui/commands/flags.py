"""The flags several commands share, spelled the same way and with one meaning each.

- `-r/--run RUN`: a run stream (`pipeline-<name>-<uuid>`, or a chat stream such as `term`), as
  `zymi-tui runs` lists them;
- `--step-stream STEP_STREAM`: a step stream (`<run>:step:<step id>`), where a step's LLM and tool
  calls are recorded;
- STORE and `-d/--dir DIR` (`common.add_store_arg`): where the store is;
- `--strict`: refuse to guess (`refuse_guess`): one line and exit 2 where no project (nor the store)
  gives a call's Layer A or the recorded knobs.

The spellings the commands used before (`--stream` for either kind, `events -s` as in zymi) are still
accepted, hidden from the help. Each of these flags remembers how it was typed, so that an error names
the flag the user wrote (`typed(args, "step_stream")`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zymi_tui.events.store import STEP_MARK, EventReader, run_of, step_of, step_prefix

from .common import CommandError

if TYPE_CHECKING:
    from zymi_tui.replay.call_context import CallContext

RUN_HELP = "a run stream, as `zymi-tui runs` lists them"
STEP_STREAM_HELP = "a step stream, `<run>:step:<step id>` (`zymi-tui events -r RUN` shows them)"


class Typed(argparse.Action):
    """Stores (or, with `append=True`, appends) the value and remembers the option string typed."""

    def __init__(self, option_strings: Sequence[str], dest: str, append: bool = False, **kwargs: Any) -> None:
        self.append = append
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if self.append:
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        else:
            setattr(namespace, self.dest, values)
        spelled: dict[str, str] = dict(getattr(namespace, "_typed", None) or {})
        spelled[self.dest] = option_string or self.dest
        namespace._typed = spelled


def typed(args: argparse.Namespace, dest: str) -> str:
    """The option string the user typed for `dest` (the main spelling if none was typed)."""
    spelled: dict[str, str] = getattr(args, "_typed", None) or {}
    return spelled.get(dest, {"run": "--run", "step_stream": "--step-stream"}.get(dest, "--" + dest))


def _with_aliases(
    p: argparse.ArgumentParser,
    flags: Sequence[str],
    aliases: Sequence[str],
    *,
    dest: str,
    required: bool,
    **kwargs: Any,
) -> None:
    if aliases:
        group = p.add_mutually_exclusive_group(required=required)
        group.add_argument(*flags, dest=dest, action=Typed, **kwargs)
        group.add_argument(*aliases, dest=dest, action=Typed, **{**kwargs, "help": argparse.SUPPRESS})
    else:
        p.add_argument(*flags, dest=dest, action=Typed, required=required, **kwargs)


def add_run_arg(
    p: argparse.ArgumentParser,
    help: str,
    *,
    repeatable: bool = False,
    required: bool = False,
    aliases: Sequence[str] = (),
    **kwargs: Any,
) -> None:
    """`-r/--run RUN` (repeatable: a list), with hidden `aliases` (old spellings)."""
    if repeatable:
        kwargs["append"] = True
    _with_aliases(p, ["-r", "--run"], aliases, dest="run", required=required, metavar="RUN", help=help, **kwargs)


def add_runs_filter(p: argparse.ArgumentParser) -> None:
    """`-r/--run RUN`, repeatable: only these runs (default: every run)."""
    add_run_arg(p, "only this run stream (repeatable; default: every run)", repeatable=True)


def add_step_stream_arg(p: argparse.ArgumentParser, help: str, *, required: bool = False) -> None:
    """`--step-stream STEP_STREAM`, with the old spelling `--stream` hidden."""
    _with_aliases(
        p, ["--step-stream"], ["--stream"], dest="step_stream", required=required, metavar="STEP_STREAM", help=help
    )


def add_step_args(p: argparse.ArgumentParser, *, run: bool = True) -> None:
    """Which step stream: `--step-stream STEP_STREAM`, or `-r RUN` and `--step STEP` (`--step` may be left out
    when the run has one step stream)."""
    add_step_stream_arg(p, STEP_STREAM_HELP)
    if run:
        add_run_arg(p, RUN_HELP + "; with --step, instead of --step-stream")
    p.add_argument("--step", metavar="STEP", help="a step id of the run given with -r (default: its only step)")


def add_strict_arg(p: argparse.ArgumentParser) -> None:
    """`--strict`: see `refuse_guess`."""
    p.add_argument(
        "--strict", action="store_true",
        help="refuse to guess: fail when no project (nor the store) gives Layer A or the recorded knobs",
    )  # fmt: skip


def refuse_guess(row: CallContext, strict: bool) -> None:
    """With --strict, a call whose Layer A or recorded knobs would be guessed stops the command."""
    guessed = row.guessed if strict else []
    if guessed:
        raise CommandError(
            f"--strict: {' and '.join(guessed)} of {row.stream_id} would be guessed: no project describes this store",
            hint="pass --project DIR, or leave out --strict to see an estimate marked as one",
        )


def _names(items: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" … ({len(items)} in all)" if len(items) > most else "") if items else "(none)"


async def resolve_step_stream(reader: EventReader, args: argparse.Namespace, *, required: bool = True) -> str | None:
    """The step stream named by `--step-stream`, or by `-r RUN [--step STEP]`; errors name the flag typed."""
    known = [s.stream_id for s in await reader.streams()]
    if args.step_stream:
        flag = typed(args, "step_stream")
        if STEP_MARK not in args.step_stream:
            raise CommandError(
                f"{flag} {args.step_stream}: not a step stream (`<run>:step:<step id>`); "
                f"for a run stream, use -r {args.step_stream}"
            )
        if args.step_stream not in known:
            siblings = sorted(s for s in known if run_of(s) == run_of(args.step_stream) and STEP_MARK in s)
            raise CommandError(
                f"{flag} {args.step_stream}: no such step stream in the store; "
                f"its run's step streams: {_names(siblings)}"
            )
        stream: str = args.step_stream
        return stream
    run = getattr(args, "run", None)
    if not run:
        if args.step:
            raise CommandError(f"--step {args.step}: name its run with -r RUN")
        if required:
            raise CommandError("which step stream? pass --step-stream STEP_STREAM, or -r RUN [--step STEP]")
        return None
    flag = typed(args, "run")
    if run not in known:
        raise CommandError(f"{flag} {run}: no such run stream in the store; see `zymi-tui runs`")
    steps = sorted(step for s in known if run_of(s) == run and (step := step_of(s)) is not None)
    if args.step:
        if args.step not in steps:
            raise CommandError(f"--step {args.step}: run {run} has no such step; its steps: {_names(steps)}")
        return step_prefix(run) + str(args.step)
    if len(steps) != 1:
        raise CommandError(f"{flag} {run}: pass --step, one of: {_names(steps)}")
    return step_prefix(run) + steps[0]


async def run_step_streams(reader: EventReader, args: argparse.Namespace) -> list[str] | None:
    """The step streams of the run streams given with (repeatable) `-r/--run` (None: the whole store)."""
    runs: list[str] = getattr(args, "run", None) or []
    if not runs:
        return None
    known = {s.stream_id for s in await reader.streams()}
    missing = [r for r in runs if r not in known]
    if missing:
        raise CommandError(f"{typed(args, 'run')} {missing[0]}: no such run stream in the store; see `zymi-tui runs`")
    return sorted(s for s in known if run_of(s) in runs)
