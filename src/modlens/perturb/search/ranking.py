"""Word-importance rankings for the greedy search (Greedy-WIR, Morris et al. 2020 "Reevaluating
adversarial examples in natural language"): which source word to change first.

- `delete`: the text without the word (Li et al. 2016; TextFooler's importance);
- `unk`: the word's letters replaced by the placeholder `[UNK]` (TextAttack's "unk" WIR). The
  placeholder is the literal string "[UNK]", BERT's unknown-word token: a transformer detector
  reads it as "some word", a bag-of-words one (profanity-check) as an unknown token; either way
  the word's own meaning is gone while the sentence keeps its length and shape;
- `pwws` (Ren et al. 2019, "Generating natural language adversarial examples through
  probability weighted word saliency"): softmax of the `unk` saliencies times the best score
  change the transformations can make at the word.

Every ranking scores all its texts in one batched call. When the budget cannot pay for them
(and leave a query for a candidate), the documented length heuristic
(`importance.heuristic_ranking`) is used instead and the ranking is recorded as "heuristic".
"""
from __future__ import annotations

import math

from modlens.detectors.base import LabelScores
from modlens.perturb.importance import heuristic_ranking, word_removals
from modlens.perturb.parts import WordChange, apply_changes
from modlens.perturb.search.base import Problem

UNK = "[UNK]"
RANKINGS = ("delete", "unk", "pwws")


def _order(gain: list[float]) -> list[int]:
    return sorted(range(len(gain)), key=lambda i: (-gain[i], i))


def _gains(problem: Problem, seed_result: LabelScores, texts: list[str]) -> list[float] | None:
    """Progress toward the goal each text makes over the seed; None when the budget cannot pay."""
    if problem.oracle.remaining < len(set(texts)) + 1:
        return None
    base = problem.goal.progress(seed_result)
    results = problem.oracle.results(texts)
    out = []
    for r in results:
        p = problem.goal.progress(r)
        if p is None or base is None:
            return None
        out.append(p - base)
    return out


def unk_texts(problem: Problem) -> list[str]:
    return [apply_changes(problem.source, [WordChange(s.index, s.core(problem.source), UNK, "unk", {})]).text
            if s.core(problem.source) else problem.source
            for s in problem.slots]


def rank(problem: Problem, seed_result: LabelScores, method: str) -> list[int]:
    """Word indices, most important first; records `ranking` (and `importance`) in problem.info."""
    if method not in RANKINGS:
        raise ValueError(f"ranking must be one of {RANKINGS}, not {method!r}")
    editable = problem.editable()  # only words the attack may change cost a query
    if not editable:
        problem.info["ranking"] = method
        return []
    every = word_removals(problem.source) if method == "delete" else unk_texts(problem)
    texts = [every[i] for i in editable]
    gain = _gains(problem, seed_result, texts)
    if gain is None:
        problem.info["ranking"] = "heuristic"
        allowed = set(editable)
        return [i for i in heuristic_ranking(problem.source) if i in allowed]
    problem.info["ranking"] = method
    if method == "pwws":
        gain = _pwws(problem, seed_result, gain, editable)
    by_word: list[float | None] = [None] * len(problem.slots)
    for i, g in zip(editable, gain):
        by_word[i] = round(g, 6) if math.isfinite(g) else None
    problem.info["importance"] = by_word  # None: a word the attack may not edit (not ranked)
    return [editable[j] for j in _order(gain)]


def _pwws(problem: Problem, seed_result: LabelScores, saliency: list[float], words: list[int]) -> list[float]:
    """softmax(saliency)_i x (best progress any single change at word i makes), for the source
    words `words` (saliency[j] is word words[j]'s). Every word's candidates are scored in one
    batch; a word without a scored candidate gets -inf (last)."""
    top = max(saliency)
    weights = [math.exp(s - top) for s in saliency]
    total = sum(weights)
    origin = problem.origin
    per_word = {i: problem.extend(origin, [i]) for i in words}
    flat = [c for cands in per_word.values() for c in cands]
    scored = {s.candidate.text: s.progress for s in problem.score(flat)}
    base = problem.goal.progress(seed_result) or 0.0
    out = []
    for j, i in enumerate(words):
        deltas = [p - base for c in per_word[i] if (p := scored.get(c.text)) is not None]
        out.append(weights[j] / total * max(deltas) if deltas else -math.inf)
    return out
