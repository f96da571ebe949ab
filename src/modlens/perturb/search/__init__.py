"""The one place attack search methods are registered (one small file each).

A search method decides which words to change and which candidates to keep
(`search.base.SearchMethod`); the problem it works on (`search.base.Problem`) proposes the
changes, applies the constraints and pays the target queries, in one batched call per step. An installed
package adds one through the `modlens.searches` entry point ("module:Class"; see CONTRIBUTING.md)."""
from __future__ import annotations

from modlens.names import ClassRegistry
from modlens.perturb.search.base import SearchMethod

# registry key -> "module:Class" (module relative to modlens.perturb.search)
SEARCHES: dict[str, str] = {
    "greedy_delete": "greedy_wir:GreedyDelete",
    "greedy_unk": "greedy_wir:GreedyUnk",
    "greedy_pwws": "greedy_wir:GreedyPWWS",
    "beam": "beam:BeamSearch",
}
REGISTRY = ClassRegistry("search method", __name__, SEARCHES, SearchMethod, group="modlens.searches")


available = REGISTRY.names
create = REGISTRY.create  # unknown keys raise UnknownName with close matches
