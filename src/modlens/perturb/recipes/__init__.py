"""The one place attack recipes are registered: one short file each, named after its source.

A recipe names its transformation(s), constraints, search method and query budget and cites
its paper (`recipes.base.Recipe`); docs/PERTURB.md lists each beside the original's parts."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modlens.names import registered_class

if TYPE_CHECKING:
    from modlens.perturb.recipes.base import Recipe

# registry key -> "module:Class" (module relative to modlens.perturb.recipes)
RECIPES: dict[str, str] = {
    "deepwordbug": "deepwordbug:DeepWordBug",
    "textbugger": "textbugger:TextBugger",
    "a2t": "a2t:A2T",
    "pwws": "pwws:PWWS",
    "textfooler": "textfooler:TextFooler",
    "toxictrap_char_greedy": "toxictrap_char_greedy:ToxicTrapCharGreedy",
    "toxictrap_word_greedy": "toxictrap_word_greedy:ToxicTrapWordGreedy",
    "toxictrap_combined_greedy": "toxictrap_combined_greedy:ToxicTrapCombinedGreedy",
    "toxictrap_combined_beam": "toxictrap_combined_beam:ToxicTrapCombinedBeam",
}


def available() -> list[str]:
    return list(RECIPES)


def recipe_class(key: str) -> type["Recipe"]:
    return registered_class("attack recipe", __name__, RECIPES, key)  # type: ignore[no-any-return]


def create(key: str, **options: Any) -> "Recipe":
    """The recipe by key (options override its parts); unknown keys raise UnknownName."""
    return recipe_class(key)(**options)
