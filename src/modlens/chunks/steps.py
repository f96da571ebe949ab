"""The steps of a chunk, with the one error policy: a component that raises for one text
becomes a `StepError` for that text (recorded), never the chunk's or the run's failure."""
from __future__ import annotations

import hashlib
import logging
from typing import Any, Callable, Sequence, TypeVar

from modlens.chunks.chunk import Failed, StepError
from modlens.config import PerturbationConfig
from modlens.datasets.base import DatasetItem, blank_reason
from modlens.rows import Variant

log = logging.getLogger("modlens.chunks")

T = TypeVar("T")
NORMALIZE, VARIANTS = "normalize", "variants"
GENERATOR = "variant-generator"


def failure(err: BaseException, step: str) -> Failed:
    log.warning("%s failed: %s: %s", step, type(err).__name__, err)
    return Failed(f"{type(err).__name__}: {err}")


def each(fn: Callable[[str], T], texts: Sequence[str], step: str) -> list[T | Failed]:
    """`fn` over every text; a text it raises for gets `Failed` (logged), the others their result."""
    out: list[T | Failed] = []
    for t in texts:
        try:
            out.append(fn(t))
        except Exception as err:  # one text's failure is its own (policy: recorded, the run goes on)
            out.append(failure(err, step))
    return out


def normalizer_identity(normalizer: Any) -> tuple[str, str]:
    """(name, version) as `normalizations` rows name it."""
    return getattr(normalizer, "name", "") or "default", getattr(normalizer, "version", "") or ""


def generator_identity(p: PerturbationConfig) -> tuple[str, str]:
    """(name, version) of the variant generator: its settings decide its output, so they are its version."""
    parts = [",".join(p.strategies), str(p.budget), str(p.seed), str(p.importance_threshold),
             repr(sorted((p.strategy_options or {}).items()))]
    if p.importance_method != "leave_one_out":  # the default leaves earlier versions as they were
        parts.append(p.importance_method)
    basis = "|".join(parts)
    return GENERATOR, hashlib.sha256(basis.encode()).hexdigest()[:12]


def split_outcomes(texts: Sequence[str], outcomes: Sequence[T | Failed], step: str,
                   identity: tuple[str, str]) -> tuple[list[T | None], list[StepError]]:
    """Results (None where the step failed) and the step errors of the failures."""
    results: list[T | None] = []
    errors: list[StepError] = []
    for t, o in zip(texts, outcomes):
        if isinstance(o, Failed):
            results.append(None)
            errors.append(StepError(t, step, identity[0], identity[1], o.message))
        else:
            results.append(o)
    return results, errors


def scorable(texts: Sequence[str]) -> list[str]:
    """The texts that get scores, once each: blank ones (`blank_reason`) are never scored."""
    return [t for t in dict.fromkeys(texts) if blank_reason(t) is None]


def chunk_texts(items: Sequence[DatasetItem], generated: Sequence[Sequence[Variant]]) -> list[str]:
    """Every text of a chunk that needs scores: items, their dataset variants, generated variants
    (blank ones left out)."""
    texts: list[str] = []
    add, extend = texts.append, texts.extend
    for it, gen in zip(items, generated):
        add(it.text)
        if it.variants or gen:  # most items have neither: no list built per item
            extend([*(v.text for v in it.variants), *(v.text for v in gen)])
    return scorable(texts)
