"""What runs on Ray's workers: one detector per actor (GPU when assigned), the variant
generator beside its own copy of the target detector, and normalization as stateless tasks.

Every function here computes exactly what the local engine computes (`modlens.engine`): the
same detector call, the same `toxicity` mapping, the same word importance and seeded variant
generator, the same normalizer. Only where it runs differs."""
from __future__ import annotations

import inspect
import sys
import time
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

from modlens.chunks.chunk import Failed
from modlens.chunks.steps import NORMALIZE, VARIANTS, each, failure, normalizer_identity
from modlens.config import DetectorConfig, NormalizerConfig, PerturbationConfig
from modlens.detectors.base import Detector
from modlens.rows import Variant

if TYPE_CHECKING:
    from modlens.services.variant_setup import VariantSetup

# (labels, toxicity, latency_ms, error) for one text: what the driver turns into a DetectorResult
Answer = tuple[dict[str, float] | None, float | None, float, str | None]

# texts per forward pass of a transformer detector on a GPU actor, unless the study sets batch_size
GPU_BATCH_SIZE = 128


def build_detector(spec: DetectorConfig | Detector, on_gpu: bool, dtype: str | None = None) -> Detector:
    """The detector an actor scores with: re-created from its config (so a GPU actor loads the model
    on its own card), or the driver's own object when it has no config (embedding code, tests).
    `dtype`: the driver's (a transformer's dtype is part of its version: a driver on a GPU runs fp16,
    as the local path does on CUDA, and so do the actors; set `dtype` in the study to choose)."""
    if isinstance(spec, Detector):
        return spec
    from modlens.detectors import registry

    options = dict(spec.options)
    params = inspect.signature(registry.DETECTORS.load(spec.name).create).parameters
    if dtype and "dtype" in params and "dtype" not in options:
        options["dtype"] = dtype
    if on_gpu:
        if "batch_size" in params and "batch_size" not in options:
            options["batch_size"] = GPU_BATCH_SIZE  # batch size per device: a GPU takes larger batches
    return registry.create(spec.name, **options)


def use_threads(threads: int | None) -> None:
    """Torch's intra-op threads for this actor. Ray sets OMP_NUM_THREADS to an actor's `num_cpus`
    (1 for a fractional share), so on a 2-CPU machine the one MiniLM actor ran on one core: +48%
    against the local engine's two (bench/bench_ray.py, docs/SCALE.md). Only where the detector
    already imported torch: a detector without it pays no import."""
    if threads and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(threads))


def answers(det: Detector, texts: Sequence[str]) -> list[Answer]:
    """One detector call over `texts`, as `engine._DetectorRunner` records it: an exception
    becomes an error on every text of the call, a missing answer an error on its text."""
    t0 = time.perf_counter()
    try:
        out = det.score(list(texts))
        if len(out) != len(texts):
            raise RuntimeError(f"{det.name} returned {len(out)} results for {len(texts)} texts")
    except Exception as err:  # the detector failed: recorded per text, the audit goes on
        ms = (time.perf_counter() - t0) * 1000
        return [(None, None, ms, f"{type(err).__name__}: {err}")] * len(texts)
    ms = (time.perf_counter() - t0) * 1000
    return [(None, None, ms, "missing: detector has no score for this text") if labels is None
            else (labels, det.toxicity(labels), ms, None) for labels in out]


class DetectorActor:
    """One detector loaded once; `score` answers batches for as long as the audit runs."""

    def __init__(self, spec: DetectorConfig | Detector, on_gpu: bool = False, dtype: str | None = None,
                 threads: int | None = None) -> None:
        self.det = build_detector(spec, on_gpu, dtype)
        if not on_gpu:
            use_threads(threads)

    def identity(self) -> tuple[str, str, int]:
        """name, version, and the texts it takes per call."""
        return self.det.name, self.det.version, int(getattr(self.det, "max_batch", 64))

    def device(self) -> str:
        return str(getattr(self.det, "device", "cpu"))

    def score(self, texts: list[str]) -> list[Answer]:
        return answers(self.det, texts)


# the target detector's name and version, the importance method, and each strategy the generator
# runs with the data it reads (a strategy a worker cannot run is left out of its generator)
VariantIdentity = tuple[str, str, str, dict[str, dict[str, Any]]]


def variant_identity(det: Detector, setup: VariantSetup) -> VariantIdentity:
    """What decides a generator's variants beyond the study's settings, which travel to the actors as they are."""
    return (det.name, det.version, setup.importance_method,
            {key: strategy.data() for key, strategy in setup.generator.strategies.items()})


class VariantActor:
    """The variant generator and the target detector that guides it (word importance), as
    `Engine.variants` runs them: built by the engine's own `build_variant_setup`, so the actor
    refuses what the engine refuses and computes importance the same way."""

    def __init__(self, perturbation: PerturbationConfig, target: str, spec: DetectorConfig | Detector,
                 threads: int | None = None, dtype: str | None = None) -> None:
        from modlens.services.variant_setup import build_variant_setup

        self.det = build_detector(spec, False, dtype)
        setup = build_variant_setup(perturbation, {target: self.det}, target)
        if setup is None:
            raise ValueError("variants are off in this study (disabled, or a budget of 0): no variant actor to start")
        self.setup = setup
        self.target, self.method = target, setup.importance_method
        use_threads(threads)

    def identity(self) -> VariantIdentity:
        return variant_identity(self.det, self.setup)

    def variants(self, texts: list[str]) -> list[list[Variant] | Failed]:
        from modlens.perturb.importance import importance_from_scores, importance_texts

        if self.method == "pooled":
            return self._generate(texts, list(self.det.word_importance_pooled(texts)))  # type: ignore[attr-defined]
        probes = [importance_texts(t) for t in texts]
        flat = [p for ps in probes for p in ps]
        # every text's probes in calls of the detector's batch size, as the engine's batcher groups them
        size = max(1, int(getattr(self.det, "max_batch", 64)))
        scored = [a for i in range(0, len(flat), size) for a in answers(self.det, flat[i:i + size])]
        importances = []
        at = 0
        for ps in probes:
            importances.append(importance_from_scores([a[1] for a in scored[at:at + len(ps)]]))
            at += len(ps)
        return self._generate(texts, importances)

    def _generate(self, texts: list[str], importances: list[list[float] | None]) -> list[list[Variant] | Failed]:
        out: list[list[Variant] | Failed] = []
        for text, importance in zip(texts, importances):
            try:
                out.append(self.setup.generate(text, importance))
            except Exception as err:  # this text's variants only (the chunk pipeline's error policy)
                out.append(failure(err, VARIANTS))
        return out


@lru_cache(maxsize=4)
def _normalizer(steps: tuple[str, ...] | None) -> Any:
    from modlens.normalize.pipeline import build_normalizer
    return build_normalizer(None if steps is None else list(steps))


def normalizer_loaded(config: NormalizerConfig) -> tuple[str, str]:
    """The normalizer this worker builds from `config`, as (name, version): a Ray task the audit
    awaits before its first write, which also loads it into the worker for the chunks."""
    return normalizer_identity(_normalizer(None if config.steps is None else tuple(config.steps)))


def normalize_texts(config: NormalizerConfig, texts: list[str]) -> list[Any | Failed]:
    """`Normalized` results of `texts`, `Failed` where the normalizer raised (a Ray task; the
    normalizer is built once per worker)."""
    norm = _normalizer(None if config.steps is None else tuple(config.steps))
    return each(norm.normalize, texts, NORMALIZE)
