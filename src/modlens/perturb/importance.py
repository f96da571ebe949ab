"""Word importance as in NoisyHate's Algorithm 1: how much the target detector's toxicity
drops when each whitespace word is removed. Computed here only: the engine scores
`importance_texts(text)` through its batchers, `word_importance` with any synchronous batched
score function, and both turn the scores into importances with `importance_from_scores`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from modlens.detectors.base import Detector

ScoreFn = Callable[[list[str]], Sequence[float | None]]

# Function words: never the word a detector's decision hinges on, so the heuristic skips them.
STOPWORDS = frozenset("""
a an the and or but if then than so as of at by for from in into on onto to with without about
over under up down out off is am are was were be been being do does did have has had having
i me my mine you your yours he him his she her hers it its we us our they them their this that
these those there here what which who whom whose when where why how all any some no not nor
very just too also can could will would shall should may might must let lets im youre dont
""".split())


def word_removals(text: str) -> list[str]:
    """The text with each whitespace word removed in turn (words re-joined by single spaces)."""
    words = text.split()
    return [" ".join(words[:i] + words[i + 1:]) for i in range(len(words))]


def importance_texts(text: str) -> list[str]:
    """What to score for word importance, in one batch: the text, then each word's removal."""
    return [text, *word_removals(text)]


def importance_from_scores(scores: Sequence[float | None]) -> list[float] | None:
    """importance[i] = score(text) - score(text without word i), from the scores of
    `importance_texts(text)`; None when the scorer had no answer for one of them."""
    known = [s for s in scores if s is not None]
    if len(known) != len(scores):
        return None
    base = float(known[0])
    return [base - float(s) for s in known[1:]]


def word_importance(text: str, score_fn: ScoreFn) -> list[float] | None:
    """Word importance from ONE call to a synchronous batched `score_fn`."""
    texts = importance_texts(text)
    scores = list(score_fn(texts))
    if len(scores) != len(texts):
        raise ValueError(f"score function returned {len(scores)} scores for {len(texts)} texts")
    return importance_from_scores(scores)


def detector_score_fn(detector: Detector) -> ScoreFn:
    """Adapts a `Detector` (batched `score` + `toxicity`) to a score function."""
    return lambda texts: [detector.toxicity(s) for s in detector.score(list(texts))]


def rank_by_importance(importance: Sequence[float], threshold: float) -> list[int]:
    """Indices of words whose removal lowers the score by more than `threshold`, most important
    first (ties: earlier word first)."""
    return sorted((i for i, v in enumerate(importance) if v > threshold), key=lambda i: (-importance[i], i))


def _core(word: str) -> str:
    return "".join(c for c in word if c.isalpha())


def heuristic_ranking(text: str) -> list[int]:
    """Fallback when no detector can score removals: content words (three or more letters, not
    a function word), longest first, then by position. Long content words carry most of a
    comment's meaning and are the ones people disguise ("idiot", "pathetic")."""
    words = text.split()
    content = [i for i, w in enumerate(words) if len(_core(w)) >= 3 and _core(w).lower() not in STOPWORDS]
    return sorted(content, key=lambda i: (-len(_core(words[i])), i))
