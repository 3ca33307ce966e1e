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
