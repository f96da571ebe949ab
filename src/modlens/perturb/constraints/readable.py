"""Still readable (TaeBench's naturalness check, with the modlens normalizer as the reader):
the normalizer must read the candidate's disguised words back.

The reference is the source with the candidate's *word-level* changes applied (a synonym swap
or a filler is plain English, not a disguise), normalized; the candidate is normalized too,
and the words of the reference missing from it (as a multiset, lower-cased, punctuation
ignored) are the disguises the normalizer could not undo. The check passes when the share of
character-edited words recovered, 1 - min(missing, edited) / edited, is at least
`min_recovered` (default 1.0: every disguise is read back). A candidate without character
edits passes. Character changes are those whose transformation key starts with "char:".

A proxy, not a person: measured with this check on 16 insults in "you are a WORD person"
(3 draws each), it passes every char_insert, repeat_char, special_char, mixed_case, homoglyph
and zero_width edit, 92-93 % of char_swap and key_substitute, 76-81 % of abbr and char_delete,
and 42 % of space_insert ("idi ot")."""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from modlens.perturb.constraints import _shared
from modlens.perturb.parts import Candidate, Constraint, apply_changes

_WORDS = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def is_char_change(transformation: str) -> bool:
    return transformation.startswith("char:")


class Readable(Constraint):
    key = "readable"
    stage = "post"

    def __init__(self, min_recovered: float = 1.0):
        if not 0 <= min_recovered <= 1:
            raise ValueError("min_recovered must be in [0, 1]")
        self.min_recovered = float(min_recovered)

    def describe(self) -> dict[str, Any]:
        norm = _shared.normalizer()
        return {"key": self.key, "min_recovered": self.min_recovered, "normalizer": norm.name,
                "normalizer_version": norm.version}

    def recovered(self, source: str, candidate: Candidate) -> tuple[float, list[str]]:
        """(share of the character-edited words the normalizer reads back, the words it lost)."""
        edited = {c.word_index for c in candidate.changes if is_char_change(c.transformation) and not c.insert_after}
        if not edited:
            return 1.0, []
        norm = _shared.normalizer()
        word_changes = [c for c in candidate.changes if not is_char_change(c.transformation)]
        reference = apply_changes(source, word_changes).text
        lost = Counter(words(norm.normalize(reference).text)) - Counter(words(norm.normalize(candidate.text).text))
        n_lost = min(sum(lost.values()), len(edited))
        return 1 - n_lost / len(edited), sorted(lost.elements())

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            share, lost = self.recovered(source, cand)
            out.append(None if share >= self.min_recovered else
                       f"normalizer reads back {share:.2f} of the disguised words < {self.min_recovered:.2f}"
                       f" (lost: {', '.join(lost[:5])})")
        return out
