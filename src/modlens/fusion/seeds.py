"""Seed sentences: templates filled with keyword pairs ("women are pigs"), and the paper's oracle
rule (DUO section 3.4): a seed is kept only when the study's text detectors find it toxic, since
a fused case is an error only if its seed is toxic. The rule is "any" (at least one detector says
toxic, the default) or "all" (every detector that answered does); the detectors that said so are
recorded with each kept seed."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from modlens.detectors.base import Detector
from modlens.errors import ErrorKind, ModlensError
from modlens.fusion.keywords import KeywordPair
from modlens.fusion.templates import Template

ORACLE_RULES = ("any", "all")


class OracleError(ModlensError, RuntimeError):
    """The oracle cannot judge the seeds (no text detector, or one failed); `fix` says what to do."""

    kind = ErrorKind.FAILED


@dataclass(frozen=True)
class Seed:
    content_type: str
    template: str          # template name
    a: str
    middle: str
    b: str
    text: str              # the filled template: "women are pigs"
    left: str              # up to B: "women are" (what a caption carries when B moves)
    right: str             # from the middle on: "are pigs" (what goes with B)
    pattern: str = "{a} {middle} {b}"  # the template's pattern, to refill with a keyword swapped
    source: dict[str, Any] = field(default_factory=dict, compare=False)   # how the pair was chosen
    oracle: dict[str, Any] = field(default_factory=dict, compare=False)   # which detectors found it toxic

    def refill(self, a: str, b: str) -> str:
        """The seed sentence with A and/or B swapped ("women are 🐷")."""
        return self.pattern.format(a=a, middle=self.middle, b=b)


def seed_rng(run_seed: int, *parts: str) -> random.Random:
    """A generator for one item, seeded by the run's seed and the item's identity (a string seed
    is hashed the same way on every machine), so an item's draws do not depend on the others."""
    return random.Random("|".join([str(run_seed), *parts]))


def make_seeds(pairs: Iterable[KeywordPair], templates: Mapping[str, Template], run_seed: int) -> list[Seed]:
    """Every pair filled into every template of its content type (one seed per distinct text)."""
    seeds: dict[str, Seed] = {}
    for pair in pairs:
        for t in templates.values():
            if t.content_type != pair.content_type:
                continue
            middle = t.choose_middle(pair.a, seed_rng(run_seed, "middle", t.name, pair.a, pair.b))
            text = t.fill(pair.a, middle, pair.b)
            seeds.setdefault(text, Seed(pair.content_type, t.name, pair.a, middle, pair.b, text,
                                        t.left(pair.a, middle), t.right(middle, pair.b), t.pattern, dict(pair.source)))
    return list(seeds.values())


@dataclass
class OracleResult:
    kept: list[Seed]
    dropped: list[Seed]
    rule: str
    detectors: list[str]   # name@version of the judges

    def summary(self) -> dict[str, Any]:
        by_type: dict[str, dict[str, int]] = {}
        for label, seeds in (("kept", self.kept), ("dropped", self.dropped)):
            for s in seeds:
                by_type.setdefault(s.content_type, {"kept": 0, "dropped": 0})[label] += 1
        return {"rule": self.rule, "detectors": self.detectors, "kept": len(self.kept),
                "dropped": len(self.dropped), "by_content_type": by_type}

    def unanswered(self) -> dict[str, int]:
        """Per content type, the dropped seeds no judge had a score for: not found benign, unjudged."""
        out: dict[str, int] = {}
        for s in self.dropped:
            if all(v is None for v in s.oracle.get("scores", {}).values()):
                out[s.content_type] = out.get(s.content_type, 0) + 1
        return out

    def verdicts(self) -> dict[str, list[str]]:
        """seed text -> the detectors that found it toxic (kept seeds only)."""
        return {s.text: list(s.oracle.get("toxic_by", [])) for s in self.kept}


def text_detectors(detectors: Mapping[str, Detector]) -> dict[str, Detector]:
    """The detectors that read text (an image classifier cannot judge a sentence)."""
    return {k: d for k, d in detectors.items() if "text" in d.modalities}


def apply_oracle(seeds: list[Seed], detectors: Mapping[str, Detector], rule: str = "any") -> OracleResult:
    """Keep the seeds the text detectors find toxic (score >= the detector's threshold) under
    `rule`; each seed's `oracle` records every judge's toxicity and which said toxic."""
    if rule not in ORACLE_RULES:
        raise ValueError(f"oracle rule must be one of {', '.join(ORACLE_RULES)}, not {rule!r}")
    judges = text_detectors(detectors)
    if not judges:
        raise OracleError("the oracle needs a text detector, and none of the loaded detectors reads text",
                          "pass --detectors with a text detector (e.g. profanity-check), or --no-oracle")
    texts = [s.text for s in seeds]
    tox: dict[str, list[float | None]] = {}
    for key, det in judges.items():
        try:
            tox[key] = _toxicities(det, texts)
        except Exception as err:  # a failing judge cannot vouch for any seed: say which and why
            raise OracleError(f"oracle detector {key} failed: {type(err).__name__}: {err}",
                              "check it with `modlens score --detector KEY TEXT`, or pass --no-oracle") from err
    kept: list[Seed] = []
    dropped: list[Seed] = []
    for i, seed in enumerate(seeds):
        scores = {k: tox[k][i] for k in judges}
        toxic_by = [k for k, v in scores.items() if v is not None and v >= judges[k].threshold]
        answered = [k for k, v in scores.items() if v is not None]
        ok = bool(toxic_by) if rule == "any" else bool(answered) and len(toxic_by) == len(answered)
        record = {"rule": rule, "toxic_by": toxic_by,
                  "scores": {k: None if v is None else round(v, 6) for k, v in scores.items()}}
        (kept if ok else dropped).append(replace(seed, oracle=record))
    return OracleResult(kept, dropped, rule, [f"{d.name}@{d.version}" for d in judges.values()])


def _toxicities(det: Detector, texts: list[str]) -> list[float | None]:
    out: list[float | None] = []
    size = max(1, det.max_batch)
    for start in range(0, len(texts), size):
        labels = det.score(texts[start:start + size])
        out += [det.toxicity(x) for x in labels]
    return out


def no_oracle(seeds: list[Seed]) -> OracleResult:
    """--no-oracle: every seed kept, and recorded as unchecked."""
    return OracleResult([replace(s, oracle={"rule": "off"}) for s in seeds], [], "off", [])
