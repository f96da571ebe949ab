"""TaeBench-style attacks: greedy search over important words (Greedy-WIR) with character
and NoisyHate-style transformations, a query budget, and quality constraints.

Goals: "tae" pushes a toxic comment below the target detector's threshold; "bae" pushes a
benign one to or above it. The result is always a `Variant` whose `attack` dict says what
happened (docs/PERTURB.md documents every key); `status` is
  success - the target's decision flipped and every constraint holds,
  failed  - the search ended without such a text (`reason` says why),
  skipped - the seed is already on the goal side (or the target has no score for it).
Queries count every text sent to the target detector, the seed included; the judges that
check "still toxic" (TaeBench's AND ensemble) are counted apart as `judge_queries`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from modlens.detectors.base import Detector
from modlens.perturb import registry
from modlens.perturb.base import Variant, attack_each
from modlens.perturb.generate import WordSlot, perturb_word, splice, word_slots
from modlens.perturb.goals import GOALS, fooled
from modlens.perturb.importance import heuristic_ranking, word_removals
from modlens.perturb.strategies._word import WordEdit

# DeepWordBug's four character edits plus the human-like NoisyHate types; homoglyphs and
# zero-width characters are opt-in because no reader would notice them at all.
DEFAULT_ATTACK_STRATEGIES = [
    "char_swap", "char_delete", "char_insert", "key_substitute",
    "repeat_char", "abbr", "special_char", "mixed_case", "human_lookup",
]


class _Oracle:
    """The target detector behind a query budget and a cache (a text is never paid for twice)."""

    def __init__(self, detector: Detector, max_queries: int):
        self.detector, self.max_queries = detector, max_queries
        self.queries = 0
        self.cache: dict[str, float | None] = {}

    @property
    def remaining(self) -> int:
        return self.max_queries - self.queries

    def score(self, texts: Sequence[str]) -> list[float | None]:
        """Scores what the budget allows; texts beyond it come back as None."""
        new = [t for t in dict.fromkeys(texts) if t not in self.cache][: max(self.remaining, 0)]
        if new:
            results = self.detector.score(new)
            self.queries += len(new)
            for t, r in zip(new, results):
                self.cache[t] = self.detector.toxicity(r)
        return [self.cache.get(t) for t in texts]


@dataclass
class _Search:
    edits: dict[WordSlot, tuple[str, int, WordEdit]] = field(default_factory=dict)
    score: float = 0.0
    rejected: int = 0
    ensemble: dict[str, Any] | None = None


class GreedyAttack:
    def __init__(self, target: Detector, *, goal: str = "tae", strategies: Sequence[str] | None = None,
                 max_queries: int = 200, max_edit_fraction: float = 0.25, judges: Sequence[Detector] = (),
                 candidates_per_strategy: int = 2, seed: int = 0, target_key: str | None = None,
                 strategy_options: dict[str, dict[str, Any]] | None = None):
        """`judges` are the other detectors that must all still call a TAE toxic (a BAE benign).
        At most max(1, floor(max_edit_fraction * words)) words are edited."""
        if goal not in GOALS:
            raise ValueError(f"goal must be one of {GOALS}, not {goal!r}")
        if max_queries < 1:
            raise ValueError("max_queries must be >= 1")
        if not 0 < max_edit_fraction <= 1:
            raise ValueError("max_edit_fraction must be in (0, 1]")
        self.target, self.goal, self.judges = target, goal, list(judges)
        self.max_queries, self.max_edit_fraction = max_queries, max_edit_fraction
        self.candidates_per_strategy, self.seed = candidates_per_strategy, seed
        self.target_key = target_key or target.name
        options = strategy_options or {}
        self.strategies = {}
        self.unavailable: dict[str, str] = {}
        for key in dict.fromkeys(strategies or DEFAULT_ATTACK_STRATEGIES):
            s = registry.create(key, **options.get(key, {}))
            reason = s.availability()
            if reason:
                self.unavailable[key] = reason
            else:
                self.strategies[key] = s
        if not self.strategies:
            raise ValueError(f"no usable strategy: {self.unavailable}")

    # --- goal ------------------------------------------------------------------------------
    def _progress(self, score: float) -> float:
        """Larger is closer to the goal."""
        return -score if self.goal == "tae" else score

    def _reached(self, score: float) -> bool:
        return bool(fooled(self.goal, score, self.target.threshold))

    def _judge(self, text: str) -> tuple[dict[str, Any], int]:
        """TaeBench's AND ensemble: every judge must keep the seed's label."""
        verdicts = {}
        for j in self.judges:
            tox = j.toxicity(j.score([text])[0])
            keeps = fooled(self.goal, tox, j.threshold) is False
            verdicts[j.name] = {"version": j.version, "toxicity": tox, "threshold": j.threshold, "agrees": keeps}
        return {"judges": verdicts, "ok": all(v["agrees"] for v in verdicts.values())}, len(self.judges)

    # --- search ----------------------------------------------------------------------------
    def run(self, text: str) -> Variant:
        oracle = _Oracle(self.target, self.max_queries)
        slots = word_slots(text)
        max_words = max(1, math.floor(self.max_edit_fraction * len(slots)))
        info: dict[str, Any] = {"ranking": None, "judge_queries": 0}
        seed_score = oracle.score([text])[0]
        state = _Search(score=seed_score if seed_score is not None else math.nan)

        def finish(status: str, reason: str | None) -> Variant:
            return self._result(text, slots, state, oracle, status, reason, seed_score, max_words, info)

        if seed_score is None:
            return finish("skipped", "target has no score for the seed")
        if self._reached(seed_score):
            side = "below" if self.goal == "tae" else "at or above"
            return finish("skipped", f"seed already {side} the target threshold")

        order = self._word_order(text, seed_score, oracle, info)
        reason = "no candidate flipped the target"
        for i in order:
            if len(state.edits) >= max_words:
                reason = "edit limit reached"
                break
            if oracle.remaining <= 0:
                reason = "query budget exhausted"
                break
            if self._try_word(text, slots[i], state, oracle, info):
                return finish("success", None)
        else:
            if oracle.remaining <= 0:
                reason = "query budget exhausted"
        if state.rejected:  # a flip was found: the judges, not the search, are why it failed
            reason = "every flipping candidate was rejected by the judges"
        return finish("failed", reason)

    def _word_order(self, text: str, seed_score: float, oracle: _Oracle, info: dict) -> list[int]:
        """Words by how far removing them moves the target toward the goal (one batched call);
        when the budget cannot pay for the removals, the documented length heuristic."""
        removals = word_removals(text)
        if oracle.remaining >= len(removals) + 1:  # leave at least one query for a candidate
            scores = oracle.score(removals)
            if all(s is not None for s in scores):
                info["ranking"] = "importance"
                gain = [self._progress(s) - self._progress(seed_score) for s in scores]
                info["importance"] = [round(g, 6) for g in gain]
                return sorted(range(len(gain)), key=lambda i: (-gain[i], i))
        info["ranking"] = "heuristic"
        return heuristic_ranking(text)

    def _try_word(self, text: str, slot: WordSlot, state: _Search, oracle: _Oracle, info: dict) -> bool:
        seen, candidates = set(oracle.cache), []
        for key, strategy in self.strategies.items():
            for attempt in range(self.candidates_per_strategy):
                edit = perturb_word(text, strategy, key, slot, self.seed, attempt)
                if edit is None:
                    continue
                new_text, _ = splice(text, {**{s: e[2] for s, e in state.edits.items()}, slot: edit})
                if new_text not in seen:  # dedup: never pay twice for one text
                    seen.add(new_text)
                    candidates.append((new_text, key, attempt, edit))
        scores = oracle.score([c[0] for c in candidates])
        scored = sorted(((s, c) for s, c in zip(scores, candidates) if s is not None),
                        key=lambda sc: -self._progress(sc[0]))
        for score, (cand_text, key, attempt, edit) in scored:
            if not self._reached(score):
                break
            verdict, n = self._judge(cand_text)
            info["judge_queries"] += n
            if verdict["ok"]:
                state.edits[slot] = (key, attempt, edit)
                state.score, state.ensemble = score, verdict
                return True
            state.rejected += 1
            state.ensemble = verdict  # the last rejection, so the log shows why
        # No acceptable flip: keep the best edit that still moves toward the goal.
        improving = [(s, c) for s, c in scored if not self._reached(s) and self._progress(s) > self._progress(state.score)]
        if improving:
            score, (_, key, attempt, edit) = improving[0]
            state.edits[slot] = (key, attempt, edit)
            state.score = score
        return False

    def _result(self, text, slots, state: _Search, oracle: _Oracle, status, reason, seed_score, max_words, info) -> Variant:
        new_text, positions = splice(text, {s: e[2] for s, e in state.edits.items()})
        edits = [{"word_index": s.index, "word": s.core(text), "strategy": k, "attempt": a, "edit": e.params}
                 for s, (k, a, e) in sorted(state.edits.items(), key=lambda kv: kv[0].index)]
        n_words = len(slots)
        constraints = {
            "max_edit_fraction": {"limit": self.max_edit_fraction, "max_words": max_words,
                                  "words_edited": len(edits), "ok": len(edits) <= max_words},
            "ensemble": state.ensemble if self.judges else {"judges": {}, "ok": True},
            "unique": {"ok": True},
        }
        t = self.target
        attack = {
            "goal": self.goal, "status": status, "reason": reason, "search": "greedy-wir",
            "queries": oracle.queries, "max_queries": self.max_queries, "judge_queries": info["judge_queries"],
            "target": self.target_key, "target_name": t.name, "target_version": t.version, "threshold": t.threshold,
            "source_score": seed_score, "final_score": None if not edits else state.score,
            "ranking": info["ranking"], "n_words": n_words, "words_edited": len(edits),
            "rejected_by_ensemble": state.rejected, "constraints": constraints,
        }
        if not edits:
            attack["final_score"] = seed_score
        params = {
            "goal": self.goal, "strategies": list(self.strategies), "max_queries": self.max_queries,
            "max_edit_fraction": self.max_edit_fraction, "candidates_per_strategy": self.candidates_per_strategy,
            "judges": [j.name for j in self.judges], "edits": edits,
        }
        return Variant(text=new_text, strategy=f"attack-{self.goal}", params=params, seed=self.seed,
                       positions=positions, source_text=text, target_detector=self.target_key, attack=attack)

    def run_many(self, texts: Sequence[str]) -> list[Variant]:
        return attack_each(self.run, texts)
