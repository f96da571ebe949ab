"""Where a chunk's compute runs. `Compute` is what the pipeline asks of it; `LocalCompute` runs on
this process's `Engine` (its batchers, normalizer and generator). `scale.ray_audit.RayCompute` is
the same on Ray actors. Both compute exactly the same results; only where differs."""
from __future__ import annotations

import asyncio
from typing import Any, Mapping, Protocol, Sequence

from modlens.chunks.chunk import Failed, ScoreRow
from modlens.chunks.steps import NORMALIZE, VARIANTS, each, failure
from modlens.engine import Engine
from modlens.rows import Variant


class Compute(Protocol):
    engine: Engine  # the driver's engine: detector identities, the normalizer's and generator's settings
    depth: int      # chunks worth having in flight at once (1: one after the other)

    async def variants(self, texts: list[str]) -> list[list[Variant] | Failed]: ...

    async def normalize(self, texts: list[str]) -> list[Any | Failed]: ...

    async def score(self, todo: Mapping[str, Sequence[str]]) -> list[ScoreRow]:
        """(text, key, answer) for every detector key and its texts; a detector error is an answer with `error`."""
        ...

    def close(self) -> None: ...


class LocalCompute:
    """The chunk's compute on this process's engine."""
    depth = 1

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

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
