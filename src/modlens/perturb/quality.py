"""TaeBench's quality pipeline (section 3): raw attack results are filtered before they count.

Only successful attacks are filtered; each gets a verdict per filter, `{ok, value, threshold}`
(ok None = the filter could not be applied here, with `why`), in TaeBench's order:

  dedup    - an adversarial text already kept for the same recipe, target and goal is a
             duplicate (exact text), and so is one from the same seed that differs only in
             case, spacing or Unicode form (near). value: the id of the example kept first.
             Scoped per recipe x target so each target's success rate stays its own.
  label    - the AND ensemble: every other detector must still call a TAE toxic (a BAE
             benign). The attack's recorded judge verdicts when it ran with judges; else the
             other detectors' logged scores of the text (`modlens rescore` logs them); else not
             checked. A judge with no score (`agrees` null) neither keeps nor drops the label:
             not checked, unless another judge dropped it. value: share of judges that keep the
             label; threshold 1.0 (all of them).
  meaning  - cosine similarity of the seed's and the text's MiniLM sentence embeddings (the
             `sentence_similarity` constraint: both normalized first, so a disguise the
             normalizer undoes costs no meaning, a synonym swap is scored as it stands).
  fluency  - naturalness proxy: normalizer edits needed to map the text back, beyond those the
             seed itself needed (a seed already written in leet is not the attack's doing).

meaning and fluency need models: `audit --attack` and `modlens rescore` compute them once
(`audit/attack_checks.py`) and store them with the attack (`attack_json.checks`); an example
carrying them (`AttackExample.checks`) is judged by them, so a report only reads the log.

`passed` is True when no filter says False (a filter that could not run says None). The summary
counts the successes left after each filter in turn (`kept`: failed none), per filter how many it
checked, passed, failed and could not check (`per_filter`), and how many were checked by every
filter and passed them all (`passed_every_filter`): only those passed every filter
(`every_filter_passed`, what the TaeBench export and `study add-attacks` go by).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from modlens.perturb.goals import fooled

if TYPE_CHECKING:
    from modlens.detectors.base import Detector
    from modlens.rows import Variant

FILTERS = ("dedup", "label", "meaning", "fluency")
DEFAULT_MIN_SIMILARITY = 0.8     # A2T's sentence-encoder threshold (0.8 in its recipe file; TextFooler 0.84)
DEFAULT_MAX_NORMALIZER_EDITS = 3  # extra words the normalizer must repair: beyond that few would read it naturally
MODEL_FILTERS = ("meaning", "fluency")  # need a model: computed once, stored with the attack
NOT_STORED = "not computed for this attack yet: modlens rescore LOG computes it"


def recipe_of(strategy: str | None, params: dict[str, Any] | None, attack: dict[str, Any] | None = None) -> str:
    """The recipe that made an attack result: `params.recipe` / `attack.recipe` / strategy
    `recipe:NAME`; results of the character attack's first engine are named by their strategy
    (`attack-tae`, `attack-bae`)."""
    for source in (params or {}, attack or {}):
        name = source.get("recipe")
        if isinstance(name, dict):
            name = name.get("name")
        if name:
            return str(name)
    s = strategy or ""
    return s.removeprefix("recipe:") if s.startswith("recipe:") else (s or "unknown")


@dataclass
class AttackExample:
    """One attack result, from memory (`from_variant`) or from a study log (`from_study`)."""
    id: Any
    seed: str
    text: str
    goal: str                       # "tae" | "bae"
    target: str                     # the attacked detector's key
    target_name: str
    recipe: str
    status: str                     # success | failed | skipped
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)  # recorded {name: {agrees, ...}}
    other_scores: dict[str, tuple[float, float]] = field(default_factory=dict)  # logged {name: (toxicity, threshold)}
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # stored {filter: verdict} (meaning, fluency)

    @property
    def success(self) -> bool:
        return self.status == "success"

    @classmethod
    def from_variant(cls, v: Variant, id: Any = None) -> "AttackExample":
        a = v.attack or {}
        return cls(id=id, seed=v.source_text, text=v.text, goal=str(a.get("goal", "tae")).lower(),
                   target=str(v.target_detector or a.get("target") or ""),
                   target_name=str(a.get("target_name") or v.target_detector or ""),
                   recipe=recipe_of(v.strategy, v.params, a), status=str(a.get("status", "")).lower(),
                   judges=recorded_judges(a))


def recorded_judges(attack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ens = ((attack.get("constraints") or {}).get("ensemble") or {})
    judges = ens.get("judges") if isinstance(ens, dict) else None
    return dict(judges) if isinstance(judges, dict) else {}


def _loose(text: str) -> str:
    """Case, spacing and Unicode form removed: what a near duplicate shares."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _verdict(ok: bool | None, value: Any, threshold: Any, **extra: Any) -> dict[str, Any]:
    return {"ok": ok, "value": value, "threshold": threshold, **extra}


def every_filter_passed(verdict: dict[str, dict[str, Any]] | None) -> bool | None:
    """True only when every filter ran and passed; False when one failed; None when the example
    is not a success, or none failed but one could not run (never counted as passed)."""
    if verdict is None:
        return None
    oks = [f["ok"] for f in verdict.values()]
    return False if False in oks else None if None in oks else True


@dataclass
class QualityResult:
    verdicts: list[dict[str, dict[str, Any]] | None]  # per example: {filter: verdict}; None if not a success
    passed: list[bool]                                # success and no filter said False
    summary: dict[str, Any]
    config: dict[str, Any]


class QualityFilters:
    def __init__(self, *, min_similarity: float = DEFAULT_MIN_SIMILARITY,
                 max_normalizer_edits: int = DEFAULT_MAX_NORMALIZER_EDITS, similarity: Any = "auto",
                 normalizer: Any = "auto", filters: Sequence[str] = FILTERS, stored_only: bool = False):
        """`similarity`: a `SentenceSimilarity` constraint (or anything with
        `similarities(source, texts)`), "auto" to build one, None to skip the meaning check.
        `normalizer`: a Normalizer, "auto" for the default one, None to skip fluency.
        `stored_only`: load no model; meaning and fluency come from the examples' stored checks
        (what a report does: it only reads the log)."""
        unknown = [f for f in filters if f not in FILTERS]
        if unknown:
            raise ValueError(f"unknown quality filter(s) {unknown}; known: {', '.join(FILTERS)}")
        if not -1 <= min_similarity <= 1:
            raise ValueError("min_similarity must be in [-1, 1]")
        if max_normalizer_edits < 0:
            raise ValueError("max_normalizer_edits must be >= 0")
        self.filters = tuple(f for f in FILTERS if f in filters)
        self.min_similarity, self.max_normalizer_edits = float(min_similarity), int(max_normalizer_edits)
        self.stored_only = stored_only
        self._similarity: Any = None if stored_only else similarity
        self._normalizer: Any = None if stored_only else normalizer
        self.unavailable: dict[str, str] = {}

    # --- the models, loaded on first use; a missing one disables only its filter ------------
    def similarity(self) -> Any:
        if self._similarity == "auto":
            from modlens.perturb.constraints.sentence_similarity import SentenceSimilarity
            sim = SentenceSimilarity(threshold=self.min_similarity)
            why = sim.availability()
            if why:
                self.unavailable["meaning"] = why
            self._similarity = None if why else sim
        return self._similarity

    def normalizer(self) -> Any:
        if self._normalizer == "auto":
            try:
                from modlens.perturb.constraints import _shared
                self._normalizer = _shared.normalizer()
            except Exception as err:  # the lexicon failed to load: fluency cannot be judged
                self.unavailable["fluency"] = f"normalizer unavailable: {err}"
                self._normalizer = None
        return self._normalizer

    def describe(self) -> dict[str, Any]:
        norm = self._normalizer if self._normalizer not in ("auto", None) else None
        if self.stored_only:
            return {"filters": list(self.filters), "min_similarity": self.min_similarity,
                    "max_normalizer_edits": self.max_normalizer_edits,
                    "meaning_and_fluency": "stored with each attack by audit --attack / modlens rescore",
                    "unavailable": dict(self.unavailable)}
        return {"filters": list(self.filters), "min_similarity": self.min_similarity,
                "similarity": "minilm sentence_similarity (normalized)" if self._similarity is not None else None,
                "max_normalizer_edits": self.max_normalizer_edits,
                "normalizer": None if norm is None else f"{norm.name}@{norm.version}",
                "unavailable": dict(self.unavailable)}

    # --- the filters ------------------------------------------------------------------------
    def assess(self, examples: Sequence[AttackExample]) -> QualityResult:
        idx = [i for i, e in enumerate(examples) if e.success]
        verdicts: list[dict[str, dict[str, Any]] | None] = [None] * len(examples)
        for i in idx:
            verdicts[i] = {}
        succ = [examples[i] for i in idx]
        checks = {"dedup": self._dedup, "label": self._label, "meaning": self._meaning, "fluency": self._fluency}
        for name in self.filters:
            for i, v in zip(idx, checks[name](succ)):
                verdicts[i][name] = v  # type: ignore[index]
        passed = [v is not None and all(f["ok"] is not False for f in v.values()) for v in verdicts]
        return QualityResult(verdicts, passed, self._summary(verdicts, len(examples)), self.describe())

    def _summary(self, verdicts: list[dict[str, dict[str, Any]] | None], n: int) -> dict[str, Any]:
        rows = [v for v in verdicts if v is not None]
        left, after, unchecked, failed = rows, {}, {}, {}
        per_filter: dict[str, dict[str, int]] = {}
        for name in self.filters:
            left = [v for v in left if v[name]["ok"] is not False]
            after[name] = len(left)
            unchecked[name] = sum(v[name]["ok"] is None for v in rows)
            failed[name] = sum(v[name]["ok"] is False for v in rows)
            passed = sum(v[name]["ok"] is True for v in rows)
            per_filter[name] = {"checked": passed + failed[name], "passed": passed, "failed": failed[name],
                                "not_checked": unchecked[name]}
        # `kept` failed no filter; only `passed_every_filter` were checked by every one and passed it
        every = sum(all(v[name]["ok"] is True for name in self.filters) for v in rows)
        return {"attacks": n, "successes": len(rows), "after": after, "kept": len(left),
                "failed": failed, "not_checked": unchecked, "per_filter": per_filter, "passed_every_filter": every}

    def _dedup(self, examples: Sequence[AttackExample]) -> list[dict[str, Any]]:
        exact: dict[tuple[str, ...], Any] = {}
        near: dict[tuple[str, ...], Any] = {}
        out = []
        rule = "exact text, or same seed and text up to case/spacing/Unicode form, per recipe x target x goal"
        for e in examples:
            scope = (e.recipe, e.target, e.goal)
            first = exact.get((*scope, e.text))
            match = "exact"
            if first is None:
                first, match = near.get((*scope, e.seed, _loose(e.text))), "near"
            if first is None:
                exact[(*scope, e.text)] = e.id
                near[(*scope, e.seed, _loose(e.text))] = e.id
                out.append(_verdict(True, None, rule))
            else:
                out.append(_verdict(False, first, rule, match=match))
        return out

    def _label(self, examples: Sequence[AttackExample]) -> list[dict[str, Any]]:
        out = []
        for e in examples:
            if e.judges:  # agrees null: that judge had no score, so it neither keeps nor drops the label
                keeps = {n: None if j.get("agrees") is None else bool(j["agrees"]) for n, j in e.judges.items()}
                out.append(self._label_verdict(keeps, "recorded"))
            elif e.other_scores:
                keeps = {n: fooled(e.goal, s, t) is False for n, (s, t) in e.other_scores.items()}
                out.append(self._label_verdict(keeps, "logged scores"))
            else:
                out.append(_verdict(None, None, 1.0, why="no other detector judged or scored this text in the log"))
        return out

    @staticmethod
    def _label_verdict(keeps: dict[str, bool | None], source: str) -> dict[str, Any]:
        """All judges keep the label: passed; one drops it: failed; else (one had no score) not
        checked, since the AND rule cannot be confirmed."""
        share = sum(k is True for k in keeps.values()) / len(keeps)
        unscored = sorted(n for n, k in keeps.items() if k is None)
        ok = False if False in keeps.values() else None if unscored else True
        extra = {"why": f"no score from {', '.join(unscored)}"} if ok is None else {}
        return _verdict(ok, round(share, 6), 1.0, source=source, judges=dict(sorted(keeps.items())), **extra)

    def _stored(self, name: str, e: AttackExample, threshold: float) -> dict[str, Any] | None:
        """The verdict stored with the attack, re-judged at this threshold (the value is the model's)."""
        v = e.checks.get(name)
        if not isinstance(v, dict):
            return None
        if v.get("ok") is None or not isinstance(v.get("value"), (int, float)):
            return dict(v)
        ok = v["value"] >= threshold if name == "meaning" else v["value"] <= threshold
        return {**v, "ok": ok, "threshold": threshold}

    def _unavailable(self, name: str, threshold: float) -> dict[str, Any]:
        why = NOT_STORED if self.stored_only else self.unavailable.get(name, f"{name} check switched off")
        return _verdict(None, None, threshold, why=why)

    def _meaning(self, examples: Sequence[AttackExample]) -> list[dict[str, Any]]:
        out = [self._stored("meaning", e, self.min_similarity) for e in examples]
        todo = [i for i, v in enumerate(out) if v is None]
        sim = self.similarity() if todo else None
        if sim is None:
            return [v or self._unavailable("meaning", self.min_similarity) for v in out]
        by_seed: dict[str, list[int]] = {}
        for i in todo:
            by_seed.setdefault(examples[i].seed, []).append(i)
        for seed, idx in by_seed.items():  # one encoder call per seed: its texts beside it
            for i, value in zip(idx, sim.similarities(seed, [examples[i].text for i in idx])):
                out[i] = _verdict(value >= self.min_similarity, round(value, 6), self.min_similarity)
        return [v for v in out if v is not None]

    def _fluency(self, examples: Sequence[AttackExample]) -> list[dict[str, Any]]:
        out = [self._stored("fluency", e, self.max_normalizer_edits) for e in examples]
        todo = [i for i, v in enumerate(out) if v is None]
        norm = self.normalizer() if todo else None
        if norm is None:
            return [v or self._unavailable("fluency", self.max_normalizer_edits) for v in out]
        for i in todo:
            e = examples[i]
            extra = max(0, len(norm.normalize(e.text).edits) - len(norm.normalize(e.seed).edits))
            out[i] = _verdict(extra <= self.max_normalizer_edits, extra, self.max_normalizer_edits)
        return [v for v in out if v is not None]


def normalization_recovery(examples: Sequence[AttackExample], target: Detector, normalizer: Any) -> list[bool | None]:
    """For each successful example: does normalizing the adversarial text undo the attack
    (the target no longer fooled)? None for non-successes and unscored texts. One batched call."""
    idx = [i for i, e in enumerate(examples) if e.success]
    texts = [normalizer.normalize(examples[i].text).text for i in idx]
    results = target.score(texts) if texts else []
    out: list[bool | None] = [None] * len(examples)
    for i, r in zip(idx, results):
        tox = target.toxicity(r) if r is not None else None
        f = fooled(examples[i].goal, tox, target.threshold)
        out[i] = None if f is None else not f
    return out
