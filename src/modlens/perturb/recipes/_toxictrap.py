"""What the ToxicTrap recipes share: Bespalov, Bhabesh, Xiang, Zhou & Qi (2023), "Towards
building a robust toxicity predictor", ACL (Industry Track). ToxicTrap pairs the TAE goal with
character transformations (insert, delete, neighbour swap, replace), word synonym swaps
(WordNet; GloVe neighbours; BERT MLM), or both, under USE sentence similarity (with and
without a POS match) and a ratio of words modified, searched greedily (Greedy-WIR by
deletion, [UNK] masking, weighted saliency or gradient) or by beam search; TaeBench ran 20
such variants (Table A1). Offline: MiniLM sentence cosine for USE, MiniLM input-embedding
neighbours for GloVe, no BERT MLM (none ships), WordNet POS for a tagger."""
from __future__ import annotations

from typing import Any

Part = tuple[str, dict[str, Any]]

PAPER = ("Bespalov, Bhabesh, Xiang, Zhou & Qi (2023). Towards building a robust toxicity predictor. "
         "ACL (Industry Track).")
CHAR: list[Part] = [("char:char_swap", {}), ("char:key_substitute", {}), ("char:char_delete", {}), ("char:char_insert", {})]
WORD: list[Part] = [("wordnet_synonym", {}), ("embedding_neighbour", {"min_similarity": 0.5})]
SIMILARITY: Part = ("sentence_similarity", {"threshold": 0.84})
BASE_CONSTRAINTS: list[Part] = [("max_words_changed", {"fraction": 0.25, "min_words": 1}), ("no_repeat", {}), ("no_stopword", {})]
SUBSTITUTES = "USE -> MiniLM sentence cosine; GloVe -> MiniLM input-embedding neighbours; no BERT MLM; POS tagger -> WordNet POS"


def composite(parts: list[Part]) -> Part:
    """Character OR word changes at each word, as one composite transformation."""
    return ("composite", {"transformations": [k for k, _ in parts], "options": {k: o for k, o in parts if o}})
