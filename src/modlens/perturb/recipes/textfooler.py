"""TextFooler: Jin, Jin, Zhou & Szolovits (2020), "Is BERT really robust? A strong baseline for
natural language attack on text classification and entailment", AAAI.

Swap the most important words (ranked by deletion) for one of their 50 nearest counter-fitted
GloVe neighbours (cosine >= 0.5) with the same part of speech, keeping the Universal Sentence
Encoder similarity >= 0.84 (on a 15-word window). Offline substitutes: the embedded MiniLM's
input-embedding neighbours for counter-fitted GloVe (a weaker space: its neighbours include
antonyms and inflections; docs/PERTURB.md measures it), the MiniLM sentence cosine on the
whole text for windowed USE, WordNet POS out of context for a tagger, and 15 neighbours per
word rather than 50 to keep the queries near TextFooler's other recipes."""
from __future__ import annotations

from modlens.perturb.recipes.base import Recipe


class TextFooler(Recipe):
    key = "textfooler"
    title = "TextFooler-style (Jin et al. 2020): offline embedding neighbours, POS kept, similarity >= 0.84"
    paper = "Jin, Jin, Zhou & Szolovits (2020). Is BERT really robust? A strong baseline for natural language attack on text classification and entailment. AAAI."
    transformations = [("embedding_neighbour", {"min_similarity": 0.5})]
    constraints = [("no_repeat", {}), ("no_stopword", {}), ("pos_kept", {}),
                   ("sentence_similarity", {"threshold": 0.84})]
    search = ("greedy_delete", {})
    k = 15
    max_queries = 300
    original = {"transformation": "counter-fitted GloVe, 50 neighbours, cosine >= 0.5",
                "constraints": "POS kept, USE similarity >= 0.84 on a 15-word window",
                "search": "greedy, deletion word importance"}
    substitutes = ("counter-fitted GloVe -> MiniLM input-embedding neighbours (15, cosine >= 0.5); "
                   "USE -> MiniLM sentence cosine on the whole text; POS tagger -> WordNet POS")
