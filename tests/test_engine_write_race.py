"""write_file lands on the file its verdict judged, whatever the path points to by the time it runs.

The window between the verdict and the write is made wide and deterministic: the write asks for
approval (no `allowed_dirs`), and while `zymi-tui run` waits at the terminal prompt the test swaps a
link on the path to a place outside the project, then answers `y` (README "Security")."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from tests.test_engine_failures import BIN, Script, _answer, _project, llm  # noqa: F401  (llm: a fixture)
from tests.waiting import LIMIT, wait_until

PROMPT = b"approve? [y/N]: "


def _write_swapping(script: Script, root: Path, path: str, swap: object) -> str:
    """Run a step that writes `hello` to `path`; call `swap()` while the approval prompt waits; answer y.
    Returns the tool result the model got back."""
    script.replies.append((200, _answer(None, [("c1", "write_file", {"path": path, "content": "hello"})])))
    script.replies.append((200, _answer("done")))
    proc = subprocess.Popen(
        [str(BIN), "run", "p", "-i", "task=go", "-d", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    seen = bytearray()

    def pump() -> None:  # the prompt ends without a newline: read what comes, as it comes
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 4096):
            seen.extend(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        wait_until(lambda: PROMPT in seen or proc.poll() is not None, "the approval prompt")
        assert PROMPT in seen, (bytes(seen), proc.stderr.read() if proc.stderr else b"")
        assert callable(swap)
        swap()  # the verdict is given; the write has not happened yet
        proc.stdin.write(b"y\n")
        proc.stdin.close()
        assert proc.wait(LIMIT) == 0, proc.stderr.read() if proc.stderr else b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(LIMIT)
    result = script.bodies[1]["messages"][-1]
    assert result["role"] == "tool"
    return str(result["content"])


def swappable_link(
    root: Path, outside: Path, inside_text: str, outside_text: str
) -> tuple[Path, Path, Callable[[], None]]:
    """`out/link` in the project, a link to `out/real.txt` (holding `inside_text`), and `outside/victim.txt`
    (holding `outside_text`): the two files, and the swap that points the link out of the project."""
    victim = outside / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(outside_text, encoding="utf-8")
    real = root / "out" / "real.txt"
    real.parent.mkdir()
    real.write_text(inside_text, encoding="utf-8")
    link = root / "out" / "link"
    link.symlink_to("real.txt")  # judged: a link to a file inside the project

    def swap() -> None:
        link.unlink()
        link.symlink_to(victim)  # now a link out of the project

    return real, victim, swap


def test_a_file_link_swapped_during_the_prompt_is_not_followed(llm: tuple[Script, int], tmp_path: Path) -> None:  # noqa: F811
    script, port = llm
    root = _project(tmp_path / "project", port, max_iterations=4, tools="write_file")
    real, victim, swap = swappable_link(root, tmp_path / "outside", "", "original")
    assert _write_swapping(script, root, "out/link", swap) == "Written 5 bytes to out/link"
    assert victim.read_text(encoding="utf-8") == "original"
    assert real.read_text(encoding="utf-8") == "hello"  # the file the verdict judged


def test_a_folder_swapped_for_a_link_during_the_prompt_stops_the_write(
    llm: tuple[Script, int],  # noqa: F811
    tmp_path: Path,
) -> None:
    script, port = llm
    root = _project(tmp_path / "project", port, max_iterations=4, tools="write_file")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").mkdir()

    def swap() -> None:
        (root / "out").rename(root / "out.old")
        (root / "out").symlink_to(outside)  # the folder is now a link out of the project

    result = _write_swapping(script, root, "out/new.txt", swap)
    assert result == (
        f"[tool error] failed to write {root / 'out' / 'new.txt'}: "
        f"{root.resolve() / 'out'} became a symbolic link after the policy's verdict"
    )
    assert list(outside.iterdir()) == []
    assert not (root / "out.old" / "new.txt").exists()


def test_an_ordinary_write_makes_its_folders(llm: tuple[Script, int], tmp_path: Path) -> None:  # noqa: F811
    script, port = llm
    root = _project(tmp_path / "project", port, max_iterations=4, tools="write_file")
    assert _write_swapping(script, root, "a/b/c.txt", lambda: None) == "Written 5 bytes to a/b/c.txt"
    assert (root / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "hello"
