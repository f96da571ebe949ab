"""The C heap of the daemon (`modlens serve`, its only user): large blocks go back to the system when freed.

glibc's malloc serves a block of at least M_MMAP_THRESHOLD bytes from its own mmap, unmapped on
free, and smaller ones from its heaps, which keep what is freed. The threshold starts at 128 KiB
but rises to the size of each mmapped block that is freed (up to 32 MiB on 64-bit). After a few
model calls the activations of a forward pass (0.1–10 MiB each, of varying shapes) therefore come
from the heaps, fragment them, and the daemon's RSS grows with its traffic and stays after it.
Setting the threshold pins it. `bench/bench_soak.py` measured the difference (docs/PERFORMANCE.md,
"Memory"). A threshold the user set (`MALLOC_MMAP_THRESHOLD_`) is left alone; other C libraries
are left alone.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
THRESHOLD = 128 * 1024  # glibc's own starting value, kept from then on


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None  # only glibc has it (musl, for one, does not)


def pin_mmap_threshold(threshold: int = THRESHOLD) -> str:
    """Fix malloc's mmap threshold for this process; says what was done (for the log)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return f"malloc mmap threshold left to MALLOC_MMAP_THRESHOLD_={os.environ['MALLOC_MMAP_THRESHOLD_']}"
    libc = _glibc()
    if libc is None:
        return "malloc mmap threshold: not glibc, left as it is"
    if libc.mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(threshold)) != 1:
        return "malloc mmap threshold: mallopt refused, left as it is"
    return f"malloc mmap threshold pinned at {threshold // 1024} KiB"
