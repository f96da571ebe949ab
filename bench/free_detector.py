"""A detector that costs nothing (a constant score), for the audit benches: with it, what an
audit measures is the pipeline's own cost. Shared by `bench_audit.py` (its child processes import
it from this folder, whatever source tree they run), `bench_audit_floor.py` and `bench_audit_scale.py`;
`Paced` is the same detector at a device's pace."""
from __future__ import annotations

import time
from typing import Sequence

from modlens.detectors.base import Detector


class Free(Detector):
    name, version, labels, toxicity_label, max_batch = "free", "1", ("toxicity",), "toxicity", 1024

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return [{"toxicity": 0.25} for _ in texts]


class Paced(Free):
    """Free's scores after the wait a device at `rate` texts/s would take: `time.sleep` releases the
    GIL as a GPU's kernels do (and it declares so, `releases_gil`), so an audit with it is the
    pipeline around a detector that computes elsewhere (the H200's warm MiniLM: 7551 texts/s)."""
    name = "paced"
    releases_gil = True

    def __init__(self, rate: float) -> None:
        super().__init__()
        self.rate = rate

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        time.sleep(len(texts) / self.rate)
        return super().score(texts)
