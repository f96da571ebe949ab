"""`ChunkPipeline`: variants → normalize → score what the sink lacks → register and record, for
one chunk of items, on any `Compute` into any `Sink`. A blank item (`datasets.base.blank_reason`)
is registered and finished like any other but never scored: the audit counts it per reason and the
report leaves it out of every metric."""
from __future__ import annotations

import asyncio
from typing import Any, Sequence

from modlens.chunks.chunk import Chunk, StepError
from modlens.chunks.compute import Compute
from modlens.chunks.sinks import Sink
from modlens.chunks.steps import (NORMALIZE, VARIANTS, chunk_texts, generator_identity, normalizer_identity, scorable,
                                  split_outcomes)
from modlens.datasets.base import DatasetItem, blank_reason
from modlens.rows import Variant


class ChunkPipeline:
    def __init__(self, compute: Compute, sink: Sink) -> None:
        self.compute, self.sink = compute, sink
        self.engine = compute.engine
        self.n_scored = self.n_missing = 0
        self._turn: asyncio.Future[None] | None = None  # set once the latest chunk started is recorded

    @property
    def depth(self) -> int:
        return max(1, self.compute.depth)

    async def process(self, items: Sequence[DatasetItem]) -> None:
        await self.run_chunk(items)

    async def run_chunk(self, items: Sequence[DatasetItem], *, done: bool = True) -> Chunk:
        """The chunk through every step; `done=False` leaves its items unfinished (attacks follow).
        Its items are registered in the transaction that records its results (one COMMIT per chunk:
        the compute needs texts, not comment ids), in the order the chunks came, whichever of the
        chunks in flight finishes its compute first."""
        before, mine = self._turn, asyncio.get_running_loop().create_future()
        self._turn = mine
        try:
            chunk = await self._compute(items)
            if before is not None:  # the chunk before this one is recorded (or failed): ids follow the file
                await before
            self.sink.record(chunk, done=done)
        finally:
            mine.set_result(None)
        self.n_scored += len(chunk.scores)
        self.n_missing += sum(r.toxicity is None for _, _, r in chunk.scores)
        return chunk

    async def _compute(self, items: Sequence[DatasetItem]) -> Chunk:
        """Variants, normalizations and the scores the sink lacks of the chunk's texts (not registered yet)."""
        engine = self.engine
        errors: list[StepError] = []
        generated: list[list[Variant]] = [[] for _ in items]
        if engine.generator is not None:  # a blank item gets no variants: nothing to perturb, nothing scored
            todo = [i for i, it in enumerate(items) if blank_reason(it.text) is None]
            texts = [items[i].text for i in todo]
            got, errors = split_outcomes(texts, await self.compute.variants(texts), VARIANTS,
                                         generator_identity(engine.study.perturbation))
            for i, g in zip(todo, got):
                generated[i] = list(g or [])
        texts = chunk_texts(items, generated)
        normalizations: list[tuple[str, Any]] = []
        if engine.normalizer is not None:
            got_n, norm_errors = split_outcomes(texts, await self.compute.normalize(texts), NORMALIZE,
                                                normalizer_identity(engine.normalizer))
            normalizations = [(t, n) for t, n in zip(texts, got_n) if n is not None]
            errors += norm_errors
            texts = scorable([*texts, *(n.text for _, n in normalizations)])  # a normalizer may leave nothing
        scores = await self.compute.score(self.sink.unscored(texts, list(engine.runners)))
        return Chunk(items, [], generated, normalizations, scores, errors)

    def close(self) -> None:
        self.compute.close()
