"""The one place a variant generator and its settings are built: which detector guides the edits
(its word importance), how that importance is computed, and the refusal of a remote target the
study did not name. The local engine (`modlens.engine`) and Ray's variant actors
(`modlens.scale.actors`) both build theirs here, so both engines make the same variants and send
the same texts.

Why a remote target must be named: leave-one-out importance sends one text per word of every
comment (the comment without that word) to the target. A study that lists a remote detector has
said comments go there to be scored; only `perturbation.target` naming it says these texts may go
too. Unnamed, the first local detector guides the edits; with none, there are no variants."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Mapping

from modlens.config import PerturbationConfig
from modlens.detectors.base import Detector
from modlens.errors import ModlensError
from modlens.rows import Variant

if TYPE_CHECKING:
    from modlens.perturb.generate import VariantGenerator

ImportanceMethod = Literal["leave_one_out", "pooled"]


class RemoteTargetRefused(ModlensError):
    """Word importance would send texts to a remote detector the study did not name as its target."""


def importance_method(p: PerturbationConfig, detector: Detector | None) -> ImportanceMethod:
    """The study's `importance_method` where the target can do it: "pooled" needs a local detector
    with `word_importance_pooled`; any other target falls back to leave-one-out (and records it)."""
    if (p.importance_method == "pooled" and detector is not None and not detector.remote
            and hasattr(detector, "word_importance_pooled")):
        return "pooled"
    return "leave_one_out"


def variant_target(p: PerturbationConfig, detectors: Mapping[str, Detector]) -> str | None:
    """The detector key that guides the edits: the study's `perturbation.target` when it is loaded,
    else the first local detector; None when there is none (every detector is remote)."""
    if p.target and p.target in detectors:
        return p.target
    return next((k for k, d in detectors.items() if not d.remote), None)


def check_target(p: PerturbationConfig, key: str, detector: Detector) -> None:
    """Refuses a remote target the study did not name (`RemoteTargetRefused`)."""
    if detector.remote and p.target != key:
        raise RemoteTargetRefused(
            f"variants: the detector {key!r} is remote, and the study does not name it as perturbation.target "
            "(word importance would send it one text per word of every comment)",
            "add a local detector, or set perturbation.target = " + repr(key) + " to accept sending those texts")


@dataclass
class VariantSetup:
    """A built generator, the detector key that guides it and how its word importance is computed."""
    generator: VariantGenerator
    target: str | None  # None: no detector is loaded, words are ranked by `heuristic_ranking`
    importance_method: ImportanceMethod

    def generate(self, text: str, importance: list[float] | None) -> list[Variant]:
        """The generator's variants of `text`, each naming the detector that guided it."""
        # the default passes no method: generators replaced in tests and plugins keep their signature
        variants = (self.generator.generate(text, importance=importance) if self.importance_method == "leave_one_out"
                    else self.generator.generate(text, importance=importance, importance_method=self.importance_method))
        for v in variants:
            v.target_detector = v.target_detector or guided_by(v, self.target)
        return variants


def guided_by(variant: Variant, target: str | None) -> str | None:
    """The detector whose word importance chose the variant's edit: `target`, unless the words were
    ranked by the heuristic (it had no score for the word removals), which no detector guided."""
    return None if variant.params.get("ranking") == "heuristic" else target


def build_variant_setup(p: PerturbationConfig, detectors: Mapping[str, Detector],
                  target: str | None = None) -> VariantSetup | None:
    """The study's variant generator and its settings; None when variants are off (disabled, or a
    budget of 0). `target`: the key already chosen (a Ray actor holds only the target detector);
    default `variant_target`. Raises `RemoteTargetRefused` for a remote target the study did not
    name, and the generator's own errors (unknown strategy keys)."""
    if not p.enabled or p.budget == 0:
        return None
    key = target or variant_target(p, detectors)
    if key is None and detectors:  # every detector is remote, none named
        key = next(iter(detectors))
    if key is not None:
        check_target(p, key, detectors[key])
    from modlens.perturb.generate import VariantGenerator

    generator = VariantGenerator(p.strategies, budget=p.budget, seed=p.seed, importance_threshold=p.importance_threshold,
                                 strategy_options=p.strategy_options)
    return VariantSetup(generator, key, importance_method(p, None if key is None else detectors[key]))
