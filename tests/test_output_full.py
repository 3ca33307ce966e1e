"""A full disk or a file-size limit while writing: one line on stderr and exit 2, never a traceback.

The oracle is the kernel: /dev/full fails every write with ENOSPC, and RLIMIT_FSIZE makes a file
past the limit fail with EFBIG (Python ignores SIGXFSZ), whatever our code believes it wrote.
"""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from tests.conftest import long_run_store, zymi_tui_bin

DEV_FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full on this system")

TO_STDOUT = [
    ["replay", "--json"],
    ["replay"],
    ["events", "--all", "--raw"],
    ["export", "--format", "otel"],
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return long_run_store(tmp_path_factory.mktemp("full"), 3000)


def _one_error_line(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("zymi-tui: error: cannot write the output: "), lines[0]
    assert reason in lines[0], lines[0]


@pytest.mark.parametrize("args", TO_STDOUT, ids=" ".join)
def test_stdout_on_a_full_disk(store: Path, args: list[str]) -> None:
    with DEV_FULL.open("w") as full:
        done = subprocess.run(
            [zymi_tui_bin(), *args, str(store)], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    _one_error_line(done, "No space left on device")


def test_output_file_on_a_full_disk(store: Path) -> None:
    done = subprocess.run(
        [zymi_tui_bin(), "export", "--format", "otel", "-o", str(DEV_FULL), str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_error_line(done, "No space left on device")


def test_output_file_over_the_size_limit(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    limit = 64 * 1024

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [zymi_tui_bin(), "export", "--format", "otel", "-o", str(out), str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_files,
    )
    _one_error_line(done, "File too large")
    assert out.stat().st_size <= limit
