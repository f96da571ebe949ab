"""ToxicTrap, character variant with greedy search (Bespalov et al. 2023; see `_toxictrap`):
character insert / delete / swap / replace at the words ranked by deletion, sentence
similarity >= 0.84 (judged on the normalized text), at most 25 % of the words."""
from __future__ import annotations

from modlens.perturb.recipes import _toxictrap as tt
from modlens.perturb.recipes.base import Recipe


class ToxicTrapCharGreedy(Recipe):
    key = "toxictrap_char_greedy"
    title = "ToxicTrap (Bespalov et al. 2023), character edits, greedy deletion ranking"
    paper = tt.PAPER
    transformations = list(tt.CHAR)
    constraints = [*tt.BASE_CONSTRAINTS, tt.SIMILARITY]
    search = ("greedy_delete", {})
    k = 2
    max_queries = 200
    original = {"transformation": "character insertion, deletion, neighbouring swap, replacement",
                "constraints": "USE angular similarity, ratio of words modified",
                "search": "Greedy-WIR (deletion)"}
    substitutes = tt.SUBSTITUTES
