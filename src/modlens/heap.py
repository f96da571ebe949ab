"""Opt-in heap snapshots of a long-running process (`modlens serve` starts them), for finding what
grows in a long soak. Nothing here knows the daemon: the process's heaps, read from Python and the OS.

    MODLENS_TRACEMALLOC=/tmp/heap modlens serve ...      # then: kill -USR1 <pid>, as often as wanted

With `MODLENS_TRACEMALLOC=PREFIX` set, `modlens serve` starts `tracemalloc` once its detectors are
loaded (`MODLENS_TRACEMALLOC_FRAMES` frames per trace, default 8; 0: no tracing, only the two
cheap files below) and each SIGUSR1 writes
`PREFIX.N.snap` (`tracemalloc.Snapshot.dump`), `PREFIX.N.types.json` (live objects per type,
from `gc.get_objects`) and `PREFIX.N.native.json` (what tracemalloc cannot see: RSS and its anonymous
part, glibc malloc's heap in use and free (`mallinfo2`), SQLite's own allocations). Compare two with `python bench/bench_soak.py --heap-diff A.snap B.snap`
(or `Snapshot.load(b).compare_to(Snapshot.load(a), "traceback")`). Tracing slows every Python
allocation, so this is for diagnosis only; it sees Python's allocations, not torch's tensors,
SQLite's page cache or what malloc keeps.
"""
from __future__ import annotations

import ctypes
import gc
import json
import logging
import os
import signal
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

ENV = "MODLENS_TRACEMALLOC"
FRAMES_ENV = "MODLENS_TRACEMALLOC_FRAMES"

log = logging.getLogger("modlens.daemon")  # the daemon's log, where `modlens serve` reports its snapshots


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def native_memory() -> dict[str, Any]:
    """RSS split (KiB, /proc/self/smaps_rollup), glibc malloc's heaps (MiB: in use, free but kept, mmapped)
    and SQLite's allocations (MiB, all connections of this process); each missing where unavailable."""
    out: dict[str, Any] = {}
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Anonymous", "Pss_File"):
                out[key.lower() + "_kib"] = int(rest.split()[0])
    except OSError:
        pass
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        mi = libc.mallinfo2()
        out["malloc_mib"] = {"heap": round(mi.arena / 2**20, 1), "in_use": round(mi.uordblks / 2**20, 1),
                             "free_kept": round(mi.fordblks / 2**20, 1), "mmapped": round(mi.hblkhd / 2**20, 1)}
    except (OSError, AttributeError):
        pass
    try:
        import _sqlite3

        lib = ctypes.CDLL(_sqlite3.__file__)  # its sqlite3 symbols: the library the study log uses
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        out["sqlite_mib"] = round(lib.sqlite3_memory_used() / 2**20, 1)
    except (OSError, AttributeError, ImportError):
        pass
    return out


def type_counts() -> dict[str, int]:
    """Live objects tracked by the garbage collector, per type name (most first)."""
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    return dict(counts.most_common())


class HeapSnapshots:
    def __init__(self, prefix: str, frames: int = 8):
        self.prefix, self.frames, self.taken = prefix, frames, 0

    def start(self) -> None:
        if self.frames and not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)

    def dump(self) -> Path:
        """Write the next snapshot (and the type counts beside it); returns the .snap path."""
        path = Path(f"{self.prefix}.{self.taken}.snap")
        self.taken += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        gc.collect()
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(path))
        path.with_suffix(".types.json").write_text(json.dumps(type_counts()))
        native = native_memory()
        path.with_suffix(".native.json").write_text(json.dumps(native))
        log.warning("heap snapshot written: %s (Python traced %d bytes; native %s)", path,
                    tracemalloc.get_traced_memory()[0], native)
        return path


def from_env(loop: Any, environ: Any = os.environ) -> HeapSnapshots | None:
    """Start tracing and dump a snapshot on each SIGUSR1 when MODLENS_TRACEMALLOC is set; else None."""
    prefix = environ.get(ENV)
    if not prefix:
        return None
    frames = environ.get(FRAMES_ENV)
    snaps = HeapSnapshots(prefix, max(0, int(frames)) if frames else 8)
    snaps.start()
    loop.add_signal_handler(signal.SIGUSR1, snaps.dump)
    log.warning("tracemalloc on (%s): SIGUSR1 writes %s.N.snap", ENV, prefix)
    return snaps


def diff(before: str | Path, after: str | Path, top: int = 15, key: str = "traceback") -> list[str]:
    """The `top` allocation sites that grew most from `before` to `after`, one line each (plus the
    types whose object counts grew most, when both .types.json files exist)."""
    lines: list[str] = []
    stats = [] if not (Path(before).exists() and Path(after).exists()) else \
        tracemalloc.Snapshot.load(str(after)).compare_to(tracemalloc.Snapshot.load(str(before)), key)
    for stat in stats[:top]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback][-6:]
        lines.append(f"{stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+9d} blocks  {' < '.join(reversed(frames))}")
    ta, tb = Path(before).with_suffix(".types.json"), Path(after).with_suffix(".types.json")
    if ta.exists() and tb.exists():
        ca, cb = json.loads(ta.read_text()), json.loads(tb.read_text())
        grew = sorted(((cb.get(k, 0) - ca.get(k, 0), k) for k in set(ca) | set(cb)), reverse=True)[:top]
        lines.append("objects per type, grown: " + ", ".join(f"{k} {d:+d}" for d, k in grew if d > 0))
    na, nb = Path(before).with_suffix(".native.json"), Path(after).with_suffix(".native.json")
    if na.exists() and nb.exists():
        lines.append(f"native: {na.name} {na.read_text()} -> {nb.name} {nb.read_text()}")
    return lines
