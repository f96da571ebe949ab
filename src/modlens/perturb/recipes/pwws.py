"""PWWS: Ren, Deng, He & Che (2019), "Generating natural language adversarial examples through
probability weighted word saliency", ACL.

WordNet synonym swaps; words visited in the order of their weighted saliency: softmax of the
score drop when the word is masked, times the largest drop the best synonym makes. No extra
constraints (TaeBench Table A1: "No special constraints"). Offline: nothing substituted
(WordNet 3.0 from Debian's wordnet-base)."""
from __future__ import annotations

from modlens.perturb.recipes.base import Recipe


class PWWS(Recipe):
    key = "pwws"
    title = "PWWS (Ren et al. 2019): WordNet synonyms, probability-weighted word saliency"
    paper = "Ren, Deng, He & Che (2019). Generating natural language adversarial examples through probability weighted word saliency. ACL."
    transformations = [("wordnet_synonym", {})]
    constraints = [("no_repeat", {}), ("no_stopword", {})]
    search = ("greedy_pwws", {})
    k = 10
    max_queries = 300
    original = {"transformation": "WordNet synonym swap", "constraints": "none (stop words kept)",
                "search": "greedy, weighted saliency (softmax saliency x best swap gain)"}
    substitutes = "none"
