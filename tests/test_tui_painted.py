"""What a real terminal shows: the dashboard run in a pseudo-terminal, its output fed to a terminal
emulator (pyte), on a store whose tool results and answers carry terminal escape sequences."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte

from benchmarks.make_long_run import write_clones
from tests.hostile_stores import make_store
from tests.leftovers import die_with_parent
from tests.tui_support import scenario_copy
from tests.waiting import LIMIT

COLS, ROWS = 120, 40


class Terminal:
    """A child process on a pty whose output a pyte screen interprets, as a terminal would."""

    def __init__(
        self, args: list[str], cwd: Path, env_extra: dict[str, str] | None = None, size: tuple[int, int] = (COLS, ROWS)
    ) -> None:
        self.size = size
        self.screen = pyte.Screen(*size)
        self.stream = pyte.ByteStream(self.screen)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", "TZ": "UTC", **(env_extra or {})}
        env.pop("TEXTUAL", None)
        self.raw = bytearray()
        self.proc = subprocess.Popen(
            [sys.executable, *args], stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
            start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip
        os.close(slave)
        self.fd = master

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return
                self.raw += data
                self.stream.feed(data)

    def wait_for(self, text: str, timeout: float = 30) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.2)
            if text in "\n".join(self.screen.display):
                return True
        return False

    def press(self, keys: bytes) -> None:
        os.write(self.fd, keys)
        self.pump(0.5)

    def close(self) -> int:
        try:
            os.write(self.fd, b"\x11")  # ctrl+q
            end = time.monotonic() + 10
            while self.proc.poll() is None and time.monotonic() < end:
                self.pump(0.1)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.fd)
        return self.proc.wait()


async def test_an_escape_in_a_tool_result_is_shown_not_obeyed(tmp_path: Path) -> None:
    db, _project = await make_store("escapes", tmp_path / "escapes")
    term = Terminal(["-m", "zymi_tui", "observe", str(db)], tmp_path)
    try:
        assert term.wait_for("Events", timeout=LIMIT), "\n".join(term.screen.display)
        shown_as_text = term.wait_for("\\x1b[2J", timeout=LIMIT)
        assert shown_as_text, "the escape is not shown as text:\n" + "\n".join(term.screen.display)
        term.press(b"\t")  # the events list
        term.press(b"\r")  # expand the selected event's whole payload
        # until the payload is painted (a fixed pause was too short on a loaded machine: half a frame)
        assert term.wait_for("\\x1b[41;97mRED", timeout=LIMIT), "\n".join(term.screen.display)
        # the frame survived: every panel is still there, nothing was cleared or scrolled away
        for panel in ("Runs", "Events", "Pipeline", "Context"):
            assert term.wait_for(panel, timeout=LIMIT), f"{panel} missing:\n" + "\n".join(term.screen.display)
        assert "\\x1b[41;97mRED" in "\n".join(term.screen.display)
        # nothing was recoloured: the word after the would-be "red background" escape has no red background
        for y in range(ROWS):
            row = term.screen.buffer[y]
            line = "".join(row[x].data for x in range(COLS))
            at = line.find("RED\\x1b")
            if at >= 0:
                assert row[at].bg != "red" and row[at].bg != "800000", (y, row[at])
        assert term.screen.title != "pwned"  # the OSC 0 window-title escape was not obeyed
    finally:
        code = term.close()
    assert code == 0


CRASH = """
import sys
from zymi_tui.cli import main
from zymi_tui.tui.app import MainScreen

def broken(self):
    raise RuntimeError("boom [/x] in freeze")

MainScreen.action_freeze = broken  # a bug in a key's action, as a person would hit it
sys.exit(main(["observe", sys.argv[1]]))
"""


async def test_when_the_app_dies_it_says_so_in_one_line_and_keeps_the_traceback(tmp_path: Path) -> None:
    db, _project = await make_store("markup", tmp_path / "store")
    logs = tmp_path / "logs"
    term = Terminal(["-c", CRASH, str(db)], tmp_path, {"ZYMI_TUI_LOG_DIR": str(logs)})
    try:
        assert term.wait_for("Events", timeout=LIMIT), "\n".join(term.screen.display)
        term.press(b"f")
        end = time.monotonic() + LIMIT  # (it ends on the exit: on a loaded machine 20 s was once too short)
        while term.proc.poll() is None and time.monotonic() < end:
            term.pump(0.2)
        term.pump(0.5)
    finally:
        code = term.close()
    assert code == 1
    (log,) = logs.iterdir()
    assert "Traceback" in log.read_text() and "boom [/x] in freeze" in log.read_text()
    tail = bytes(term.raw[term.raw.rfind(b"\x1b[?1049l") :]).decode(errors="replace")
    assert "\x1b[?25h" in tail, "the cursor was not given back"  # the terminal is restored...
    lines = [line for line in tail.splitlines() if "zymi-tui:" in line]
    assert len(lines) == 1 and f"RuntimeError: boom [/x] in freeze (traceback in {log})" in lines[0], tail
    assert "Traceback" not in tail  # ...and holds one line, not a screenful of traceback


HELD = """
import asyncio
import os
import sys
from zymi_tui.cli import main
from zymi_tui.commands import tui_cmds
from zymi_tui.tui.dashboard import loaders

release = sys.argv[2]

def held(real):  # the dashboard's own reads of the runs wait until the file `release` exists
    async def wait_then_read(*args, **kwargs):
        while not os.path.exists(release):
            await asyncio.sleep(0.05)
        return await real(*args, **kwargs)
    return wait_then_read

loaders.newest_runs, loaders.list_runs = held(loaders.newest_runs), held(loaders.list_runs)
# and so does the whole list the start's child process reads after the newest runs (forked from this one)
tui_cmds.list_runs = held(tui_cmds.list_runs)
sys.argv = ["zymi-tui", "observe", sys.argv[1]]
sys.exit(main())  # the process's own command line, as `zymi-tui observe STORE` runs it
"""


def cursor_rows(term: Terminal) -> list[int]:
    """The runs list's rows (counted from its first) that show the cursor marker."""
    lines = term.screen.display
    top = next(y for y, line in enumerate(lines) if "Runs (" in line)
    return [y - top - 1 for y in range(top + 1, ROWS) if lines[y][:3] == "│»✓"]


def test_the_first_frame_lists_the_newest_runs_read_beside_the_imports(tmp_path: Path) -> None:
    """The `observe` process has the newest runs read (by a child process) while its screen's modules load; its
    first frame lists them with the newest selected while the dashboard's own reads of the runs are held back;
    `j` selects the next, and once the rest is read every run is listed with the cursor kept."""
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)  # 150 runs: the first page holds the newest 60
    release = tmp_path / "release"
    term = Terminal(["-c", HELD, str(db), str(release)], tmp_path)
    try:
        assert term.wait_for("Runs (newest 60…)", timeout=LIMIT), "\n".join(term.screen.display)
        end = time.monotonic() + LIMIT
        while cursor_rows(term) != [0] and time.monotonic() < end:
            term.pump(0.1)
        assert cursor_rows(term) == [0], "\n".join(term.screen.display)  # the newest run, on top, is selected
        term.press(b"j")
        while cursor_rows(term) != [1] and time.monotonic() < end:
            term.pump(0.1)
        assert cursor_rows(term) == [1], "\n".join(term.screen.display)
        assert "Runs (newest 60…)" in "\n".join(term.screen.display)  # only the page read before the start
        release.touch()
        assert term.wait_for("Runs (150)", timeout=LIMIT), "\n".join(term.screen.display)
        assert cursor_rows(term) == [1], "\n".join(term.screen.display)
    finally:
        release.touch()
        code = term.close()
    assert code == 0


def test_the_first_frame_lists_every_run_when_the_child_read_them_in_time(tmp_path: Path) -> None:
    """The start's child process reads the newest runs, then the whole list (150 runs: a few ms, where the
    screen's modules take hundreds): the first frame painted counts every run, with their status; the
    partial title `Runs (newest 60…)` is never painted."""
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)
    term = Terminal(["-m", "zymi_tui", "observe", str(db)], tmp_path)
    try:
        assert term.wait_for("Runs (150)", timeout=LIMIT), "\n".join(term.screen.display)
        assert "│»✓ main" in "\n".join(term.screen.display)
    finally:
        code = term.close()
    assert code == 0
    assert b"newest 60" not in bytes(term.raw)


def first_row_showing(raw: bytes, size: tuple[int, int], text: str) -> int:
    """Replays a terminal's output from its start: the row where `text` is first painted."""
    screen = pyte.Screen(*size)
    stream = pyte.ByteStream(screen)
    for piece in raw.split(b"\x1b["):  # one escape sequence at a time: a frame is painted row by row
        stream.feed(b"\x1b[" + piece)
        for y, line in enumerate(screen.display):
            if text in line:
                return y
    raise AssertionError(f"{text!r} was never painted")


def test_the_first_frame_at_80x24_is_laid_out_for_80x24(tmp_path: Path) -> None:
    """Textual sets a screen's size classes when it handles the screen's first Resize, after writing its first
    frame: that frame was laid out for a large terminal, then redrawn. The first frame painted is the one that
    stays: the pipeline panel is where it is once everything is drawn, and the runs are listed in it."""
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)
    term = Terminal(["-m", "zymi_tui", "observe", str(db)], tmp_path, size=(80, 24))
    try:
        assert term.wait_for("Runs (150)", timeout=LIMIT), "\n".join(term.screen.display)
        assert term.wait_for("─ Pipeline: main", timeout=LIMIT), "\n".join(term.screen.display)  # the run is read
        settled = next(y for y, line in enumerate(term.screen.display) if "─ Pipeline" in line)
    finally:
        code = term.close()
    assert code == 0
    raw = bytes(term.raw)
    assert first_row_showing(raw, term.size, "─ Pipeline") == settled
    assert first_row_showing(raw, term.size, "─ Runs (") == 1


FRAMES = """
import gc
import sys
from textual.app import App
from zymi_tui.cli import main

log = open(sys.argv[2], "a")
display = App._display

def logged(self, screen, *args, **kwargs):  # each frame written: its screen, which modules were loaded by then,
    loaded = [m for m in ("plotext", "zymi_tui.context.knobs", "yaml") if m in sys.modules]  # and whether GC is on
    log.write(" ".join([type(screen).__name__, *loaded, "gc" if gc.isenabled() else "-"]) + "\\n")
    log.flush()
    return display(self, screen, *args, **kwargs)

App._display = logged
sys.argv = ["zymi-tui", "observe", sys.argv[1]]
sys.exit(main())
"""


def test_the_first_frame_is_drawn_before_plotext_and_the_knobs_model_load(tmp_path: Path) -> None:
    """The dashboard's first frame lists the runs without plotext (the plot panel is drawn empty) nor the knobs'
    model and yaml; all three load after it, and the plot is drawn with its calls. The garbage collector,
    off while the app starts, is on again once the first frame is drawn."""
    db = scenario_copy("memory", tmp_path)  # with its project folder: its knobs are read from project.yml
    frames = tmp_path / "frames.txt"
    term = Terminal(["-c", FRAMES, str(db), str(frames)], tmp_path)
    try:
        assert term.wait_for("─ Context · last #", timeout=LIMIT), "\n".join(term.screen.display)
    finally:
        code = term.close()
    assert code == 0
    written = [line.split() for line in frames.read_text().splitlines()]
    main_frames = [modules for screen, *modules in written if screen == "MainScreen"]
    assert main_frames[0] == ["-"], written  # the first frame: none of them loaded, no GC
    late = {"plotext", "zymi_tui.context.knobs", "yaml", "gc"}
    assert late <= set(main_frames[-1]), written  # the plot drawn: all loaded
