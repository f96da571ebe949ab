"""modlens's character attack, the default of `audit --attack` and `perturb --attack` (no
`--recipe`): DeepWordBug's four character edits plus the human-written perturbation types NoisyHate
found (repeated letters, abbreviations, special characters, mixed case, a table of real
perturbations), at the words ranked by deletion, at most a quarter of the words changed.

Each edit draws from `generate.rng_for(seed, strategy, word, attempt)`, the variant generator's
draws, so the same seed gives the texts the original `GreedyAttack` engine gave (its results were
logged as strategy `attack-tae` / `attack-bae`; this recipe's as `recipe:char_greedy`).
Homoglyphs and zero-width characters are opt-in (`--strategies`): no reader would notice them."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.perturb.recipes.base import Part, Recipe

DEFAULT_STRATEGIES = [
    "char_swap", "char_delete", "char_insert", "key_substitute",
    "repeat_char", "abbr", "special_char", "mixed_case", "human_lookup",
]


def char_transformations(strategies: Sequence[str] | None = None,
                         options: dict[str, dict[str, Any]] | None = None) -> list[Part]:
    """The character strategies (perturb/registry.py keys; default DEFAULT_STRATEGIES) as this
    recipe's transformations, with per-strategy options (human_lookup's table path)."""
    return [(f"char:{s}", {"draws": "attempt", **(options or {}).get(s, {})})
            for s in dict.fromkeys(strategies or DEFAULT_STRATEGIES)]


class CharGreedy(Recipe):
    key = "char_greedy"
    title = "modlens character attack: DeepWordBug edits + NoisyHate's human perturbations, greedy deletion ranking"
    paper = ("Gao, Lanchantin, Soffa & Qi (2018), DeepWordBug, IEEE S&P Workshops; Ye, Le & Lee (2025), "
             "NoisyHate: mining online human-written perturbations for realistic robustness benchmarking of "
             "content moderation models, ICWSM.")
    transformations = char_transformations()
    constraints = [("max_words_changed", {"fraction": 0.25, "min_words": 1})]
    search = ("greedy_delete", {})
    k = 2
    max_queries = 200
    original = {"transformation": "character swap, deletion, insertion, keyboard substitution; NoisyHate's "
                                  "human-written perturbation types",
                "constraints": "at most max(1, 25 % of the words) changed",
                "search": "Greedy-WIR (deletion)"}
    substitutes = "none (modlens's own recipe)"
