"""The engine the daemon and the batch audits share: the study's detectors behind dynamic
batchers, the normalizer, and the variant generator. Nothing here knows about sockets."""
from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from modlens.batcher import DynamicBatcher
from modlens.config import StudyConfig
from modlens.detectors.base import Detector, DetectorStatus, LabelScores, MediaScore
from modlens.media import MediaInput
from modlens.perturb.importance import importance_from_scores, importance_texts
from modlens.rows import Variant
from modlens.services.detectors import load_detectors
from modlens.services.variant_setup import build_variant_setup, importance_method, variant_target

if TYPE_CHECKING:
    from modlens.normalize.base import Normalized
    from modlens.normalize.pipeline import Normalizer
    from modlens.perturb.generate import VariantGenerator

T = TypeVar("T")


@dataclass
class DetectorResult:
    detector: str             # the study's key for this detector
    name: str
    version: str
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float         # wall time of the batch call that produced it
    error: str | None = None  # set when the detector failed or had no answer
    details: dict[str, Any] | None = None  # media inputs: what the detector saw (OCR text, skipped media)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VariantRound:
    """`Engine.variants_scored`: the variants of many comments and their scores, or why a comment has none."""
    made: dict[str, list[Variant]]                  # comment text -> its variants (possibly none)
    scored: dict[str, dict[str, DetectorResult]]    # variant text -> detector key -> score
    errors: dict[str, str]                          # comment text -> why it has no variants

    def scores_of(self, variants: Sequence[Variant]) -> list[dict[str, DetectorResult]]:
        return [self.scored[v.text] for v in variants]


Answer = tuple[LabelScores | None, float | None, str | None]  # one text's (labels, toxicity, error)


def answer(detector: Detector, labels: Any, error: str | None = None,
           details: dict[str, Any] | None = None) -> Answer:
    """The engine's one rule for what a detector said of one text (every `DetectorResult` and
    `answers_or_errors`): no answer is missing (with `details`' reason when it gives one); an answer
    `toxicity` cannot read (without the toxicity label) is a bad answer, no labels; `error`: the
    call's own, kept."""
    if error is None and labels is None:
        reason = (details or {}).get("reason")
        error = f"missing: {reason}" if reason else "missing: detector has no score for this text"
    tox = None
    if labels is not None:
        try:
            tox = detector.toxicity(labels)
        except (KeyError, TypeError, ValueError) as err:  # an answer without its toxicity label: an error row
            labels, error = None, f"bad answer: {type(err).__name__}: {err}"
    return labels, tox, error


def answers_or_errors(detector: Detector, texts: list[str],
                      call: Callable[[Detector, list[str]], list[LabelScores | None]] | None = None,
                      ) -> list[Answer]:
    """Per text (labels, toxicity, error) of one synchronous call, by `answer`, the rule of the engine's
    rows: a call that raises, or answers another number of texts, is an error for each of its texts
    (as `_DetectorRunner.score_chunk` makes it). For what scores outside the engine's batchers: the
    commands' lines (`modlens score`, `perturb`, `attack --text`) and the attack's view of a detector
    (`audit.attacks.CallFailureAsNoScore`). `call`: how the detector is asked; None: its blocking
    `score` (a remote detector's runs on its private loop)."""
    try:
        got = call(detector, texts) if call is not None else detector.score(texts)
        if len(got) != len(texts):
            raise RuntimeError(f"{len(got)} results for {len(texts)} texts")
    except Exception as err:  # any failure of the call: its texts have no score
        return [answer(detector, None, f"{type(err).__name__}: {err}")] * len(texts)
    return [answer(detector, labels) for labels in got]


class _DetectorRunner:
    """One detector behind two batchers, texts and media inputs; local detectors run both in
    their own worker thread, so a model never runs two calls at once."""

    def __init__(self, key: str, detector: Detector, max_delay_ms: float, cache_size: int,
                 derived_share: float):
        self.key = key
        self.detector = detector
        # text -> result, for the variant path only (word-importance texts and variants repeat
        # across comments and connections); bounded, least recently used first out
        self.cache: OrderedDict[str, DetectorResult] = OrderedDict()
        self.cache_size = cache_size
        self.cache_hits = 0
        self._pool = None if detector.remote else ThreadPoolExecutor(1, thread_name_prefix=f"det-{key}")
        # derived texts (importance, variants) take at most one forward pass's worth per call (a
        # page that arrives meanwhile waits for that much) and, under load, `derived_share` of the texts
        max_low, low_every = DynamicBatcher.lane(derived_share, detector.max_batch)
        self.batcher: DynamicBatcher[str, tuple[Any, float]] = DynamicBatcher(
            self._call, max_batch=detector.max_batch, max_delay_ms=max_delay_ms, max_low=max_low, low_every=low_every)
        # MediaInputs are hashable (text + media bytes), so the batcher's de-duplication holds for them too
        self.media_batcher: DynamicBatcher[MediaInput, tuple[MediaScore, float]] = DynamicBatcher(
            self._call_media, max_batch=detector.max_batch, max_delay_ms=max_delay_ms)

    async def _call(self, texts: Sequence[str]) -> list[tuple[Any, float]]:
        t0 = time.perf_counter()
        if self.detector.remote:
            out = await self.detector.ascore(texts)
        else:
            out = await asyncio.get_running_loop().run_in_executor(self._pool, self.detector.score, list(texts))
        ms = (time.perf_counter() - t0) * 1000
        return [(o, ms) for o in out]

    async def _call_media(self, inputs: Sequence[MediaInput]) -> list[tuple[MediaScore, float]]:
        """A remote detector with `ascore_media` is awaited on the loop; any other detector's
        blocking `score_media` runs in its worker thread (a remote one's in the default pool)."""
        t0 = time.perf_counter()
        d = self.detector
        if d.remote and hasattr(d, "ascore_media"):
            out = await d.ascore_media(list(inputs))
        else:
            out = await asyncio.get_running_loop().run_in_executor(self._pool, d.score_media, list(inputs))
        ms = (time.perf_counter() - t0) * 1000
        return [(o, ms) for o in out]

    def result(self, labels: Any, ms: float, error: str | None = None,
               details: dict[str, Any] | None = None) -> DetectorResult:
        d = self.detector
        labels, tox, error = answer(d, labels, error, details)
        return DetectorResult(self.key, d.name, d.version, labels, tox, ms, error, details)

    async def score_many(self, texts: Sequence[str], *, low: bool = False, alone: bool = False) -> list[DetectorResult]:
        """All texts go into the batcher in one step, so they can share one model call; `low`:
        derived texts, behind any live ones; `alone`: see `DynamicBatcher.submit_many`."""
        out = []
        for got in await self.batcher.submit_many(texts, return_exceptions=True, low=low, alone=alone):
            if isinstance(got, BaseException):
                out.append(self.result(None, 0.0, f"{type(got).__name__}: {got}"))
            else:
                out.append(self.result(*got))
        return out

    async def score_chunk(self, texts: Sequence[str]) -> list[DetectorResult]:
        """A chunk's distinct texts in calls of `max_batch`, straight to the detector's worker (no
        future per text, no window: the chunk is already a full batch). The answers are
        those `score_many` gives: a failed call is an error row for each of its texts."""
        out: list[DetectorResult] = []
        step = max(1, self.detector.max_batch)
        for i in range(0, len(texts), step):
            part = texts[i:i + step]
            try:
                got = await self._call(part)
                if len(got) != len(part):
                    raise RuntimeError(f"batch function returned {len(got)} results for {len(part)} texts")
            except Exception as err:  # as the batcher: every text of the call learns about the failure
                out += [self.result(None, 0.0, f"{type(err).__name__}: {err}")] * len(part)
                continue
            out += self._results(got)
        return out

    def _results(self, got: Sequence[tuple[Any, float]]) -> list[DetectorResult]:
        """`result` of each (labels, ms) of one call, built inline (`result` per text cost 1.4-1.7 µs
        per row of an audit with a free detector, profiled); an answer `result` would turn into an
        error row (no toxicity label) sends the whole call through `result`, which gives the same rows."""
        d, result = self.detector, self.result
        key, name, version, toxicity = self.key, d.name, d.version, d.toxicity
        try:
            return [result(None, ms) if labels is None else DetectorResult(key, name, version, labels, toxicity(labels), ms)
                    for labels, ms in got]
        except (KeyError, TypeError, ValueError):
            return [result(labels, ms) for labels, ms in got]

    async def score_cached(self, texts: Sequence[str]) -> list[DetectorResult]:
        """`score_many` through the per-text cache: only texts it has not seen (or that failed)
        reach the model. For derived texts (importance, variants), never for a page's scores,
        whose latency and freshness the participant sees."""
        cache = self.cache
        # Each cached result is read once, before the await: another caller (or this call's own
        # fresh results) may evict it before the answers are put together.
        known: dict[str, DetectorResult] = {}
        todo = []
        for t in dict.fromkeys(texts):
            hit = cache.get(t)
            if hit is None:
                todo.append(t)
            else:
                known[t] = hit
                cache.move_to_end(t)
        fresh = dict(zip(todo, await self.score_many(todo, low=True))) if todo else {}
        for t, got in fresh.items():
            if got.error is None and self.cache_size:
                cache[t] = got
                if len(cache) > self.cache_size:
                    cache.popitem(last=False)
        self.cache_hits += sum(t in known for t in texts)
        return [known[t] if t in known else fresh[t] for t in texts]

    async def score_media_many(self, inputs: Sequence[MediaInput]) -> list[DetectorResult]:
        out = []
        for got in await self.media_batcher.submit_many(inputs, return_exceptions=True):
            if isinstance(got, BaseException):
                out.append(self.result(None, 0.0, f"{type(got).__name__}: {got}"))
            else:
                score, ms = got
                out.append(self.result(score.labels, ms, details=score.details))
        return out

    async def close(self, detector: bool = True) -> None:
        await self.batcher.close()
        await self.media_batcher.close()
        if self._pool:
            self._pool.shutdown(wait=False)
        if detector:
            self.detector.close()


IMPORTANCE_KEPT = 8192  # texts whose pooled word importance the target keeps from scoring (a few words each)


class Engine:
    def __init__(self, study: StudyConfig, detectors: dict[str, Detector] | None = None, *, max_delay_ms: float = 10.0,
                 cache_size: int = 20_000):
        """Loads the study's detectors (or uses the given ones). Detectors that cannot load are
        listed in `statuses` with their fix; the engine runs with the rest."""
        self.study = study
        self.statuses: list[DetectorStatus] = []
        if detectors is None:
            loaded = load_detectors(study.detectors)
            detectors, self.statuses = loaded.detectors, loaded.statuses
        else:
            self.statuses = [DetectorStatus(k, "loaded", version=d.version) for k, d in detectors.items()]
        share = study.perturbation.live_share
        self.runners = {k: _DetectorRunner(k, d, max_delay_ms, cache_size, share) for k, d in detectors.items()}
        # A normalizer or generator that cannot be built costs only its own output: the
        # engine still scores. Its error is kept for `status`.
        self.component_errors: dict[str, str] = {}
        self.normalizer = self._optional("normalizer", self._build_normalizer)
        # the generator, its target and importance method: built where Ray's variant actors build theirs
        self.variant_setup = self._optional("perturbation", lambda: build_variant_setup(study.perturbation, detectors))
        self._keeps_importance: Callable[[int], None] | None = None
        setup = self.variant_setup
        if setup is not None and setup.target is not None and setup.importance_method == "pooled":
            # the live pass that scores a comment also gives its pooled word importance: kept, its
            # variants need no forward pass for it (`MiniLMToxicity.keep_word_importance`)
            self._keeps_importance = getattr(self.runners[setup.target].detector, "keep_word_importance", None)
            if self._keeps_importance is not None:
                self._keeps_importance(IMPORTANCE_KEPT)

    def _optional(self, what: str, build: Callable[[], T | None]) -> T | None:
        try:
            return build()
        except Exception as err:
            self.component_errors[what] = f"{type(err).__name__}: {err}"
            logging.getLogger("modlens.engine").warning("%s unavailable: %s", what, err)
            return None

    # --- construction --------------------------------------------------------------------
    def _build_normalizer(self) -> Normalizer | None:
        if not self.study.normalizer.enabled:
            return None
        from modlens.normalize.pipeline import build_normalizer
        return build_normalizer(self.study.normalizer.steps)

    @property
    def generator(self) -> VariantGenerator | None:
        """The variant generator (`variant_setup`'s); None when variants are off or it failed to build."""
        return None if self.variant_setup is None else self.variant_setup.generator

    @property
    def detectors(self) -> dict[str, Detector]:
        return {k: r.detector for k, r in self.runners.items()}

    async def close(self, *, detectors: bool = True) -> None:
        """Stops the batchers; `detectors=False` leaves the detectors open (the caller's objects)."""
        if self._keeps_importance is not None:
            self._keeps_importance(0)  # a caller's detector goes back as it came
        for r in self.runners.values():
            await r.close(detectors)

    # --- work ------------------------------------------------------------------------------
    async def score(self, texts: Sequence[str], only: Sequence[str] | None = None,
                    alone: bool = False) -> list[dict[str, DetectorResult]]:
        """Scores every text with every detector (or `only` these keys), through the batchers.
        Each detector gets the whole list at once; the detectors run concurrently. `alone`: the
        caller adds no texts of its own to these calls (a Perspective API request), so the
        batchers close a call as soon as the load has arrived instead of waiting out the window
        (`DynamicBatcher.submit_many`)."""
        texts = list(texts)
        keys = [k for k in self.runners if only is None or k in only]
        per_detector = await asyncio.gather(*(self.runners[k].score_many(texts, alone=alone) for k in keys))
        return [{k: results[i] for k, results in zip(keys, per_detector)} for i in range(len(texts))]

    async def score_chunk(self, todo: Mapping[str, Sequence[str]]) -> dict[str, list[DetectorResult]]:
        """Detector key -> its results for its distinct texts (`todo[key]`), for chunk pipelines
        whose chunks are already whole batches: the detectors run concurrently, each in calls of
        its `max_batch`, without the batcher's per-text futures and window."""
        keys = list(todo)
        got = await asyncio.gather(*(self.runners[k].score_chunk(list(todo[k])) for k in keys))
        return dict(zip(keys, got))

    async def score_derived(self, texts: Sequence[str]) -> list[dict[str, DetectorResult]]:
        """`score` for derived texts (variants): every detector in one call for the whole list,
        through the per-text cache."""
        texts = list(texts)
        keys = list(self.runners)
        per_detector = await asyncio.gather(*(self.runners[k].score_cached(texts) for k in keys))
        return [{k: results[i] for k, results in zip(keys, per_detector)} for i in range(len(texts))]

    async def score_media(self, inputs: Sequence[MediaInput],
                          only: Sequence[str] | None = None) -> list[dict[str, DetectorResult]]:
        """`score` for texts with media (docs/FUSION.md): each detector's `score_media`, through a
        second batcher per detector. Text-only detectors score the text part and say so
        (`details["ignored_media"]`); an image model has no answer for an input without an image."""
        inputs = list(inputs)
        keys = [k for k in self.runners if only is None or k in only]
        per_detector = await asyncio.gather(*(self.runners[k].score_media_many(inputs) for k in keys))
        return [{k: results[i] for k, results in zip(keys, per_detector)} for i in range(len(inputs))]

    def normalize(self, text: str) -> Normalized | None:
        """The normalizer's `Normalized` result, or None when normalization is off."""
        return None if self.normalizer is None else self.normalizer.normalize(text)

    def target_key(self) -> str | None:
        """The detector whose word importance guides the edits (`variant_setup.variant_target`)."""
        if self.variant_setup is not None:
            return self.variant_setup.target
        return variant_target(self.study.perturbation, self.detectors)

    async def word_importance(self, text: str, target: str | None = None) -> list[float] | None:
        """NoisyHate Algorithm 1 (`perturb.importance`), its texts scored in one batched call."""
        return (await self.word_importance_many([text], target))[0]

    def importance_method(self, target: str | None = None) -> str:
        """The study's `perturbation.importance_method` where the target can do it
        (`variant_setup.importance_method`)."""
        target = target or self.target_key()
        runner = self.runners.get(target) if target is not None else None
        return importance_method(self.study.perturbation, None if runner is None else runner.detector)

    async def word_importance_many(self, texts: Sequence[str], target: str | None = None) -> list[list[float] | None]:
        """Word importance of many comments. Leave-one-out: ONE submission to the target's
        batcher, every comment's leave-one-out texts together, so they fill whole model calls (and
        a text two comments share, or one seen before, is scored once). Pooled: one
        `word_importance_pooled` call for the batch in the detector's worker thread (between,
        never during, its scoring calls; not behind live pages, as the batcher's lanes are:
        one forward pass per comment)."""
        target = target or self.target_key()
        if target is None:
            return [None] * len(texts)
        if self.importance_method(target) == "pooled":
            runner = self.runners[target]
            got = await asyncio.get_running_loop().run_in_executor(
                runner._pool, runner.detector.word_importance_pooled, list(texts))  # type: ignore[attr-defined]
            return list(got)
        groups = [importance_texts(t) for t in texts]
        results = await self.runners[target].score_cached([t for g in groups for t in g])
        out, at = [], 0
        for g in groups:
            out.append(importance_from_scores([r.toxicity for r in results[at:at + len(g)]]))
            at += len(g)
        return out

    async def variants(self, text: str) -> list[Variant]:
        """Perturbed variants of a comment (list of `Variant`), guided by word importance."""
        got = (await self.variants_many([text]))[0]
        if isinstance(got, BaseException):
            raise got
        return got

    async def variants_scored(self, texts: Sequence[str]) -> VariantRound:
        """`variants_many`, then every variant scored by each detector in one derived-text call; a
        comment whose generation failed, or whose variants could not be scored, gets its reason in
        `errors` (what the live daemon and `rescore --variants` record as a step error)."""
        texts = list(dict.fromkeys(texts))
        made: dict[str, list[Variant]] = {}
        errors: dict[str, str] = {}
        try:
            got_all: list[list[Variant] | BaseException] = list(await self.variants_many(texts))
        except Exception as err:
            got_all = [err] * len(texts)
        for t, got in zip(texts, got_all):
            if isinstance(got, BaseException):
                errors[t] = f"{type(got).__name__}: {got}"
            else:
                made[t] = got
        variant_texts = list(dict.fromkeys(v.text for got in made.values() for v in got))
        scored: dict[str, dict[str, DetectorResult]] = {}
        if variant_texts:
            try:
                scored = dict(zip(variant_texts, await self.score_derived(variant_texts)))
            except Exception as err:  # no scores for these variants: each comment that has some fails
                why = f"scoring its variants failed: {type(err).__name__}: {err}"
                errors.update({t: why for t, got in made.items() if got})
                made = {t: got for t, got in made.items() if not got}
        return VariantRound(made, scored, errors)

    async def variants_many(self, texts: Sequence[str]) -> list[list[Variant] | BaseException]:
        """`variants` for many comments: one importance pass for all of them, then the
        generator over each in one worker call. A comment whose generation failed gets its
        exception in place of a list; the others are unaffected."""
        setup = self.variant_setup
        if setup is None:
            return [[] for _ in texts]
        texts = list(texts)
        importances = await self.word_importance_many(texts, setup.target)

        def generate_all() -> list[list[Variant] | BaseException]:
            out: list[list[Variant] | BaseException] = []
            for text, importance in zip(texts, importances):
                try:
                    out.append(setup.generate(text, importance))
                except Exception as err:  # one comment's failure is its own
                    out.append(err)
            return out

        return await asyncio.get_running_loop().run_in_executor(None, generate_all)
