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
from typing import Any

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # mallopt's parameters (glibc malloc.h)
ARENAS = 2  # the main thread's and one for every other thread: the threads mostly wait on the GIL anyway


def cap_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads started from now on; True if it was done (False on a
    libc that is not glibc, where nothing changes). Call it before the first thread starts."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, arenas))


def keep_freed_blocks(size: int = 32 << 20) -> bool:
    """Keep freed blocks of up to `size` bytes in the heap for the next ones (True if it was done).

    A whole-store listing allocates and frees a few blocks of some MB per page (a page's text, its
    encoded lines). glibc maps a block that large on its own and unmaps it when freed (or trims the
    heap's top once it exceeds twice the largest block freed so far), so every page's blocks were
    faulted in anew (docs/performance-notes.md). Kept, the freed blocks are reused, not added to.
    Fixing both thresholds also stops glibc's raising them as it goes."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, size)) and bool(mallopt(M_TRIM_THRESHOLD, 2 * size))


def give_back_freed() -> bool:
    """Return the heap's free pages to the system (glibc's `malloc_trim`; True if it was done).

    What a long read frees (its pages of rows, decoded and dropped; arrays grown by copying) stays in the
    heap, between blocks still held, and counts in the RSS: on a 1M-event run the dashboard's RSS went from
    125 to 106 MB by one call once it had settled. Called where such a read ends (or every so many pages of
    it), the peak does not carry what earlier pages freed. A few ms on a heap of 100 MB."""
    trim = _libc_function("malloc_trim", [ctypes.c_size_t])
    return trim is not None and bool(trim(0))


def _mallopt() -> Any:
    """glibc's `mallopt`, or None on another libc (musl has none; other systems are not glibc)."""
    return _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def _libc_function(name: str, argtypes: list[Any]) -> Any:
    """A glibc function of the process's own symbols (no `find_library`: it runs ldconfig), returning an int;
    None on another system or libc (musl has no mallopt nor malloc_trim)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function
