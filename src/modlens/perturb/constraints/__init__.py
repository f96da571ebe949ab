"""The one place attack constraints are registered (one small file each).

A constraint judges candidates (`perturb.parts.Constraint`): "pre" ones before the target is
queried (cheap), "post" ones only on candidates that reached the goal. An installed
package adds one through the `modlens.constraints` entry point ("module:Class"; see CONTRIBUTING.md)."""
from __future__ import annotations

from modlens.names import ClassRegistry
from modlens.perturb.parts import Constraint

# registry key -> "module:Class" (module relative to modlens.perturb.constraints)
CONSTRAINTS: dict[str, str] = {
    "max_words_changed": "max_words_changed:MaxWordsChanged",
    "no_stopword": "no_stopword:NoStopword",
    "no_repeat": "no_repeat:NoRepeat",
    "pos_kept": "pos_kept:PosKept",
    "sentence_similarity": "sentence_similarity:SentenceSimilarity",
    "edit_distance": "edit_distance:EditDistance",
    "readable": "readable:Readable",
    "judges_agree": "judges_agree:JudgesAgree",
}
REGISTRY = ClassRegistry("constraint", __name__, CONSTRAINTS, Constraint, group="modlens.constraints")


available = REGISTRY.names
create = REGISTRY.create  # unknown keys raise UnknownName with close matches
