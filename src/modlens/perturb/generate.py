"""Variant generation for the daemon and audits: perturb the words the target detector relies
on (Algorithm 1 of NoisyHate) with each configured strategy, reproducibly.

Every variant is reproducible from (source text, strategy, seed, params["word_index"],
params["attempt"]): the strategy's RNG is `random.Random(f"{seed}/{strategy}/{word_index}/{attempt}")`.
"""
from __future__ import annotations

import json
import logging
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

from modlens.perturb import registry
from modlens.rows import Variant
from modlens.perturb.importance import heuristic_ranking, rank_by_importance
from modlens.perturb.strategies._word import Strategy, WordEdit

log = logging.getLogger(__name__)

_WORD = re.compile(r"\S+")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)  # leading punctuation, word, trailing punctuation


@dataclass(frozen=True)
class WordSlot:
    index: int        # position among the whitespace words (matches importance[i])
    start: int        # the whitespace token in the text
    end: int
    core_start: int   # the word without surrounding punctuation ("idiot" in "(idiot!)")
    core_end: int

    def core(self, text: str) -> str:
        return text[self.core_start:self.core_end]


def word_slots(text: str) -> list[WordSlot]:
    slots = []
    for i, m in enumerate(_WORD.finditer(text)):
        parts = _CORE.match(m.group())
        assert parts is not None  # every part of the pattern may be empty: it matches any token
        lead, core, _ = parts.groups()
        cs = m.start() + len(lead)
        slots.append(WordSlot(i, m.start(), m.end(), cs, cs + len(core)))
    return slots


def rng_for(seed: int, strategy: str, word_index: int, attempt: int) -> random.Random:
    return random.Random(f"{seed}/{strategy}/{word_index}/{attempt}")


def splice(text: str, edits: dict[WordSlot, WordEdit]) -> tuple[str, list[tuple[int, int]]]:
    """Apply word edits (at most one per word) to the text; returns the new text and the
    edited spans in the *source* text."""
    out, positions, cursor = [], [], 0
    for slot in sorted(edits, key=lambda s: s.core_start):
        edit = edits[slot]
        out += [text[cursor:slot.core_start], edit.text]
        cursor = slot.core_end
        positions += [(slot.core_start + s, slot.core_start + e) for s, e in edit.spans]
    out.append(text[cursor:])
    return "".join(out), positions


def recorded_options(options: dict[str, Any]) -> dict[str, Any]:
    """A strategy's options as a variant records them: JSON values as given (6 stays 6, a list a list),
    so `reproduce` builds the strategy again from the row; anything else (a Path) as its str."""
    def plain(v: Any) -> Any:
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            return str(v)
        return v
    return {k: plain(v) for k, v in options.items()}


def perturb_word(text: str, strategy: Strategy, key: str, slot: WordSlot, seed: int, attempt: int = 0) -> WordEdit | None:
    word = slot.core(text)
    if sum(c.isalpha() for c in word) < 2:
        return None
    edit = strategy.perturb(word, rng_for(seed, key, slot.index, attempt))
    return None if edit is None or edit.text == word else edit


class VariantGenerator:
    def __init__(self, strategies: list[str], *, budget: int, seed: int, importance_threshold: float,
                 strategy_options: dict[str, dict[str, Any]] | None = None, max_rounds: int = 4):
        """`strategies` are registry keys (unknown keys raise KeyError). A strategy that cannot
        run here (e.g. human_lookup without its table) is left out and listed in `unavailable`
        with the reason. `budget` is the number of variants per text."""
        if budget < 0:
            raise ValueError("budget must be >= 0")
        self.budget, self.seed, self.threshold, self.max_rounds = budget, seed, importance_threshold, max_rounds
        self.options = strategy_options or {}
        self.strategies: dict[str, Strategy] = {}
        self.unavailable: dict[str, str] = {}
        for key in dict.fromkeys(strategies):
            strategy = registry.create(key, **self.options.get(key, {}))
            reason = strategy.availability()
            if reason:
                self.unavailable[key] = reason
                log.warning("perturbation strategy unavailable: %s", reason)
            else:
                self.strategies[key] = strategy

    def ranked_words(self, text: str, importance: Sequence[float] | None) -> tuple[list[int], str]:
        if importance is None:
            return heuristic_ranking(text), "heuristic"
        n = len(text.split())
        if len(importance) != n:
            raise ValueError(f"importance has {len(importance)} values but the text has {n} whitespace words")
        return rank_by_importance(importance, self.threshold), "importance"

    def generate(self, text: str, importance: list[float] | None = None,
                 importance_method: str = "leave_one_out") -> list[Variant]:
        """Up to `budget` distinct variants. Words are tried most important first: with
        `importance`, only words whose removal drops toxicity by more than the threshold (none
        qualify -> no variants, as in Algorithm 1); without it, `heuristic_ranking`. Strategies
        take turns in an order shuffled per text, so rare types are not crowded out when the
        budget is smaller than the number of strategies; each turn perturbs the most important
        word the strategy applies to; later rounds draw again (attempt 1, 2, ...).
        `importance_method` (how `importance` was computed) goes into each variant's params."""
        return self.generate_explained(text, importance, importance_method)[0]

    def generate_explained(self, text: str, importance: list[float] | None = None,
                           importance_method: str = "leave_one_out") -> tuple[list[Variant], dict[str, str]]:
        """`generate`, plus why no variant came out, from what the generator saw:
        {"text": why} when nothing could be made at all, else {strategy key: why} for each
        strategy that made none (it applies to no candidate word, its edits only repeated other
        variants, or the budget was used up before its turn), and {"budget": why} when fewer
        than `budget` variants came out."""
        if self.budget == 0:
            return [], {"text": "the budget is 0 variants per text"}
        if not self.strategies:
            why = "; ".join(f"{k}: {r}" for k, r in self.unavailable.items()) or "none configured"
            return [], {"text": f"no strategy can run here ({why})"}
        slots = word_slots(text)
        ranked, ranking = self.ranked_words(text, importance)
        if not ranked:
            return [], {"text": self._no_candidate_words(text, importance)}
        order = list(self.strategies)
        random.Random(f"{self.seed}|{text}").shuffle(order)
        variants: list[Variant] = []
        seen = {text}
        tried: set[str] = set()    # strategies whose turn came
        applied: set[str] = set()  # strategies that could edit some candidate word
        made: dict[str, int] = dict.fromkeys(order, 0)
        for attempt in range(self.max_rounds):
            added = False
            for key in order:
                if len(variants) >= self.budget:
                    return variants, self._why_none(order, made, tried, applied, ranked, slots, text)
                tried.add(key)
                for i in ranked:
                    v = self._variant(text, key, slots[i], attempt, importance, ranking, importance_method)
                    if v is None:
                        continue
                    applied.add(key)
                    if v.text not in seen:
                        seen.add(v.text)
                        variants.append(v)
                        made[key] += 1
                        added = True
                        break
            if not added:
                break
        reasons = self._why_none(order, made, tried, applied, ranked, slots, text)
        if variants:  # fewer than the budget: the draws ran out
            reasons["budget"] = (f"{len(variants)} of {self.budget} variants: " +
                                 (f"each strategy draws at most {self.max_rounds} times per text" if added else
                                  f"no strategy made a new text in round {attempt + 1}"))
        return variants, reasons

    def _no_candidate_words(self, text: str, importance: Sequence[float] | None) -> str:
        words = text.split()
        if not words:
            return "the text has no words"
        if importance is None:
            return "no content word to perturb (every word is shorter than 3 letters or a function word)"
        top = max(range(len(words)), key=lambda i: importance[i])
        return (f"no word's removal dropped the score by more than the {self.threshold:g} threshold "
                f"(the largest drop: {importance[top]:.2g}, removing {words[top]!r})")

    def _why_none(self, order: list[str], made: dict[str, int], tried: set[str], applied: set[str],
                  ranked: list[int], slots: list[WordSlot], text: str) -> dict[str, str]:
        words = ", ".join(repr(slots[i].core(text)) for i in ranked[:5]) + (", ..." if len(ranked) > 5 else "")
        reasons = {}
        for key in order:
            if made[key]:
                continue
            if key not in tried:
                reasons[key] = f"the budget of {self.budget} variants was used up before its turn"
            elif key not in applied:
                reasons[key] = f"does not apply to any candidate word ({words})"
            else:
                reasons[key] = "its edits only repeated texts already made"
        return reasons

    def _variant(self, text: str, key: str, slot: WordSlot, attempt: int, importance: Sequence[float] | None,
                 ranking: str, importance_method: str) -> Variant | None:
        edit = perturb_word(text, self.strategies[key], key, slot, self.seed, attempt)
        if edit is None:
            return None
        new_text, positions = splice(text, {slot: edit})
        params: dict[str, Any] = {
            "word_index": slot.index, "word": slot.core(text), "attempt": attempt, "ranking": ranking,
            "importance": None if importance is None else round(float(importance[slot.index]), 6),
            "threshold": self.threshold if importance is not None else None,
            "edit": edit.params,
        }
        if importance is not None and importance_method != "leave_one_out":  # earlier params stay as they were
            params["importance_method"] = importance_method
        if self.options.get(key):
            params["options"] = recorded_options(self.options[key])
        return Variant(text=new_text, strategy=key, params=params, seed=self.seed,
                       positions=positions, source_text=text)


def reproduce(variant: Variant, strategy_options: dict[str, Any] | None = None) -> Variant | None:
    """Re-run the strategy that made a generator variant; equal text means it reproduced.
    `strategy_options`: the strategy's options, default the ones the variant recorded."""
    p = variant.params
    options = (p.get("options") or {}) if strategy_options is None else strategy_options
    strategy = registry.create(variant.strategy, **options)
    slot = word_slots(variant.source_text)[p["word_index"]]
    edit = perturb_word(variant.source_text, strategy, variant.strategy, slot, variant.seed, p["attempt"])
    if edit is None:
        return None
    new_text, positions = splice(variant.source_text, {slot: edit})
    return Variant(new_text, variant.strategy, dict(p, edit=edit.params), variant.seed, positions, variant.source_text)
