"""DeepWordBug: Gao, Lanchantin, Soffa & Qi (2018), "Black-box generation of adversarial text
sequences to evade deep learning classifiers", IEEE S&P Workshops (DLS).

Character edits (swap, substitute, delete, insert) of the words a black-box scoring function
ranks highest, within a Levenshtein edit-distance budget (TaeBench Table A1: "Levenshtein edit
distance"). Offline: nothing substituted; the substitution is a keyboard-neighbour key
(`key_substitute`) where the paper draws a random letter; words are ranked by [UNK] masking,
modlens's form of the paper's replace-one score."""
from __future__ import annotations

from modlens.perturb.recipes.base import Recipe


class DeepWordBug(Recipe):
    key = "deepwordbug"
    title = "DeepWordBug (Gao et al. 2018): character edits, edit-distance budget, greedy [UNK] ranking"
    paper = "Gao, Lanchantin, Soffa & Qi (2018). Black-box generation of adversarial text sequences to evade deep learning classifiers. IEEE S&P Workshops."
    transformations = [("char:char_swap", {}), ("char:key_substitute", {}), ("char:char_delete", {}),
                       ("char:char_insert", {})]
    constraints = [("no_repeat", {}), ("no_stopword", {}), ("edit_distance", {"max_distance": 30})]
    search = ("greedy_unk", {})
    k = 2
    max_queries = 200
    original = {"transformation": "character swap, substitution, deletion, insertion",
                "constraints": "Levenshtein edit distance <= 30 (TextAttack's setting)",
                "search": "greedy over words ranked by the replace-1 / temporal scores"}
    substitutes = "none (keyboard-neighbour substitution instead of a random letter)"
