"""The gate's patterns of device and process paths (engine/places.py): compiled only once a path in /dev or
/proc is judged, and matching exactly as the regular expressions written out below (zymi-tui's patterns as
they were, kept here as the oracle) match with `re.match`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from zymi_tui.engine import places

# the patterns as they are written in main's engine/places.py at 571b417: the oracle
WRITTEN = {
    "HARMLESS_READ": r"^/dev/(?:null|zero|random|urandom|stdin|tty|fd/\d+)$",
    "HARMLESS_WRITE": r"^/dev/(?:null|stdout|stderr|tty|fd/\d+)$",
    "BLOCK_DEVICE": r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|disk\d|sr\d)",
    "NETWORK": r"^/dev/(?:tcp|udp)(?:/|$)",
    "_PROC_SECRET": r"^/proc/[^/]+/(?:task/[^/]+/)?(?:environ|mem)$",
    "_PROC_VIEW": r"^/proc/[^/]+/(?:task/[^/]+/)?(?:root|cwd|map_files)(?:/|$)",
}

# paths an agent's command could name: near misses, trailing newlines (`$` matches before one), case,
# doubled and missing slashes, other folders that merely contain the names
PATHS = [
    "/dev/null", "/dev/null\n", "/dev/null\n\n", "/dev/nullx", "/dev/null/", "/dev/zero", "/dev/urandom",
    "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/tty1", "/dev/fd/0", "/dev/fd/12",
    "/dev/fd/", "/dev/fd/x", "/dev/fd/3\n", "/DEV/null", "dev/null", "//dev/null", "/dev//null", "/dev",
    "/dev/", "/dev/sda", "/dev/sda1", "/dev/sdZ", "/dev/hdb", "/dev/vdc", "/dev/xvda", "/dev/nvme0n1",
    "/dev/mmcblk0p1", "/dev/md0", "/dev/dm-1", "/dev/loop7", "/dev/disk0", "/dev/sr0", "/dev/sr",
    "/dev/tcp", "/dev/tcp/", "/dev/tcp/10.0.0.1/80", "/dev/udp/1.2.3.4/53", "/dev/tcpx", "/dev/tcp\n",
    "/proc/1/environ", "/proc/self/environ", "/proc/self/environ\n", "/proc/1/mem", "/proc/1/memx",
    "/proc/1/task/2/environ", "/proc/1/task/2/mem", "/proc/1/task//mem", "/proc//environ", "/proc/1/root",
    "/proc/1/root/etc/shadow", "/proc/self/cwd", "/proc/self/cwdx", "/proc/1/map_files/", "/proc/1/rootx",
    "/proc/1/task/2/root/", "/proc/cpuinfo", "/proc", "/procx/1/environ", "proc/1/environ", "/home/u/dev/null",
    "/tmp/proc/1/environ", "", "\n", "/", "a" * 300, "/dev/" + "\u0431", "/proc/\u00e9/environ",
]  # fmt: skip


def test_each_pattern_matches_as_the_regular_expression_it_was() -> None:
    for name, written in WRITTEN.items():
        pattern = getattr(places, name)
        for path in PATHS:
            assert bool(pattern.match(path)) is (re.match(written, path) is not None), (name, path)


def test_the_gate_still_judges_device_and_process_paths(tmp_path: Path) -> None:
    judged = places.Places.make(tmp_path, [], ["."], None)
    assert judged.read("/dev/null") == places.ALLOW
    assert judged.read("/dev/tcp/10.0.0.1/80")[0] == "deny"
    assert judged.read("/proc/1/root/etc/shadow")[0] == "deny"
    assert judged.write("/dev/stderr", shell=True) == places.ALLOW
    assert places.secret_place("/proc/self/environ") and not places.secret_place("/proc/cpuinfo")


def test_no_device_pattern_is_compiled_until_a_device_or_process_path_is_judged(tmp_path: Path) -> None:
    """Compiling them cost every `run` ~5.7 M instructions at import (benchmarks/bench_engine.py
    --instructions); most runs judge no path under /dev or /proc. Checked in a fresh interpreter, in
    `re`'s own cache of compiled patterns."""
    sources = sorted(WRITTEN.values())
    code = (
        "import re, sys\n"
        "from pathlib import Path\n"
        "from zymi_tui.engine.places import Places\n"
        f"written = {sources!r}\n"
        "def compiled():\n"
        "    return sum(1 for key in re._cache if key[1] in written)\n"
        "print(compiled())\n"
        "gate = Places.make(Path(sys.argv[1]), [], ['.'], None)\n"
        "gate.read('notes.txt'); gate.write('out/a.txt', shell=True)\n"
        "print(compiled())\n"
        "gate.read('/dev/null'); gate.read('/proc/1/environ')\n"
        "print(compiled())\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    at_import, after_project_paths, after_system_paths = (int(n) for n in done.stdout.split())
    assert (at_import, after_project_paths) == (0, 0), done.stdout
    assert after_system_paths > 0, done.stdout
