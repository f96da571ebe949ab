"""ToxicTrap, combined character-or-word variant with greedy search (Bespalov et al. 2023; see
`_toxictrap`): at each word ranked by weighted saliency (PWWS), the union of the character
edits and the word swaps (one composite transformation), sentence similarity >= 0.84."""
from __future__ import annotations

from modlens.perturb.recipes import _toxictrap as tt
from modlens.perturb.recipes.base import Recipe


class ToxicTrapCombinedGreedy(Recipe):
    key = "toxictrap_combined_greedy"
    title = "ToxicTrap (Bespalov et al. 2023), character or word changes, greedy weighted saliency"
    paper = tt.PAPER
    transformations = [tt.composite([*tt.CHAR, *tt.WORD])]
    constraints = [*tt.BASE_CONSTRAINTS, tt.SIMILARITY]
    search = ("greedy_pwws", {})
    k = 2
    max_queries = 300
    original = {"transformation": "character perturbations + word synonym replacement",
                "constraints": "USE angular similarity, ratio of words modified",
                "search": "Greedy-WIR (weighted saliency)"}
    substitutes = tt.SUBSTITUTES
