"""No change to a stop word (TextAttack's StopwordModification, used by TextFooler, PWWS, A2T):
swapping "the" or "you" moves a detector without saying anything new, and reads as broken
English. The list is modlens's function words (`perturb.importance.STOPWORDS`). Inserting a
filler after a stop word leaves the stop word itself alone, so it passes."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.perturb.importance import STOPWORDS
from modlens.perturb.parts import Candidate, Constraint


class NoStopword(Constraint):
    key = "no_stopword"
    stage = "pre"

    def __init__(self, stopwords: Sequence[str] | None = None):
        self.custom = stopwords is not None
        self.stopwords = frozenset(w.lower() for w in stopwords) if stopwords is not None else STOPWORDS

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key, "stopwords": "custom" if self.custom else "modlens.perturb.importance.STOPWORDS",
                             "n_stopwords": len(self.stopwords)}
        if self.custom:
            d["list"] = sorted(self.stopwords)
        return d

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            hit = next((c for c in cand.changes if not c.insert_after and c.word.lower() in self.stopwords), None)
            out.append(None if hit is None else f"changes stop word {hit.word!r} (word {hit.word_index})")
        return out
