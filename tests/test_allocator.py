"""The daemon's RSS must not keep what a forward pass freed. glibc raises its mmap
threshold to the size of each large block freed, so later blocks of that size come from its heaps and
stay there; `pin_mmap_threshold` keeps them mapped. Run in fresh processes: the threshold is per process."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from modlens.daemon.allocator import _glibc

PROGRAM = r"""
import json, sys
from modlens.daemon.allocator import pin_mmap_threshold
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:")) / 1024
said = pin_mmap_threshold() if sys.argv[1] == "pin" else "default"
big = bytearray(24 << 20); del big              # as a first large activation: glibc raises its threshold
base = rss()
blocks = [bytearray(1 << 20) for _ in range(150)]  # 150 MiB of 1 MiB activations
keep = blocks[-1]; del blocks                    # freed, but for the last one
print(json.dumps({"said": said, "grew_mib": rss() - base}))
"""


def run(mode: str, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", **env})
    return json.loads(out.stdout)


@pytest.mark.skipif(_glibc() is None, reason="glibc's malloc only")
def test_freed_activations_go_back_to_the_system_once_pinned():
    default, pinned = run("default"), run("pin")
    assert default["grew_mib"] > 100      # the defect: 150 MiB freed, kept by the heap
    assert pinned["grew_mib"] < 10, pinned
    assert pinned["said"] == "malloc mmap threshold pinned at 128 KiB"


@pytest.mark.skipif(_glibc() is None, reason="glibc's malloc only")
def test_a_threshold_the_user_set_is_left_alone():
    got = run("pin", MALLOC_MMAP_THRESHOLD_="65536")
    assert got["said"] == "malloc mmap threshold left to MALLOC_MMAP_THRESHOLD_=65536"
    assert got["grew_mib"] < 10  # glibc applied the user's own
