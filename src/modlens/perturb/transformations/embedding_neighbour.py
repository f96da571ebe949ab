"""Embedding-neighbour swap (TextFooler, Jin et al. 2020; ToxicTrap's word swaps): replace a
word by one of its nearest neighbours in a word-vector space, stupid -> dumb / silly.

The originals search counter-fitted GloVe; here the offline vectors of
`modlens.perturb.wordvectors` (the embedded MiniLM's whole-word input embeddings), a weaker
space whose neighbours include antonyms (good -> bad), so recipes pair this swap with the
`sentence_similarity` and `pos_kept` constraints. Neighbours that share the word's Porter stem
(hate -> hated, hates) are skipped by default: they change grammar, not wording.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from modlens.errors import inline_fix
from modlens.normalize.pipeline import apply_case
from modlens.perturb import wordvectors
from modlens.perturb.generate import WordSlot
from modlens.perturb.parts import Transformation, WordChange

SEARCH_WIDTH = 50  # neighbours looked at before the stem filter, so k survive it


class EmbeddingNeighbour(Transformation):
    key = "embedding_neighbour"
    kind = "word"
    description = "replace the word by a nearest neighbour in the embedded MiniLM's word-embedding space"

    def __init__(self, min_similarity: float = 0.5, skip_inflections: bool = True, model_dir: str | None = None):
        """`min_similarity`: cosine floor (TextFooler uses 0.5 on its GloVe space; see docs
        for what it means here). `skip_inflections`: leave out neighbours with the word's stem."""
        if not -1.0 <= min_similarity <= 1.0:
            raise ValueError("min_similarity must be in [-1, 1]")
        self.min_similarity, self.skip_inflections, self.model_dir = float(min_similarity), skip_inflections, model_dir
        self._stem: Any = None

    def availability(self) -> str | None:
        reason = wordvectors.availability(self.model_dir)
        if reason is None and self.skip_inflections:
            try:
                import nltk.stem  # noqa: F401
            except ModuleNotFoundError:
                return inline_fix("skip_inflections needs nltk's Porter stemmer", "pip install nltk")
        return reason

    def data(self) -> dict[str, Any]:
        vectors = wordvectors.load(self.model_dir)
        return {"vectors": vectors.source, "vectors_version": vectors.version}

    def _same_stem(self, a: str, b: str) -> bool:
        if self._stem is None:
            from nltk.stem import PorterStemmer
            self._stem = PorterStemmer().stem
        return bool(self._stem(a) == self._stem(b))

    def neighbours(self, word: str, k: int) -> list[tuple[str, float]]:
        vectors = wordvectors.load(self.model_dir)
        found = vectors.neighbours(word, max(k, SEARCH_WIDTH), self.min_similarity)
        if self.skip_inflections:
            found = [(w, s) for w, s in found if not self._same_stem(w, word.lower())]
        return found[:max(k, 0)]

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        word = slots[index].core(text)
        if sum(c.isalpha() for c in word) < 2:
            return []
        vectors = wordvectors.load(self.model_dir)
        return [WordChange(index, word, apply_case(w, word), self.key,
                           {"neighbour": w, "similarity": round(sim, 4), "vectors": vectors.source,
                            "vectors_version": vectors.version})
                for w, sim in self.neighbours(word, k)]
