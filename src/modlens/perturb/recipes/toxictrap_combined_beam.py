"""ToxicTrap, combined character-or-word variant with beam search (Bespalov et al. 2023; see
`_toxictrap`): beam of width 4 over the union of character edits and word swaps, sentence
similarity >= 0.84; a larger query budget, since each step scores every beam's extensions."""
from __future__ import annotations

from modlens.perturb.recipes import _toxictrap as tt
from modlens.perturb.recipes.base import Recipe


class ToxicTrapCombinedBeam(Recipe):
    key = "toxictrap_combined_beam"
    title = "ToxicTrap (Bespalov et al. 2023), character or word changes, beam search (width 4)"
    paper = tt.PAPER
    transformations = [tt.composite([*tt.CHAR, *tt.WORD])]
    constraints = [*tt.BASE_CONSTRAINTS, tt.SIMILARITY]
    search = ("beam", {"width": 4})
    k = 2
    max_queries = 500
    original = {"transformation": "character perturbations + word synonym replacement",
                "constraints": "USE angular similarity, ratio of words modified",
                "search": "beam search"}
    substitutes = tt.SUBSTITUTES
