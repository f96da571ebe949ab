"""A synthetic study log with known ground truth, to check that the report recovers it.

Per platform, comments get a detector score spread evenly over [0, 1] (the paper's decile
sampling). Each comment's true toxicity follows an ordered logit in the score whose P(toxic)
crosses 0.5 exactly at the platform's planted threshold:
    latent = slope * (score - threshold_p) + cut + logistic noise;
    not toxic if latent < 0, toxic if latent >= cut, else hard to say
so P(toxic) = logistic(slope * (score - threshold_p)). The other three attributes follow the
score with noise. Each comment is rated by `raters_per_comment` raters; a rater reports the
true level, or with probability `noise` (their own, known) an adjacent level, and gives an
inconsistent anchor pair with probability `inconsistency`. One careless rater fails the gold
comments and is often inconsistent, so the Table 11 rubric excludes their tasks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import numpy as np

from modlens.config import DEFAULT_ATTRIBUTES, GoldConfig, StudyConfig
from modlens.studylog.store import StudyLog

TOX = ["not toxic", "hard to say", "toxic"]


@dataclass
class SyntheticSpec:
    thresholds: dict[str, float] = field(default_factory=lambda: {"news": 0.45, "youtube": 0.55, "twitter": 0.65})
    comments_per_platform: int = 150
    slope: float = 14.0
    cut: float = 2.0                 # width of the "hard to say" band on the latent scale
    n_raters: int = 20
    raters_per_comment: int = 5
    noise: tuple[float, float] = (0.05, 0.25)  # per-rater probability of an adjacent level
    inconsistency: float = 0.05
    careless_raters: int = 1
    seed: int = 0
    detector: str = "synthetic-detector"


class Planted(TypedDict):
    """The ground truth `generate` planted."""
    thresholds: dict[str, float]    # platform -> threshold
    rater_noise: dict[str, float]   # rater -> probability of an adjacent level
    careless: list[str]             # raters who fail the gold comments
    detector: str


def _adjacent(level: int, n_levels: int, rng: np.random.Generator) -> int:
    options = [x for x in (level - 1, level + 1) if 0 <= x < n_levels]
    return int(rng.choice(options))


def generate(path: str | Path, spec: SyntheticSpec | None = None) -> Planted:
    """Write the log at `path`; returns the planted truth (thresholds, rater noise)."""
    spec = spec or SyntheticSpec()
    rng = np.random.default_rng(spec.seed)
    gold = [GoldConfig(key=f"gold-{i}", text=t, expected={"toxicity": e}) for i, (t, e) in enumerate([
        ("Thank you so much, this was really helpful.", "not toxic"),
        ("You are a disgusting worthless idiot.", "toxic"),
        ("Have a wonderful day, everyone!", "not toxic")])]
    study = StudyConfig(study_id="synthetic", title="synthetic study (known ground truth)", gold=gold)
    levels = {a.name: a.levels for a in DEFAULT_ATTRIBUTES}
    noise = rng.uniform(*spec.noise, size=spec.n_raters)
    careless = set(range(spec.n_raters - spec.careless_raters, spec.n_raters))
    raters = [f"rater-{i:02d}" for i in range(spec.n_raters)]
    with StudyLog(path) as log, log.transaction():
        log.ensure_study(study.study_id, study.title, study.model_dump())
        det = log.ensure_detector(spec.detector, f"planted-seed{spec.seed}", "toxicity", 0.5,
                                  {"thresholds": spec.thresholds, "slope": spec.slope})
        for rater in raters:
            log.ensure_rater(study.study_id, rater, "2024-01-01T00:00:00Z")
        gold_ids = [log.add_comment("gold", g.key, None, g.text) for g in gold]
        for g in gold:
            log.add_score(g.text, det, {"toxicity": 0.5}, 0.5, 0.0, None)
        n_rating = 0
        for platform, threshold in spec.thresholds.items():
            page = log.ensure_page(platform, f"{platform}-page", None, None)
            n = spec.comments_per_platform
            scores = (np.arange(n) + rng.random(n)) / n  # evenly over the deciles
            for i, s in enumerate(scores):
                text = f"[{platform} #{i}] synthetic comment"
                cid = log.add_comment(platform, f"c{i}", page, text)
                log.add_score(text, det, {"toxicity": float(s)}, float(s), 0.0, None)
                latent = spec.slope * (s - threshold) + spec.cut + rng.logistic()
                truth = {"toxicity": 0 if latent < 0 else 2 if latent >= spec.cut else 1,
                         "respectfulness": int(np.clip(np.floor(4 * s + rng.normal(0, 0.5)), 0, 3)),
                         "formality": int(np.clip(np.floor(1 + 2.5 * s + rng.normal(0, 0.8)), 0, 3)),
                         "stereotypes": int(np.clip(np.floor(3 * s - 0.8 + rng.normal(0, 0.7)), 0, 3))}
                for r in rng.choice(spec.n_raters, spec.raters_per_comment, replace=False):
                    values = {}
                    for attr, true in truth.items():
                        k = len(levels[attr])
                        level = _adjacent(true, k, rng) if rng.random() < noise[r] else true
                        values[attr] = levels[attr][level]
                    inconsistent = rng.random() < (0.35 if r in careless else spec.inconsistency)
                    derived = None if inconsistent else values["toxicity"]
                    n_rating += 1
                    log.add_rating(study.study_id, raters[r], f"r{n_rating}", None, cid, values,
                                   {"vs_hard": "less", "vs_extreme": "more"} if inconsistent else None,
                                   derived, inconsistent, 20_000)
        # every rater answers the gold comments; the careless ones get them wrong
        for r, rater in enumerate(raters):
            for g, cid in zip(gold, gold_ids):
                right = g.expected["toxicity"]
                answer = ("toxic" if right == "not toxic" else "not toxic") if r in careless else right
                n_rating += 1
                log.add_rating(study.study_id, rater, f"r{n_rating}", None, cid,
                               {"toxicity": answer, "formality": "formal", "respectfulness": "respectful",
                                "stereotypes": "not present"}, None, answer, False, 10_000)
    return {"thresholds": dict(spec.thresholds), "rater_noise": dict(zip(raters, noise.round(3).tolist())),
            "careless": [raters[i] for i in careless], "detector": spec.detector}
