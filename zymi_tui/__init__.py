"""zymi-tui: observe and tune the context windows of LLM agents."""

import _signal  # type: ignore[import-not-found]  # not `signal`, which imports enum (a Ctrl-C in that import is a traceback)
import os
import sys

__version__ = "0.1.0"

INTERRUPTED_LINE = b"interrupted (Ctrl-C)\n"
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)
# the cyclic collector's threshold in a process that makes objects by the hundred thousand, nearly none in
# a cycle (a replay, an export, advise's workers): at Python's default (700 new objects) it rescans the
# live ones hundreds of times per 100k events (~5% of a replay's CPU, ~25% of an advise worker's)
GC_THRESHOLD = 50_000


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C while the process starts (modules importing, the command line parsed): nothing is written
    yet, so the process ends here with the one line and code a later Ctrl-C gives, not a traceback
    from wherever the import was."""
    os.write(2, INTERRUPTED_LINE)
    os._exit(EXIT_INTERRUPTED)


def _started_as_command() -> bool:
    """This package is imported by the `zymi-tui` script or `python -m zymi_tui` (not by a test or a
    program importing it, whose own Ctrl-C handling is left alone)."""
    first = os.path.basename(sys.argv[0]) if sys.argv else ""
    if first == "-m":  # `python -m zymi_tui` while the package imports (argv[0] is the module's path later)
        line = sys.orig_argv
        return "-m" in line and line[line.index("-m") + 1 :][:1] == ["zymi_tui"]
    return first.startswith("zymi-tui")


# Ctrl-C ignored by whoever started the process (a non-interactive shell's `cmd &`, nohup-like launchers)
# stays ignored for the whole command, as the shell's own commands and Python itself leave it
SIGINT_IGNORED_AT_START = _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN

if _started_as_command() and not SIGINT_IGNORED_AT_START:
    _signal.signal(_signal.SIGINT, _interrupted_at_start)
