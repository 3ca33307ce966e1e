"""Fewer C heaps for the dashboard's threads. Imports nothing from the package.

glibc gives each thread that calls malloc a heap (an "arena") of its own, up to 8 per core, and keeps
what a thread freed in that thread's arena. The dashboard reads the store on several threads at once
(the runs, their peaks, the selected run, the tail, the hash chains: each an aiosqlite connection with
its own thread), so at 1M events what SQLite and the decoding freed on one thread stayed resident beside
what the next one allocated: measured on a 1M-event store (16,667 runs, no hash-chain check), peak RSS
164 MB with the default arenas, 133 MB with one (tracemalloc sees ~30 MB of Python objects added)."""

from __future__ import annotations

import ctypes
import sys

M_ARENA_MAX = -8  # mallopt's parameter (glibc malloc.h)
ARENAS = 2  # the main thread's and one for every other thread: the threads mostly wait on the GIL anyway


def cap_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads started from now on; True if it was done (False on a
    libc that is not glibc, where nothing changes). Call it before the first thread starts."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: no `find_library` (it runs ldconfig)
    except (OSError, AttributeError):  # musl has no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
