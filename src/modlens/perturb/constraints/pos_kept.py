"""Part of speech kept (TextFooler, PWWS and A2T keep the swapped word's POS; TextAttack's
PartOfSpeech). No tagger ships offline, so the POS come from WordNet out of context: the
parts of speech WordNet lists for each word (any inflection). Default "overlap": the new word
must share a POS with the old one ("stupid" n/a -> "dense" a passes; -> "stupidly" r fails);
"superset": the new word must have every POS the old one has. Words WordNet does not know
(misspellings, names, slang, stop words) pass: the check has nothing to say about them.
Deletions and insertions have no replaced word and pass."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.perturb import wordnet
from modlens.perturb.parts import Candidate, Constraint

MODES = ("overlap", "superset")


class PosKept(Constraint):
    key = "pos_kept"
    stage = "pre"

    def __init__(self, mode: str = "overlap", path: str | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode, self.path = mode, path
        self._cache: dict[str, frozenset[str]] = {}

    def availability(self) -> str | None:
        return wordnet.availability(self.path)

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "mode": self.mode, "pos_source": "WordNet 3.0, out of context",
                "wordnet_sha": wordnet.digest(self.path),  # which WordNet, by content
                "unknown_words": "pass (WordNet does not know them)"}

    def pos(self, word: str) -> frozenset[str]:
        w = word.lower()
        if w not in self._cache:
            self._cache[w] = frozenset(wordnet.word_pos(wordnet.load(self.path), w))
        return self._cache[w]

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            reason = None
            for c in cand.changes:
                if c.insert_after or not c.new or " " in c.new:
                    continue  # insertions and deletions: no word was swapped for another
                old, new = self.pos(c.word), self.pos(c.new)
                if not old or not new:
                    continue
                ok = bool(old & new) if self.mode == "overlap" else old <= new
                if not ok:
                    reason = f"{c.word!r} ({'/'.join(sorted(old))}) -> {c.new!r} ({'/'.join(sorted(new))})"
                    break
            out.append(reason)
        return out
