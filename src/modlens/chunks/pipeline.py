"""`ChunkPipeline`: variants → normalize → score what the sink lacks → register and record, for
one chunk of items, on any `Compute` into any `Sink`. A blank item (`datasets.base.blank_reason`)
is registered and finished like any other but never scored: the audit counts it per reason and the
report leaves it out of every metric."""
from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping, Sequence

from modlens.chunks.chunk import Chunk, ScoreRow, StepError
from modlens.chunks.compute import Compute
from modlens.chunks.sinks import Sink
from modlens.chunks.steps import (NORMALIZE, VARIANTS, chunk_texts, generator_identity, normalizer_identity, scorable,
                                  split_outcomes)
from modlens.datasets.base import DatasetItem, blank_reason
from modlens.errors import ErrorKind, ModlensError
from modlens.rows import Variant


class EarlierChunkFailed(ModlensError, RuntimeError):
    """A chunk's compute ended, but the chunk before it was not recorded (its compute or record
    raised): this one is not recorded either, so no item lands ahead of one before it in the file.
    The audit stops on the earlier chunk's own error (`audit.run._drive` looks at chunks in order)."""

    kind = ErrorKind.FAILED


def count_errors(tally: dict[str, dict[str, Any]], rows: Iterable[ScoreRow], failing: dict[str, set[str]]) -> None:
    """Per detector key, into `tally`: the score rows of the log this run wrote (`scores`), how many of
    them are errors (`errors`: a call that raised, a text it had no answer for) and the first error's
    text (`first`). `failing`: per key, the texts whose row this run wrote is an error. An error row is
    replaced by the next score of its text, and a run scores such a text again when it meets it again
    (a text repeated in a later chunk, an attack's normalized form): the same row, not one more. So
    `scores` counts texts, one per text and detector: no sink asks again for a text this run wrote a
    good score for (the log sink looks in the log, the Parquet sink remembers its own)."""
    for text, key, r in rows:
        t = tally.get(key)
        if t is None:
            t = tally[key] = {"scores": 0, "errors": 0, "first": None}
        failed = failing.setdefault(key, set())
        if text in failed:  # this run's own error row, replaced
            if r.error is None:
                failed.discard(text)
                t["errors"] -= 1
            continue
        t["scores"] += 1
        if r.error is not None:
            failed.add(text)
            t["errors"] += 1
            if t["first"] is None:
                t["first"] = r.error


class ChunkPipeline:
    def __init__(self, compute: Compute, sink: Sink) -> None:
        self.compute, self.sink = compute, sink
        self.engine = compute.engine
        self.n_scored = self.n_missing = 0
        self.scores: dict[str, dict[str, Any]] = {}  # `count_errors` of the recorded chunks' score rows
        # per step ("normalize", "variants"): the texts the recorded chunks' step_errors rows are for
        self._step_failed: dict[str, dict[str, StepError]] = {}
        self._failing: dict[str, set[str]] = {}  # (its texts whose row is an error)
        # done once the latest chunk started is recorded (True) or will never be (False)
        self._turn: asyncio.Future[bool] | None = None
        # detector key -> the texts chunks in flight are scoring and will record: a later chunk in
        # flight leaves them to those chunks instead of scoring them a second time
        self._scoring: dict[str, set[str]] = {}

    @property
    def depth(self) -> int:
        return max(1, self.compute.depth)

    async def process(self, items: Sequence[DatasetItem]) -> None:
        await self.run_chunk(items)

    async def run_chunk(self, items: Sequence[DatasetItem], *, done: bool = True) -> Chunk:
        """The chunk through every step; `done=False` leaves its items unfinished (attacks follow).
        Its items are registered in the transaction that records its results (one COMMIT per chunk:
        the compute needs texts, not comment ids), in the order the chunks came, whichever of the
        chunks in flight finishes its compute first; none after a chunk that was not recorded.
        A text that a chunk in flight before this one scores is left to it, and scored here only if
        that chunk recorded no good score for it: the rows and counts of chunks one after the other."""
        before, mine = self._turn, asyncio.get_running_loop().create_future()
        self._turn = mine
        recorded, claimed = False, dict[str, list[str]]()
        try:
            chunk, left = await self._compute(items, claimed)
            if before is not None and not await before:  # ids and run_items follow the file
                raise EarlierChunkFailed("the chunk before this one was not recorded")
            if again := self._still_unscored(left):  # a chunk before scored them with an error: again, as
                chunk.scores = [*chunk.scores, *await self.compute.score(again)]  # one chunk after the other
            self.sink.record(chunk, done=done)
            recorded = True
            for e in chunk.errors:  # the first error of a text stays its example; the log keeps one row per text
                self._step_failed.setdefault(e.step, {}).setdefault(e.text, e)
        finally:
            for key, texts in claimed.items():
                self._scoring[key].difference_update(texts)
            mine.set_result(recorded)
        self.count_scores(chunk.scores)
        return chunk

    def count_scores(self, rows: Sequence[ScoreRow]) -> None:
        """Score rows this run wrote, a chunk's or outside the chunks (an attack's texts): `n_scored`,
        `n_missing` and the per-detector `scores` tally."""
        self.n_scored += len(rows)
        self.n_missing += sum(r.toxicity is None for _, _, r in rows)
        count_errors(self.scores, rows, self._failing)

    def score_errors(self) -> dict[str, dict[str, Any]]:
        """Per detector key with an error among the scores this run wrote: `count_errors`' tally."""
        return {k: t for k, t in self.scores.items() if t["errors"]}

    def step_errors(self) -> dict[str, dict[str, Any]]:
        """Per step that failed for some text in the chunks this run recorded (`step_errors` rows):
        {"component": name@version, "errors": the texts it failed for (one row each in the log, a
        text met again counted once), "first": the first one's message}."""
        out: dict[str, dict[str, Any]] = {}
        for step, failed in self._step_failed.items():
            first = next(iter(failed.values()))
            out[step] = {"component": f"{first.component}@{first.version}", "errors": len(failed),
                         "first": first.message}
        return out

    def error_texts(self) -> dict[str, set[str]]:
        """Per detector key, the texts whose score row this run wrote is an error (and still is)."""
        return {key: set(texts) for key, texts in self._failing.items()}

    def step_failed_texts(self) -> dict[str, set[str]]:
        """Per step, the texts it failed for in the chunks this run recorded (`step_errors`' texts)."""
        return {step: set(failed) for step, failed in self._step_failed.items()}

    async def _compute(self, items: Sequence[DatasetItem],
                       claimed: dict[str, list[str]]) -> tuple[Chunk, dict[str, list[str]]]:
        """Variants, normalizations and the scores the sink lacks of the chunk's texts (not registered
        yet), but for those a chunk in flight before this one scores: they are returned. `claimed`
        gets the texts this chunk scores, per detector key, as soon as it starts scoring them."""
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
        mine, left = self._share(self.sink.unscored(texts, list(engine.runners)))
        claimed.update(mine)
        scores = await self.compute.score(mine)
        return Chunk(items, [], generated, normalizations, scores, errors), left

    def _share(self, todo: Mapping[str, Sequence[str]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """What this chunk scores now (and will record), and what it leaves to the chunks in flight before it."""
        mine: dict[str, list[str]] = {}
        left: dict[str, list[str]] = {}
        for key, texts in todo.items():
            busy = self._scoring.setdefault(key, set())
            if ours := [t for t in texts if t not in busy]:
                mine[key] = ours
            if theirs := [t for t in texts if t in busy]:
                left[key] = theirs
            busy.update(ours)
        return mine, left

    def _still_unscored(self, left: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        """Of the texts left to the chunks before (now recorded), those the sink still lacks a good score for."""
        again: dict[str, list[str]] = {}
        for key, texts in left.items():
            again.update(self.sink.unscored(texts, [key]))
        return again

    def close(self) -> None:
        self.compute.close()
