"""Perspective's attribute names and which local detector answers each (study.toml `[perspective]`).

Defaults: TOXICITY -> the embedded `minilm-toxicity`, PROFANITY -> profanity-check, and these two when
their detector is not loaded and the other four production attributes -> the embedded six-label
`minilm-toxicity-6` when the study loads it (`serve --perspective-only` without a study adds it:
`with_every_production_attribute`); any other
attribute (or those two, when their detector is not in the study) -> the first study detector with a label of that name (Detoxify-style multi-label Hugging
Face models name theirs `severe_toxicity`, `insult`, `threat`, ...), else it is not available here
and a request for it is refused in Perspective's error shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from modlens.config import DetectorConfig, PerspectiveConfig, StudyConfig
from modlens.detectors.base import Detector

PRODUCTION = ("TOXICITY", "SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT")
EXPERIMENTAL = ("TOXICITY_EXPERIMENTAL", "SEVERE_TOXICITY_EXPERIMENTAL", "IDENTITY_ATTACK_EXPERIMENTAL",
                "INSULT_EXPERIMENTAL", "PROFANITY_EXPERIMENTAL", "THREAT_EXPERIMENTAL", "SEXUALLY_EXPLICIT",
                "FLIRTATION", "ATTACK_ON_AUTHOR", "ATTACK_ON_COMMENTER", "INCOHERENT", "INFLAMMATORY",
                "LIKELY_TO_REJECT", "OBSCENE", "SPAM", "UNSUBSTANTIAL")
KNOWN = PRODUCTION + EXPERIMENTAL

# attribute -> the detectors that answer it by default, the first one the study loads wins. TOXICITY and
# PROFANITY keep their earlier defaults first: the six-label head did not beat them on the shipped
# benchmarks (docs/DETECTORS.md, minilm-toxicity-6), so it answers them only when those are not loaded
SIX_LABELS = "minilm-toxicity-6"
DEFAULT_DETECTORS: dict[str, tuple[str, ...]] = {
    **{a: (SIX_LABELS,) for a in PRODUCTION},
    "TOXICITY": ("minilm-toxicity", SIX_LABELS), "PROFANITY": ("profanity-check", SIX_LABELS)}


def with_every_production_attribute(study: StudyConfig) -> StudyConfig:
    """`study` plus the six-label embedded detector when it lacks one, so that every production
    attribute is answered offline: what `modlens serve --perspective-only` runs without --config. (A
    live study keeps its own detectors: a second MiniLM pass per comment would halve its throughput.)"""
    if any(d.name == SIX_LABELS for d in study.detectors):
        return study
    return study.model_copy(update={"detectors": [*study.detectors, DetectorConfig(name=SIX_LABELS)]})


# label names multi-label toxicity models use for an attribute (Detoxify original and unbiased)
LABEL_ALIASES = {"TOXICITY": ("toxicity", "toxic"), "SEVERE_TOXICITY": ("severe_toxicity", "severe_toxic"),
                 "IDENTITY_ATTACK": ("identity_attack", "identity_hate"),
                 "SEXUALLY_EXPLICIT": ("sexual_explicit", "sexually_explicit")}


@dataclass(frozen=True)
class AttributeSource:
    """One attribute's source: the detector key, the label read from its answer, its languages."""
    attribute: str
    detector: str
    label: str
    languages: tuple[str, ...]


def _labels(attribute: str) -> tuple[str, ...]:
    """The label names that answer `attribute`. An `_EXPERIMENTAL` name is Perspective's experimental
    model, not its production one: only a label of that very name answers it (or a study.toml
    mapping), never the production label's score again under another name."""
    return (*LABEL_ALIASES.get(attribute, ()), attribute.lower())


def resolve(config: PerspectiveConfig, detectors: Mapping[str, Detector]) -> dict[str, AttributeSource]:
    """attribute -> its source, for every attribute a loaded detector can answer. A configured
    detector that did not load leaves its attribute out (refused at request time)."""
    out: dict[str, AttributeSource] = {}
    wrong_label = mislabelled(config, detectors)
    for attribute in (*KNOWN, *config.attributes):
        chosen = config.attributes.get(attribute)
        if chosen is not None:
            det = detectors.get(chosen.detector)
            if det is not None and attribute not in wrong_label:
                out[attribute] = AttributeSource(attribute, chosen.detector, chosen.label or det.toxicity_label,
                                          tuple(chosen.languages))
            continue
        default = next((d for d in DEFAULT_DETECTORS.get(attribute, ()) if d in detectors), None)
        if default is not None:
            own = next((lb for lb in _labels(attribute) if lb in tuple(detectors[default].labels)),
                       detectors[default].toxicity_label)
            out[attribute] = AttributeSource(attribute, default, own, ("en",))
            continue
        for key, det in detectors.items():
            label = next((lb for lb in _labels(attribute) if lb in tuple(det.labels)), None)
            if label is not None:
                out[attribute] = AttributeSource(attribute, key, label, ("en",))
                break
    return out


def mislabelled(config: PerspectiveConfig, detectors: Mapping[str, Detector]) -> dict[str, str]:
    """attribute -> why it is not answered, for each one study.toml maps to a loaded detector under a
    `label` the detector does not give (a typo, another model's label name). Such an attribute is
    left out of `resolve`, so it is refused or dropped like any attribute no detector answers,
    never scored with another label nor answered as a detector failure."""
    out: dict[str, str] = {}
    for attribute, chosen in config.attributes.items():
        det = detectors.get(chosen.detector)
        if det is not None and chosen.label is not None and chosen.label not in tuple(det.labels):
            out[attribute] = (f"study.toml maps it to detector {chosen.detector}'s label {chosen.label!r}, which that "
                              f"detector does not give (its labels: {', '.join(det.labels) or 'none'})")
    return out


@dataclass(frozen=True)
class LanguageSources:
    """Who answers in the languages a study maps to a detector (study.toml `[perspective.languages]`)."""
    answers: dict[str, dict[str, AttributeSource]]  # language -> attribute -> source, detector loaded
    not_loaded: dict[str, str]                       # language -> the mapped detector key that did not load


def resolve_languages(config: PerspectiveConfig, detectors: Mapping[str, Detector]) -> LanguageSources:
    """Each mapped language's detector answers every attribute it has a label for (the same label
    names as `resolve`: Detoxify-style aliases, or the attribute's own name), in that language only."""
    answers: dict[str, dict[str, AttributeSource]] = {}
    not_loaded: dict[str, str] = {}
    for lang, key in config.languages.items():
        det = detectors.get(key)
        if det is None:
            not_loaded[lang] = key
            continue
        labels = tuple(det.labels)
        answers[lang] = {attr: AttributeSource(attr, key, label, (lang,))
                         for attr in (*KNOWN, *config.attributes)
                         if (label := next((lb for lb in _labels(attr) if lb in labels), None)) is not None}
    return LanguageSources(answers, not_loaded)
