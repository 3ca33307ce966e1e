"""`chat`, `demo`, `serve-web`: talk to a project's agent in the terminal (or a browser) and watch its context.

`chat` opens the chat screen; `--plain`, or stdin/stdout not being a terminal, gives the engine's
line-based chat (zymi_tui.commands.plain_chat.cmd_chat). `demo` writes the demo project (offline
demo model) into a new or temporary folder and opens the chat on it. `serve-web` serves the same
app to a browser on 127.0.0.1 (textual-serve).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from zymi_tui.commands.common import DIR_HELP, EXIT_OK, EXIT_USAGE, CommandError, fail, out
from zymi_tui.commands.flags import add_run_arg
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.reader import is_project

PIPELINE_HELP = "pipeline to chat with (default: `chat`; in a project without one: its only pipeline, said so)"
DEMO_HINT = "demo project ready: send a few messages (try “audit all modules”), then press F2 to see the context"


def interactive() -> bool:
    """A terminal on both ends, or textual-serve's web driver (its pipes are not a TTY)."""
    return bool(os.environ.get("TEXTUAL_DRIVER")) or (sys.stdin.isatty() and sys.stdout.isatty())


def _project_dir(directory: str | None) -> Path:
    root = Path(directory).expanduser().resolve() if directory else Path.cwd()
    if not root.is_dir():
        raise CommandError(f"-d {directory}: no such folder (pass a zymi project folder, or try `zymi-tui demo`)")
    if not is_project(root):
        raise CommandError(f"no project.yml in {root}: pass -d PROJECT_DIR, or run `zymi-tui demo` for a demo project")
    return root


def _timeout(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value!r}: accepted: seconds, more than 0 and at most 3600")
    return seconds


def open_chat(args: argparse.Namespace, root: Path, *, hint: str | None = None, kept: bool = True) -> int:
    """The chat screen on `root`; after it closes, one line on where the chat is kept (`kept`: the folder
    stays; a temporary demo's caller says it was removed)."""
    from zymi_tui.tui.chat.app import ChatApp
    from zymi_tui.tui.chat.session import ChatOptions

    options = ChatOptions(
        project_dir=root,
        stream=args.run,
        profile=args.profile,
        pipeline=args.pipeline,
        timeout_s=args.timeout,
        demo_model=args.demo_model,
    )
    app = ChatApp(options, hint=hint, theme=getattr(args, "theme", None))
    app.run()
    if app.setup_error is not None:
        fail(app.setup_error)
        return EXIT_USAGE
    if app.return_code:
        return app.return_code  # the app died: its one-line error names the log
    if kept:
        resume = f"zymi-tui chat -d {shlex.quote(str(root))} -r {shlex.quote(args.run)}"
        out.print(f"chat kept on stream {args.run!r} in the store of {root}; resume with: {resume}")
    return EXIT_OK


def plain_chat(args: argparse.Namespace) -> int:
    from zymi_tui.commands.plain_chat import cmd_chat

    code: int = cmd_chat(args)
    return code


def pipeline_hint(root: Path, requested: str | None) -> str | None:
    """The notice shown when the chat runs the project's only pipeline because it has no `chat` one."""
    from zymi_tui.engine.chat import chat_pipeline, pipeline_notice
    from zymi_tui.engine.loader import load_workspace

    try:
        pipeline, _ = chat_pipeline(load_workspace(root), requested)
    except ProjectError:
        return None  # the chat screen reports it, with what to do
    return pipeline_notice(requested, pipeline)


def cmd_chat(args: argparse.Namespace) -> int:
    root = _project_dir(args.dir)
    if args.plain or not interactive():
        return plain_chat(args)
    return open_chat(args, root, hint=pipeline_hint(root, args.pipeline))


def make_demo(directory: str | None) -> Path:
    """A new demo project (the folder given, created if needed, or a temporary one); an existing project is reused."""
    from zymi_tui.engine.providers.demo_workspace import write_demo_project

    if directory is None:
        root = Path(tempfile.mkdtemp(prefix="zymi-tui-demo-"))
    else:
        root = Path(directory).expanduser().resolve()
        if is_project(root):
            return root
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise CommandError(f"{directory}: not an empty folder and not a zymi project; pass a new or empty folder")
        root.mkdir(parents=True, exist_ok=True)
    try:
        write_demo_project(root, "demo")
    except (OSError, ProjectError) as e:
        raise CommandError(f"cannot write the demo project in {root}: {e}") from None
    return root


def cmd_demo(args: argparse.Namespace) -> int:
    """The chat on a demo project; one made in a temporary folder is removed when the chat ends
    (`demo DIR` keeps it)."""
    root = make_demo(args.directory)
    args.dir, args.pipeline, args.demo_model = str(root), None, False
    try:
        if not interactive():
            out.print(f"demo project in {root} (not a terminal: the line-based chat; /quit or Ctrl-D to leave)")
            return plain_chat(args)
        code = open_chat(args, root, hint=DEMO_HINT, kept=args.directory is not None)
    finally:
        if args.directory is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.directory is None and code == EXIT_OK:
        out.print(f"the demo project in {root} was a temporary folder, now removed; `zymi-tui demo DIR` keeps one")
    return code


def web_command(directory: str | None) -> str:
    """The command textual-serve runs per browser session: the chat on DIR, or a fresh demo."""
    python = shlex.quote(sys.executable)
    if directory is None:
        return f"{python} -m zymi_tui demo"
    return f"{python} -m zymi_tui chat -d {shlex.quote(str(_project_dir(directory)))}"


def cmd_serve_web(args: argparse.Namespace) -> int:
    from zymi_tui.tui.web_server import LoopbackServer

    command = web_command(args.dir)
    try:
        server = LoopbackServer(command, args.port, "zymi-tui")
    except OSError as e:
        raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}") from None
    out.print(f"serving zymi-tui on http://127.0.0.1:{server.port} (loopback only; Ctrl-C stops)")
    out.print(f"  each browser tab runs: {command}")
    server.serve()
    return EXIT_OK


def _port(value: str) -> int:
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: accepted: a TCP port, 0..65535 (0: a free one, printed)")
    return int(value)


def _chat_args(p: argparse.ArgumentParser) -> None:
    add_run_arg(
        p, "the chat's run stream; an existing one resumes it (default: term)", default="term", aliases=["--stream"]
    )
    p.add_argument("--profile", metavar="P", help="context knobs for the calls: chat, coding, eval or a custom one")
    p.add_argument("--timeout", type=_timeout, default=120.0, metavar="S", help="seconds to wait for a model call")
    p.add_argument("--theme", metavar="NAME", help="a Textual theme, e.g. textual-dark or textual-light")


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"chat": _chat_parser, "demo": _demo_parser, "serve-web": _serve_web_parser}[command](p)


def _chat_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--pipeline", metavar="NAME", help=PIPELINE_HELP)
    p.add_argument("--plain", action="store_true", help="the line-based chat (also used when not on a terminal)")
    p.add_argument("--demo-model", action="store_true", help="use the offline demo model whatever project.yml says")
    _chat_args(p)
    p.set_defaults(func=cmd_chat)


def _demo_parser(d: argparse.ArgumentParser) -> None:
    d.add_argument("directory", nargs="?", metavar="DIR", help="folder for the demo project (default: a temporary one)")
    _chat_args(d)
    d.set_defaults(func=cmd_demo)


def _serve_web_parser(w: argparse.ArgumentParser) -> None:
    w.add_argument(
        "-d", "--dir", metavar="DIR", help="the project folder (zymi's -d; default: a new demo project per browser tab)"
    )
    w.add_argument(
        "--port",
        type=_port,
        default=8000,
        metavar="N",
        help="TCP port on 127.0.0.1 (default 8000; 0: a free one, printed)",
    )
    w.set_defaults(func=cmd_serve_web)
