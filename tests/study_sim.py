"""A simulated multi-participant study with planted ground truth (tests/test_study_simulation.py).

The planted model, in the detector's score units (profanity-check, the study's only detector):

    latent_c   = score_c - threshold[platform_c] + logistic(0, 1 / slope)     shared by every rater
    perceived  = latent_c + normal(0, sigma_r)                                 rater r, of known noise
    toxicity   = "toxic" if perceived >= 0, "not toxic" if perceived < -band, else "hard to say"

so a rater calls a comment toxic with probability 1/2 exactly where its score equals the
platform's threshold, and the majority of the 8 raters follows P(toxic) = logistic(slope *
(score - threshold)): the ordered logit the report fits (`analysis/people.py`), whose
`crossing_top` estimates the threshold. Respectfulness follows `perceived` with fixed cuts.

Comments are HateCheck test cases shipped with modlens (`modlens.paths.shipped_data()`),
chosen so that their profanity-check scores spread evenly over the ten score deciles on every
platform (the paper's decile sampling), as analysis/synthetic.py spreads its scores.

`rate_participant` is the rating client: one WebSocket session over the real protocol
(`modlens.protocol.client`: `session`, `send_page`, `rate`), hello with a
consent time, each task page sent as the extension sends it, then one `rating` per comment
(toxicity by the two anchor comparisons of Table 1, as in the study's `anchors` mode) and the
study's gold comments answered correctly.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modlens.paths import shipped_data
from modlens.protocol import Comments, Rating, consent_text_sha256
from modlens.protocol.client import build, session

TOX = ["not toxic", "hard to say", "toxic"]
RESPECT = ["respectful", "partially respectful", "slightly disrespectful", "disrespectful"]
RESPECT_CUTS = (-0.25, -0.1, 0.1)          # perceived below each cut: the level before it
# anchors mode with the extreme anchor rated "toxic" (study init's calibration.toml):
# (vs "hard to say" anchor, vs extreme anchor) giving each level by Table 1
ANCHOR_ANSWERS = {"not toxic": ("less", "less"), "hard to say": ("same", "less"), "toxic": ("more", "same")}
DETECTOR = "profanity-check"


@dataclass(frozen=True)
class Page:
    platform: str
    page_key: str
    url: str
    title: str


@dataclass(frozen=True)
class SimComment:
    platform: str
    key: str
    text: str
    score: float          # profanity-check's score, as the selection computed it
    latent: float         # score - threshold + the comment's own logistic noise


@dataclass
class Plan:
    thresholds: dict[str, float]
    pages: dict[str, Page]                                        # platform -> its task page
    sigmas: list[float]                                           # one per rater
    per_decile: int = 8                                           # comments per score decile per platform
    slope: float = 12.0
    band: float = 0.15
    seed: int = 0
    comments: list[SimComment] = field(default_factory=list)

    def rater_ids(self) -> list[str]:
        return [f"sim-rater-{i}" for i in range(len(self.sigmas))]


def hatecheck_texts() -> list[str]:
    with (shipped_data() / "hatecheck" / "test_suite_cases.csv").open(encoding="utf-8", newline="") as fh:
        return list(dict.fromkeys(row["test_case"].strip() for row in csv.DictReader(fh) if row["test_case"].strip()))


def select_comments(plan: Plan) -> list[SimComment]:
    """`per_decile` comments per score decile and platform, no text on two platforms; their
    latent toxicity drawn once (seeded), so every participant sees the same truth."""
    from profanity_check import predict_prob

    texts = hatecheck_texts()
    scores = predict_prob(texts)
    platforms = sorted(plan.thresholds)
    rng = np.random.default_rng(plan.seed)
    chosen: dict[str, list[tuple[str, float]]] = {p: [] for p in platforms}
    for decile in range(10):
        lo, hi = decile / 10, (decile + 1) / 10
        pool = [i for i, s in enumerate(scores) if lo <= s < hi or (decile == 9 and s >= 1.0)]
        need = plan.per_decile * len(platforms)
        if len(pool) < need:
            raise RuntimeError(f"score decile {decile}: {len(pool)} HateCheck texts, {need} needed")
        for j, i in enumerate(rng.choice(pool, need, replace=False)):
            chosen[platforms[j % len(platforms)]].append((texts[i], float(scores[i])))
    out = []
    for p in platforms:
        for n, (text, score) in enumerate(chosen[p]):
            latent = score - plan.thresholds[p] + rng.logistic() / plan.slope
            out.append(SimComment(p, f"{p}-c{n:03d}", text, score, latent))
    return out


def levels_for(latent: float, sigma: float, band: float, rng: np.random.Generator) -> tuple[str, str]:
    """(toxicity, respectfulness) one rater of noise `sigma` gives a comment of this latent."""
    perceived = latent + sigma * rng.normal()
    tox = 2 if perceived >= 0 else 0 if perceived < -band else 1
    respect = int(np.searchsorted(RESPECT_CUTS, perceived, side="right"))
    return TOX[tox], RESPECT[respect]


def expected_alpha(plan: Plan, replicates: int = 40) -> tuple[float, float]:
    """Krippendorff's ordinal alpha of toxicity under the planted model (the `krippendorff`
    package, independent of modlens): mean and standard deviation over replicate studies with the
    same scores, fresh comment and rater noise."""
    import krippendorff

    rng = np.random.default_rng(plan.seed + 10_000)
    values = []
    for _ in range(replicates):
        data = np.empty((len(plan.sigmas), len(plan.comments)))
        for j, c in enumerate(plan.comments):
            latent = c.score - plan.thresholds[c.platform] + rng.logistic() / plan.slope
            for r, sigma in enumerate(plan.sigmas):
                data[r, j] = TOX.index(levels_for(latent, sigma, plan.band, rng)[0])
        values.append(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    return float(np.mean(values)), float(np.std(values))


@dataclass
class RaterResult:
    rater_id: str
    session_id: str
    scores: dict[tuple[str, str], float]                 # (platform, key) -> score the daemon sent
    toxicity: dict[tuple[str, str], str]                 # what this rater answered, derived by the daemon
    n_ratings: int = 0


class SimError(AssertionError):
    pass


async def shown_consent_sha256(url: str, token: str, rater_id: str, client: str) -> str:
    """What a participant who agreed sends at hello (`consent_sha256`): the digest of the consent
    text they read, hello_ok's of a first session without consent, as the extension shows it."""
    async with session(url, token, rater=rater_id, client=client) as reader:
        if reader.hello is None:
            raise SimError(f"{rater_id}: no hello_ok")
        return consent_text_sha256(reader.hello.study["consent_text"])


async def rate_participant(url: str, token: str, rater_index: int, plan: Plan, study_id: str, consent_at: str,
                           gold: list[dict[str, Any]], timeout: float = 30.0) -> RaterResult:
    """One participant's browser session, played over the real protocol."""
    rater_id, sigma = plan.rater_ids()[rater_index], plan.sigmas[rater_index]
    rng = np.random.default_rng([plan.seed, rater_index])          # the rater's noise: levels_for only
    timing = np.random.default_rng([plan.seed, rater_index, 1])    # time spent, a stream of its own
    agreed = await shown_consent_sha256(url, token, rater_id, "modlens-study-sim")
    async with session(url, token, rater=rater_id, client="modlens-study-sim", study_id=study_id,
                       consent_at=consent_at, consent_sha256=agreed) as client:
        reply = client.hello
        if reply is None:
            raise SimError(f"{rater_id}: no hello_ok")
        if reply.study.get("toxicity_mode") != "anchors":
            raise SimError(f"{rater_id}: the study asks for {reply.study.get('toxicity_mode')!r} toxicity, not anchors")
        result = RaterResult(rater_id, reply.session_id, {}, {})
        # the task pages, as the extension sends them once the participant has consented
        for platform, page in sorted(plan.pages.items()):
            items = [{"key": c.key, "text": c.text} for c in plan.comments if c.platform == platform]
            msg = build(Comments, f"page {platform}", {
                "id": client.next_id("page"), "variants": False, "items": items,
                "page": {"url": page.url, "platform": platform, "page_key": page.page_key, "title": page.title}})
            sent = await client.send_page(msg, variants=False)
            for fed in sent.items:
                det = fed.scores.detectors[DETECTOR]
                if det.toxicity is None:
                    raise SimError(f"{rater_id}: {platform}/{fed.scores.key}: {DETECTOR} failed: {det.error}")
                result.scores[platform, fed.scores.key] = det.toxicity
        # the calibration round: gold comments answered as expected
        for g in gold:
            expected = dict(g["expected"])
            tox = expected.pop("toxicity", "not toxic")
            vs_hard, vs_extreme = ANCHOR_ANSWERS[tox]
            msg = build(Rating, "gold rating", {"id": f"{rater_id}-gold-{g['key']}", "comment": {"platform": "study", "key": g["key"]},
                                                "values": expected, "anchors": {"vs_hard": vs_hard, "vs_extreme": vs_extreme},
                                                "time_spent_ms": 5_000})
            ok = await client.rate(msg, timeout)
            if ok.derived_toxicity != tox:
                raise SimError(f"{rater_id}: gold {g['key']}: daemon derived {ok.derived_toxicity!r}, meant {tox!r}")
            result.n_ratings += 1
        # every comment of every page, in page order
        for c in plan.comments:
            tox, respect = levels_for(c.latent, sigma, plan.band, rng)
            vs_hard, vs_extreme = ANCHOR_ANSWERS[tox]
            msg = build(Rating, "rating", {"id": f"{rater_id}-{c.key}", "comment": {"platform": c.platform, "key": c.key},
                                           "values": {"respectfulness": respect},
                                           "anchors": {"vs_hard": vs_hard, "vs_extreme": vs_extreme},
                                           "time_spent_ms": int(timing.integers(3_000, 30_000))})
            ok = await client.rate(msg, timeout)
            if ok.inconsistent or ok.derived_toxicity != tox or ok.duplicate:
                raise SimError(f"{rater_id}: {c.key}: rating_ok {ok!r}, meant {tox!r}")
            result.toxicity[c.platform, c.key] = tox
            result.n_ratings += 1
        return result
