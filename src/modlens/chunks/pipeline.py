"""`ChunkPipeline`: register → variants → normalize → score what the sink lacks → record, for
one chunk of items, on any `Compute` into any `Sink`. A blank item (`datasets.base.blank_reason`)
is registered and finished like any other but never scored: the audit counts it per reason and the
report leaves it out of every metric."""
from __future__ import annotations

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

    @property
    def depth(self) -> int:
        return max(1, self.compute.depth)

    async def process(self, items: Sequence[DatasetItem]) -> None:
        await self.run_chunk(items)

    async def run_chunk(self, items: Sequence[DatasetItem], *, done: bool = True) -> Chunk:
        """The chunk through every step; `done=False` leaves its items unfinished (attacks follow)."""
        engine = self.engine
        ids = self.sink.register(items)
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
        chunk = Chunk(items, ids, generated, normalizations, scores, errors)
        self.sink.record(chunk, done=done)
        self.n_scored += len(scores)
        self.n_missing += sum(r.toxicity is None for _, _, r in scores)
        return chunk

    def close(self) -> None:
        self.compute.close()
