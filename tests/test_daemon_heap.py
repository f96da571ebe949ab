"""The daemon's opt-in heap snapshots (`modlens.heap`, started by `modlens serve`): off unless
MODLENS_TRACEMALLOC is set; each SIGUSR1 writes a snapshot; two compare to what grew."""
from __future__ import annotations

import asyncio
import os
import signal
import tracemalloc

from modlens import heap


class Kept:
    def __init__(self) -> None:
        self.payload = bytearray(1024)


def test_off_without_the_variable():
    assert heap.from_env(object(), environ={}) is None


async def test_sigusr1_writes_snapshots_whose_diff_names_what_grew(tmp_path):
    was_tracing = tracemalloc.is_tracing()
    loop = asyncio.get_running_loop()
    snaps = heap.from_env(loop, environ={heap.ENV: str(tmp_path / "heap"), heap.FRAMES_ENV: "4"})
    try:
        assert snaps is not None and tracemalloc.is_tracing()
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if snaps.taken == 1:
                break
        kept = [Kept() for _ in range(4096)]  # 4 MiB that stays (allocated in Kept.__init__)
        snaps.dump()
        lines = heap.diff(tmp_path / "heap.0.snap", tmp_path / "heap.1.snap", top=3)
        assert "test_daemon_heap.py" in lines[0] and "+4." in lines[0], lines  # the site first, with its MiB
        assert lines[-2].startswith("objects per type, grown: ") and "Kept +4096" in lines[-2]
        assert lines[-1].startswith("native: heap.0.native.json {") and '"malloc_mib"' in lines[-1]
        del kept
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        if not was_tracing:
            tracemalloc.stop()
