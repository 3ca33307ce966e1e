"""`zymi-tui compare` and `sweep`: a store replayed under other knobs (what-if), and the flags and
outputs `advise` shares with them (`--prices`, `--workers`, `-o`).

Every what-if output carries the same-trajectory caveat; every figure says recorded or estimated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from zymi_tui.context.knobs import ContextKnobs, resolve_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.store import EventReader
from zymi_tui.project.locate import Located
from zymi_tui.project.reader import read_project
from zymi_tui.replay.compare import CAVEAT, Comparison, price_note
from zymi_tui.replay.compare_report import to_csv, to_json_text, to_markdown
from zymi_tui.replay.costs import PriceTable, load_prices
from zymi_tui.replay.figures import recorded_output
from zymi_tui.replay.store_replay import recorded_knobs, replay_store
from zymi_tui.replay.sweep import DEFAULT_SOFT_CAPS, DEFAULT_WINDOWS, parse_values, sweep
from zymi_tui.replay.whatifs import WHATIF_POOL_MIN_EVENTS, compare_store

from .common import (
    EXIT_OK,
    CommandError,
    add_project_arg,
    add_store_arg,
    close_reader,
    err,
    located,
    out,
    raw_line,
    run_async,
)
from .flags import (
    add_runs_filter,
    add_strict_arg,
    refuse_guess,
    run_step_streams,
)
from .tables import print_table

RECORDED = "recorded"


# -- shared --------------------------------------------------------------------------------------
def profile_knobs(name: str, recorded: ContextKnobs) -> ContextKnobs | None:
    """`recorded` (or `project`) -> None (the store's own knobs); a built-in or saved profile otherwise."""
    if name in (RECORDED, "project"):
        return None
    return resolve_knobs(recorded, name, [], named_by="--profiles")


def project_llm(project: Path | None, key: str) -> str | None:
    """`llm.<key>` of the project (`model`, `provider`), if it says."""
    return read_project(project).llm_setting(key) if project is not None else None


def progress_bar() -> Progress:
    return Progress(
        TextColumn("replaying under {task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not sys.stderr.isatty(),
    )


def prices_arg(args: argparse.Namespace) -> PriceTable:
    """The price table of `--prices FILE`, else the user's, else the built-in one."""
    return load_prices(Path(args.prices) if args.prices else None)


async def refuse_guesses(reader: EventReader, project: Path | None, streams: list[str] | None) -> None:
    """`--strict` for a whole-store what-if: one replay under the recorded knobs first, which stops at the
    first call whose Layer A or recorded knobs would be guessed (what is guessed does not depend on knobs)."""
    async for row in replay_store(reader, project=project, streams=streams):
        refuse_guess(row, True)


def write_or_print(text: str, output: str | None) -> None:
    write_parts((text,), output)


def write_parts(parts: Iterable[str], output: str | None) -> None:
    """The text `parts` make, written as they come (to `output`, else stdout): none of it held whole."""
    if output:
        try:
            with Path(output).open("w", encoding="utf-8") as f:
                for part in parts:
                    f.write(part)
        except OSError as e:
            raise CommandError(f"--output {output}: cannot write ({e.strerror or e})") from None
        err.print(f"wrote {output}")
    else:
        for part in parts:
            sys.stdout.write(raw_line(part))


# -- compare -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompareRequest:
    """What `compare` (and `replay --compare`) is asked for; `args` are the command's own (its -r filter)."""

    where: Located
    profiles: str  # "P1,P2[,...]"
    args: argparse.Namespace
    prices: str | None = None
    model: str | None = None
    format: str = "table"
    output: str | None = None


async def run_compare(req: CompareRequest) -> Comparison:
    names = [n.strip() for n in req.profiles.split(",") if n.strip()]
    if len(names) < 2:
        raise CommandError(f"profiles {req.profiles!r}: give two or more, e.g. recorded,chat,eval")
    location, project = req.where
    base = recorded_knobs(project)
    profiles = [(n, profile_knobs(n, base)) for n in names]
    prices = load_prices(Path(req.prices) if req.prices else None)
    reader = await open_reader(location)
    try:
        streams = await run_step_streams(reader, req.args)
        if req.args.strict:
            await refuse_guesses(reader, project, streams)
        output = await recorded_output(reader, streams)
        with progress_bar() as bar:
            task = bar.add_task(names[0], total=1.0)

            def tick(fraction: float, profile: str) -> None:
                bar.update(task, description=profile, completed=fraction)

            cmp = await compare_store(
                reader,
                project,
                profiles,
                recorded_knobs=base,
                streams=streams,
                location=location,
                workers=getattr(req.args, "workers", None),
                pool_from=WHATIF_POOL_MIN_EVENTS,
                prices=prices,
                model=req.model or project_llm(project, "model"),
                provider=project_llm(project, "provider"),
                output=output,
                last_global_id=await reader.max_global_id(),
                progress=tick,
            )
    finally:
        await close_reader(reader)
    return cmp


def print_comparison(cmp: Comparison, currency: str) -> None:
    out.print(f"[yellow]⚠ {escape(cmp.caveat)}[/]")
    table = Table(title="whole store", title_justify="left")
    table.add_column("figure")
    for p in cmp.profiles:
        label = " (what the agent sent)" if p.recorded and p.foreign else " (recorded knobs)" if p.recorded else ""
        table.add_column(p.name + label, justify="right")
    md = to_markdown(cmp, currency).splitlines()
    body = [line for line in md if line.startswith("| ") and not line.startswith("| figure")]
    for line in body[: len(body) - len(cmp.runs()) - 1]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        table.add_row(*cells)
    print_table(out, table)
    out.print(
        f"tokens: recorded where the context is unchanged, else estimated ({cmp.tokens_ratio_source}); "
        f"cost: {price_note(cmp)}"
    )


def cmd_compare(args: argparse.Namespace) -> int:
    req = CompareRequest(located(args), args.profiles, args, args.prices, args.model, args.format, args.output)
    return compare(req)


def compare(req: CompareRequest) -> int:
    cmp = run_async(run_compare(req))
    if req.format == "table":
        print_comparison(cmp, "USD")
        if req.output:
            write_or_print(to_markdown(cmp), req.output)
    elif req.format == "json":
        write_or_print(to_json_text(cmp), req.output)
    elif req.format == "csv":
        write_or_print(to_csv(cmp), req.output)
    else:
        write_or_print(to_markdown(cmp), req.output)
    return EXIT_OK


# -- sweep ---------------------------------------------------------------------------------------
def cmd_sweep(args: argparse.Namespace) -> int:
    windows = parse_values(args.window, "window") if args.window else list(DEFAULT_WINDOWS)
    caps = parse_values(args.soft_cap, "soft-cap") if args.soft_cap else list(DEFAULT_SOFT_CAPS)

    async def go() -> Any:
        location, project = located(args)
        base = recorded_knobs(project)
        reader = await open_reader(location)
        try:
            streams = await run_step_streams(reader, args)
            if args.strict:
                await refuse_guesses(reader, project, streams)
            with progress_bar() as bar:
                task = bar.add_task("grid", total=1.0)

                def tick(fraction: float, profile: str) -> None:
                    bar.update(task, description=profile, completed=fraction)

                return await sweep(
                    reader,
                    project,
                    base,
                    windows,
                    caps,
                    recorded_knobs=base,
                    streams=streams,
                    last_global_id=await reader.max_global_id(),
                    progress=tick,
                    prices=prices,
                    model=project_llm(project, "model"),
                    provider=project_llm(project, "provider"),
                    location=location,
                    workers=args.workers,
                )
        finally:
            await close_reader(reader)

    prices = load_prices(None)
    result = run_async(go())
    if args.json:
        write_or_print(json.dumps(result.to_json(), indent=1) + "\n", args.output)
        return EXIT_OK
    out.print(f"[yellow]⚠ {escape(CAVEAT)}[/]")
    table = Table(
        title="sweep: ★ = Pareto front (total input tokens vs peak; $ = cost with cache vs peak), ✗ = hard-cap failures"
    )
    for col in ("window", "soft cap", "hard cap", "input tokens (sum)", "peak tokens", "peak chars",
                "over soft", "compactions (est.)", "hard-cap fails", "cache breaks", "cost with cache (est.)",
                "figures", ""):  # fmt: skip
        table.add_column(col, justify="right")
    for p in result.points:
        mark = ("★" if p.pareto else ("✗" if p.hard_cap_failures else "")) + ("$" if p.pareto_cost_with_cache else "")
        cost = "no price" if p.cost_with_cache is None else f"{p.cost_with_cache:.4f}"
        table.add_row(*(f"{v:,}" for v in (p.observation_window, p.soft_cap_chars, p.hard_cap_chars, p.tokens_sum,
                        p.tokens_peak, p.chars_peak, p.over_soft_cap, p.compactions_simulated,
                        p.hard_cap_failures, p.cache_breaks)), cost, p.provenance, mark)  # fmt: skip
    print_table(out, table)
    return EXIT_OK


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"compare": _compare_parser, "sweep": _sweep_parser}[command](p)


def _compare_parser(p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_runs_filter(p)
    p.add_argument("--profiles", required=True, metavar="P1,P2[,...]",
                   help=f"`{RECORDED}` (the store's own knobs), coding, chat, eval or a saved profile")  # fmt: skip
    p.add_argument(
        "--prices", metavar="FILE", help="price table YAML (default: ~/.config/zymi-tui/prices.yml or built-in)"
    )
    p.add_argument("--model", help="price as this model (default: llm.model of project.yml)")
    p.add_argument(
        "--format", choices=["table", "json", "csv", "md"], default="table",
        help="table (default), json (one document), csv or md (a Markdown table)",
    )  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", help="write the export there (table: as Markdown)")
    add_strict_arg(p)
    add_workers_arg(p, "processes replaying the profiles (default: one per CPU from 500,000 events, else 1)")
    p.set_defaults(func=cmd_compare)


def _sweep_parser(p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_runs_filter(p)
    p.add_argument("--window", metavar="LIST", help="observation_window values, e.g. 2,4,6,8,10,15,20 or 2-20:2")
    p.add_argument("--soft-cap", dest="soft_cap", metavar="LIST", help="soft_cap_chars values, e.g. 20k,40k,60k,100k")
    p.add_argument("--json", action="store_true", help="the grid and its Pareto front as one JSON document")
    p.add_argument("-o", "--output", metavar="FILE", help="write the table (or the JSON) to FILE instead of stdout")
    p.add_argument(
        "--workers", type=_workers, metavar="N",
        help="processes replaying the grid, each a share of the points in one pass (default: one per CPU)",
    )  # fmt: skip
    add_strict_arg(p)
    p.set_defaults(func=cmd_sweep)


def add_workers_arg(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--workers", type=_workers, metavar="N", help=text)


def _workers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes (1 or more)")
    return int(text)
