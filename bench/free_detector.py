"""A detector that costs nothing (a constant score), for the audit benches: with it, what an
audit measures is the pipeline's own cost. Shared by `bench_audit.py` (its child processes import
it from this folder, whatever source tree they run) and `bench_audit_floor.py`."""
from __future__ import annotations

from typing import Sequence

from modlens.detectors.base import Detector


class Free(Detector):
    name, version, labels, toxicity_label, max_batch = "free", "1", ("toxicity",), "toxicity", 1024

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return [{"toxicity": 0.25} for _ in texts]
