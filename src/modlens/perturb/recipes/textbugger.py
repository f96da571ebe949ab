"""TextBugger: Li, Ji, Du, Li & Wang (2019), "TextBugger: Generating adversarial text against
real-world applications", NDSS.

Five bugs per important word: insert a space, delete a letter, swap two letters, substitute a
look-alike character (sub-C), substitute a nearest-neighbour word (sub-W, GloVe top 5); kept
when the Universal Sentence Encoder similarity stays >= 0.8. Black-box word importance by
deletion. Offline substitutes: the embedded MiniLM's sentence embeddings for USE, and the
MiniLM input-embedding neighbours for GloVe."""
from __future__ import annotations

from modlens.perturb.recipes.base import Recipe


class TextBugger(Recipe):
    key = "textbugger"
    title = "TextBugger (Li et al. 2019): character bugs + word neighbours, sentence similarity >= 0.8"
    paper = "Li, Ji, Du, Li & Wang (2019). TextBugger: Generating adversarial text against real-world applications. NDSS."
    transformations = [("char:space_insert", {}), ("char:char_delete", {}), ("char:char_swap", {}),
                       ("char:homoglyph", {}), ("embedding_neighbour", {"min_similarity": 0.5})]
    constraints = [("no_repeat", {}), ("no_stopword", {}), ("sentence_similarity", {"threshold": 0.8})]
    search = ("greedy_delete", {})
    k = 5
    max_queries = 300
    original = {"transformation": "insert space, delete, swap, sub-C (look-alike), sub-W (GloVe top-5 neighbours)",
                "constraints": "USE cosine similarity >= 0.8",
                "search": "greedy, black-box word importance by deletion"}
    substitutes = "USE -> MiniLM sentence cosine; GloVe -> MiniLM input-embedding neighbours"
