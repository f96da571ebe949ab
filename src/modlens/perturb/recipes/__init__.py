"""The one place attack recipes are registered: one short file each, named after its source.

A recipe names its transformation(s), constraints, search method and query budget and cites
its paper (`recipes.base.Recipe`); docs/PERTURB.md lists each beside the original's parts. An installed
package adds one through the `modlens.recipes` entry point ("module:Class"; see CONTRIBUTING.md)."""
from __future__ import annotations

from modlens.names import ClassRegistry
from modlens.perturb.recipes.base import Recipe

# registry key -> "module:Class" (module relative to modlens.perturb.recipes)
RECIPES: dict[str, str] = {
    "char_greedy": "char_greedy:CharGreedy",
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
REGISTRY = ClassRegistry("attack recipe", __name__, RECIPES, Recipe, group="modlens.recipes")


available = REGISTRY.names
recipe_class = REGISTRY.load
create = REGISTRY.create  # the recipe by key (options override its parts); unknown keys raise UnknownName
