"""`ChunkPipeline`: register → variants → normalize → score what the sink lacks → record, for
one chunk of items, on any `Compute` into any `Sink`."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.chunks.chunk import Chunk, StepError
from modlens.chunks.compute import Compute
from modlens.chunks.sinks import Sink
from modlens.chunks.steps import NORMALIZE, VARIANTS, chunk_texts, generator_identity, normalizer_identity, split_outcomes
from modlens.datasets.base import DatasetItem
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
        if engine.generator is not None:
            texts = [it.text for it in items]
            got, errors = split_outcomes(texts, await self.compute.variants(texts), VARIANTS,
                                         generator_identity(engine.study.perturbation))
            generated = [list(g or []) for g in got]
        texts = chunk_texts(items, generated)
        normalizations: list[tuple[str, Any]] = []
        if engine.normalizer is not None:
            got_n, norm_errors = split_outcomes(texts, await self.compute.normalize(texts), NORMALIZE,
                                                normalizer_identity(engine.normalizer))
            normalizations = [(t, n) for t, n in zip(texts, got_n) if n is not None]
            errors += norm_errors
            texts = list(dict.fromkeys([*texts, *(n.text for _, n in normalizations)]))
        scores = await self.compute.score(self.sink.unscored(texts, list(engine.runners)))
        chunk = Chunk(items, ids, generated, normalizations, scores, errors)
        self.sink.record(chunk, done=done)
        self.n_scored += len(scores)
        self.n_missing += sum(r.toxicity is None for _, _, r in scores)
        return chunk

    def close(self) -> None:
        self.compute.close()
