"""The one place perturbation strategies are registered.

Each strategy is one small file in `strategies/` defining a `Strategy` subclass. Adding a
strategy = one file + one line in `STRATEGIES`. The first seven keys are the ones a study
uses by default (`PerturbationConfig.strategies`); the finer character edits can be named
on their own too. An installed package adds one through the `modlens.strategies` entry point
("module:Class"; see CONTRIBUTING.md).
"""
from __future__ import annotations

from modlens.names import ClassRegistry
from modlens.perturb.strategies._word import Strategy

# registry key -> "module:Class" (module relative to modlens.perturb.strategies)
STRATEGIES: dict[str, str] = {
    "repeat_char": "repeat_char:RepeatChar",
    "abbr": "abbr:Abbr",
    "special_char": "special_char:SpecialChar",
    "mixed_case": "mixed_case:MixedCase",
    "mixed_case_plus": "mixed_case_plus:MixedCasePlus",
    "human_lookup": "human_lookup:HumanLookup",
    "char_attack": "char_attack:CharAttack",
    "char_swap": "char_swap:CharSwap",
    "char_delete": "char_delete:CharDelete",
    "char_insert": "char_insert:CharInsert",
    "key_substitute": "key_substitute:KeySubstitute",
    "homoglyph": "homoglyph:Homoglyph",
    "zero_width": "zero_width:ZeroWidth",
    "space_insert": "space_insert:SpaceInsert",
}
REGISTRY = ClassRegistry("perturbation strategy", "modlens.perturb.strategies", STRATEGIES, Strategy,
                         group="modlens.strategies")


available = REGISTRY.names
check = REGISTRY.check  # UnknownName (a KeyError, with close matches) for the first key not registered
# a strategy by key; check `availability()` before use (a lookup table may be missing)
create = REGISTRY.create


def describe(key: str) -> str:
    return REGISTRY.load(key).description
