"""WordNet synonym swap (PWWS, Ren et al. 2019; TextBugger's and ToxicTrap's word swaps):
replace a word by a lemma of one of its synsets, stupid -> dense / dim / obtuse.

Synsets are taken most frequent sense of the word first (WordNet's tagged-sense counts,
`cntlist.rev`; ties keep WordNet's order), so the first `k` synonyms are the commonest
readings ("stupid": the adjective sense before "a stupid person"). Lemmas are WordNet base forms: "idiots" yields
"imbecile", not "imbeciles" (no inflection is guessed; the `pos_kept` and
`sentence_similarity` constraints judge the result).
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from modlens.normalize.pipeline import apply_case
from modlens.perturb import wordnet
from modlens.perturb.generate import WordSlot
from modlens.perturb.parts import Transformation, WordChange


class WordNetSynonym(Transformation):
    key = "wordnet_synonym"
    kind = "word"
    description = "replace the word by a WordNet 3.0 synonym (a lemma of one of its synsets)"

    def __init__(self, pos: str | Sequence[str] | None = None, path: str | None = None):
        """`pos`: WordNet parts of speech to draw from ("n", "v", "a", "r"; None = all).
        `path`: the WordNet dict folder (else $MODLENS_WORDNET, else /usr/share/wordnet)."""
        tags = [pos] if isinstance(pos, str) else list(pos or wordnet.POS_TAGS)
        bad = [t for t in tags if t not in wordnet.POS_TAGS]
        if bad:
            raise ValueError(f"pos must be among {wordnet.POS_TAGS}, not {bad}")
        self.pos = tuple(tags)
        self.path = path

    def availability(self) -> str | None:
        return wordnet.availability(self.path)

    def data(self) -> dict[str, Any]:
        return {"wordnet": "WordNet 3.0", "wordnet_sha": wordnet.digest(self.path)}

    def synonyms(self, word: str) -> list[tuple[str, str, str]]:
        """(synonym, synset name, pos) for `word`, in sense order, without the word itself or
        its own base forms, multi-word lemmas ("stupid_person") and repeats."""
        reader = wordnet.load(self.path)
        with wordnet.QUERY_LOCK:
            own = wordnet.base_forms(reader, word)
            synsets = reader.synsets(word.lower())
            counts = [sum(lem.count() for lem in s.lemmas() if lem.name().lower() in own) for s in synsets]
        seen, out = set(own), []
        for _, synset in sorted(zip(counts, synsets), key=lambda cs: -cs[0]):
            pos = wordnet.pos_tag(synset.pos())
            if pos not in self.pos:
                continue
            for lemma in synset.lemma_names():
                name = lemma.lower()
                if "_" in name or " " in name or name in seen or not any(c.isalpha() for c in name):
                    continue
                seen.add(name)
                out.append((lemma, synset.name(), pos))
        return out

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        word = slots[index].core(text)
        if sum(c.isalpha() for c in word) < 2:
            return []
        out = []
        for lemma, synset, pos in self.synonyms(word)[:max(k, 0)]:
            params: dict[str, Any] = {"synonym": lemma, "synset": synset, "pos": pos}
            out.append(WordChange(index, word, apply_case(lemma, word), self.key, params))
        return out
