"""Where a chunk's compute runs. `Compute` is what the pipeline asks of it; `LocalCompute` runs on
this process's `Engine` (its batchers, normalizer and generator). `scale.ray_audit.RayCompute` is
the same on Ray actors. Both compute exactly the same results; only where differs."""
from __future__ import annotations

import asyncio
from typing import Any, Mapping, Protocol, Sequence

from modlens.chunks.chunk import Failed, ScoreRow
from modlens.chunks.steps import NORMALIZE, VARIANTS, each, failure
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.rows import Variant

# Chunks in flight when the detectors free the event loop's thread while they compute: chunk n is
# registered and recorded on the loop while chunk n+1's forward passes run (`ChunkPipeline.run_chunk`
# keeps the records in the order the chunks came).
OVERLAP_DEPTH = 2


class Compute(Protocol):
    engine: Engine  # the driver's engine: detector identities, the normalizer's and generator's settings

    @property
    def depth(self) -> int:
        """Chunks worth having in flight at once (1: one after the other; 2: one computes while the one
        before is recorded)."""
        ...

    async def variants(self, texts: list[str]) -> list[list[Variant] | Failed]: ...

    async def normalize(self, texts: list[str]) -> list[Any | Failed]: ...

    async def score(self, todo: Mapping[str, Sequence[str]]) -> list[ScoreRow]:
        """(text, key, answer) for every detector key and its texts; a detector error is an answer with `error`."""
        ...

    def close(self) -> None: ...


def frees_the_loop(detector: Detector) -> bool:
    """Whether the detector leaves the event loop's thread free while it computes, so that the
    loop can record the chunk before, as the detector declares it: a remote detector awaits its
    requests on the loop; one that declares `releases_gil` (a model that torch, ONNX Runtime or
    TensorFlow runs) computes in its worker thread with the GIL released. Read, never inferred from
    what the detector holds: tests/test_detector_overlap_flag.py checks every built-in's declaration
    against its model. A detector in plain Python (a lexicon, a cached table, scikit-learn's
    vectorizer) holds the GIL for its whole call, so a second chunk in flight only competes with the
    record for it (free detector on all of Davidson: no faster at depth 2, 2-4% fewer rows per CPU
    second, docs/PERFORMANCE.md) and a stop loses two chunks' compute instead of one."""
    return bool(detector.remote or detector.releases_gil)


class LocalCompute:
    """The chunk's compute on this process's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def depth(self) -> int:
        """`OVERLAP_DEPTH` when some detector frees the loop while it computes (`frees_the_loop`), else 1."""
        return OVERLAP_DEPTH if any(frees_the_loop(r.detector) for r in self.engine.runners.values()) else 1

    async def variants(self, texts: list[str]) -> list[list[Variant] | Failed]:
        async def one(text: str) -> list[Variant] | Failed:
            try:
                got: list[Variant] = await self.engine.variants(text)
                return got
            except Exception as err:  # policy: this text's variants only
                return failure(err, VARIANTS)

        return list(await asyncio.gather(*(one(t) for t in texts)))

    async def normalize(self, texts: list[str]) -> list[Any | Failed]:
        # in a worker thread: the batchers keep the event loop
        engine = self.engine
        return await asyncio.get_running_loop().run_in_executor(None, lambda: each(engine.normalize, texts, NORMALIZE))

    async def score(self, todo: Mapping[str, Sequence[str]]) -> list[ScoreRow]:
        # a chunk is already a batch: each detector gets its texts in calls of its max_batch, with
        # no future per text (the batcher's per-text cost was a fifth of an audit's with a free detector)
        scored = await self.engine.score_chunk(todo)
        return [(t, k, r) for k, ts in todo.items() for t, r in zip(ts, scored[k])]

    def close(self) -> None:
        pass
