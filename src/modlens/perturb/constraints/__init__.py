"""The one place attack constraints are registered (one small file each).

A constraint judges candidates (`perturb.parts.Constraint`): "pre" ones before the target is
queried (cheap), "post" ones only on candidates that reached the goal."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modlens.names import registered_class

if TYPE_CHECKING:
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


def available() -> list[str]:
    return list(CONSTRAINTS)


def create(key: str, **options: Any) -> "Constraint":
    """Instantiate a constraint by key; unknown keys raise UnknownName with close matches."""
    return registered_class("constraint", __name__, CONSTRAINTS, key)(**options)  # type: ignore[no-any-return]
