"""ToxicTrap, word variant with greedy search (Bespalov et al. 2023; see `_toxictrap`): WordNet
synonyms and embedding neighbours at the words ranked by [UNK] masking, part of speech kept,
sentence similarity >= 0.84, at most 25 % of the words."""
from __future__ import annotations

from modlens.perturb.recipes import _toxictrap as tt
from modlens.perturb.recipes.base import Recipe


class ToxicTrapWordGreedy(Recipe):
    key = "toxictrap_word_greedy"
    title = "ToxicTrap (Bespalov et al. 2023), WordNet + embedding swaps, POS kept, greedy [UNK] ranking"
    paper = tt.PAPER
    transformations = list(tt.WORD)
    constraints = [*tt.BASE_CONSTRAINTS, ("pos_kept", {}), tt.SIMILARITY]
    search = ("greedy_unk", {})
    k = 5
    max_queries = 250
    original = {"transformation": "word synonym swap (WordNet; GloVe 5/20/50 neighbours; BERT MLM 20)",
                "constraints": "USE angular similarity, with/without POS match, ratio of words modified",
                "search": "Greedy-WIR ([UNK] masking)"}
    substitutes = tt.SUBSTITUTES
