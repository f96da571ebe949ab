"""One edit per word (TextAttack's RepeatModification): a search may not edit a word it has
already edited, nor insert twice after one word, so each change in a candidate is a distinct
step a reader can see, and "words changed" counts what was really touched."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from modlens.perturb.parts import Candidate, Constraint


class NoRepeat(Constraint):
    key = "no_repeat"
    stage = "pre"

    def describe(self) -> dict[str, Any]:
        return {"key": self.key}

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            counts = Counter((c.word_index, c.insert_after) for c in cand.changes)
            repeated = sorted((i, ins) for (i, ins), n in counts.items() if n > 1)
            if not repeated:
                out.append(None)
                continue
            i, ins = repeated[0]
            out.append(f"{counts[(i, ins)]} {'insertions after' if ins else 'edits of'} word {i}")
        return out
