"""A2T: Yoo & Qi (2021), "Towards improving adversarial training of NLP models", Findings of
EMNLP.

A cheap word-swap attack for adversarial training: counter-fitted embedding neighbours
(cosine >= 0.8), at most 10 % of the words changed, part of speech kept, sentence-encoder
similarity >= 0.9 (DistilBERT STS); words ranked by gradient. TaeBench revised it with the
all-MiniLM-L6-v2 sentence encoder, which is the model modlens embeds. Offline substitutes:
MiniLM input-embedding neighbours for counter-fitted GloVe (their cosines are lower: floor
0.5, see docs/PERTURB.md), WordNet POS out of context for a tagger, and deletion ranking for
gradients (a black-box target has none)."""
from __future__ import annotations

from modlens.perturb.recipes.base import Recipe


class A2T(Recipe):
    key = "a2t"
    title = "A2T (Yoo & Qi 2021): embedding swaps, <= 10% of words, POS kept, sentence similarity >= 0.9"
    paper = "Yoo & Qi (2021). Towards improving adversarial training of NLP models. Findings of EMNLP."
    transformations = [("embedding_neighbour", {"min_similarity": 0.5})]
    constraints = [("max_words_changed", {"fraction": 0.1, "min_words": 1}), ("no_repeat", {}), ("no_stopword", {}),
                   ("pos_kept", {}), ("sentence_similarity", {"threshold": 0.9})]
    search = ("greedy_delete", {})
    k = 10
    max_queries = 200
    original = {"transformation": "counter-fitted GloVe neighbours, cosine >= 0.8 (or BERT MLM in A2T-MLM)",
                "constraints": "<= 10% words changed, POS kept, DistilBERT STS similarity >= 0.9",
                "search": "greedy, gradient word importance"}
    substitutes = ("counter-fitted GloVe -> MiniLM input-embedding neighbours (cosine >= 0.5); "
                   "DistilBERT STS -> MiniLM sentence cosine (as TaeBench's revision); gradients -> deletion ranking; "
                   "POS tagger -> WordNet POS")
