"""`cap_malloc_arenas`: glibc's own report (`malloc_info`) counts the heaps threads allocated from."""

from __future__ import annotations

import subprocess
import sys

import pytest

# eight threads each allocate (and keep) 200 blocks of 4 KiB through malloc: without a cap, glibc gives
# each of them an arena of its own; `malloc_info` lists every arena as a <heap nr=...> element
SCRIPT = """
import ctypes, ctypes.util, os, sys, threading
from zymi_tui.malloc_arenas import cap_malloc_arenas
if sys.argv[1] == "cap":
    assert cap_malloc_arenas()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []
barrier = threading.Barrier(8)
def job():
    barrier.wait()  # all eight allocate at once: contention is what makes glibc hand out new arenas
    kept.extend(libc.malloc(4096) for _ in range(200))
threads = [threading.Thread(target=job) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc.fdopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
r, w = os.pipe()
f = libc.fdopen(w, b"w")
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.malloc_info(0, f)
libc.fclose.argtypes = [ctypes.c_void_p]
libc.fclose(f)
print(os.read(r, 1 << 20).decode().count("<heap nr="))
"""


def heaps(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], check=True, capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_capped_threads_share_two_heaps() -> None:
    assert heaps("free") > 2  # the check can fail: uncapped, the threads got heaps of their own
    assert heaps("cap") <= 2


# blocks of a few MB, each a little larger than the last (as a listing's pages are): the kernel's count
# of page faults (minor: a page first touched) after they were allocated, filled and freed one by one
FAULTS = """
import resource, sys
from zymi_tui.malloc_arenas import keep_freed_blocks
if sys.argv[1] == "keep":
    assert keep_freed_blocks()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(40):
    block = bytearray(b"x" * ((2 << 20) + i * 65536))
    del block
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], check=True, capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_kept_blocks_are_not_faulted_in_anew() -> None:
    pages = 40 * (2 << 20) // 4096
    assert faults("free") > pages  # the check can fail: each block mapped, touched and unmapped anew
    assert faults("keep") < pages / 4


# 40 MB of 4 KiB blocks through malloc, every 64th kept (so the heap's top cannot shrink) and the rest freed:
# the freed pages stay resident in the heap until they are given back; VmRSS (kB) printed before and after
TRIM = """
import ctypes, ctypes.util, sys
from pathlib import Path
from zymi_tui.malloc_arenas import give_back_freed
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(4096) for _ in range(10_000)]
for b in blocks:
    ctypes.memset(b, 1, 4096)
for i, b in enumerate(blocks):
    if i % 64:
        libc.free(b)
def rss():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS"))
    return int(line.split()[1])
before = rss()
if sys.argv[1] == "trim":
    assert give_back_freed()
print(before, rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_freed_heap_pages_are_given_back() -> None:
    def rss(mode: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", TRIM, mode], check=True, capture_output=True, text=True)
        before, after = map(int, out.stdout.split())
        return before, after

    kept_before, kept_after = rss("keep")
    assert kept_before - kept_after < 4_000  # the check can fail: untrimmed, the ~39 MB freed stay resident
    trim_before, trim_after = rss("trim")
    assert trim_before - trim_after > 30_000, (trim_before, trim_after)
