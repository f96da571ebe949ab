"""Normalizer steps, one per file, registered here (the only place that lists them): a step name ->
"module:Class" (module relative to this package). An installed package adds one through the
`modlens.normalizer_steps` entry point (see CONTRIBUTING.md)."""
from __future__ import annotations

from modlens.names import ClassRegistry
from modlens.normalize.steps._base import Step

STEPS: dict[str, str] = {
    "spaced_letters": "spaced_letters:SpacedLetters",
    "unicode": "unicode_fold:UnicodeFold",
    "mixed_case": "mixed_case:MixedCase",
    "leet": "leet:Leet",
    "placeholder": "placeholder:Placeholder",
    "repeat": "repeat:Repeat",
    "dropped_letters": "dropped_letters:DroppedLetters",
    "edit_distance": "edit_distance:EditDistance",
    "word_split": "word_split:WordSplit",
    "pyspell": "pyspell:PySpell",
    "html_unescape": "html_unescape:HtmlUnescape",
}
REGISTRY = ClassRegistry("normalizer step", __name__, STEPS, Step, group="modlens.normalizer_steps")

# html_unescape is not in the default pipeline either: only Twitter-sourced readers (Davidson)
# need it, and they apply it as they read (datasets/base.py `Dataset.text_steps`).
# pyspellchecker is not in the default pipeline: it adds little once the other searches ran
# and costs tens of milliseconds per unknown word (see docs/NORMALIZE.md).
DEFAULT_STEPS = ["spaced_letters", "unicode", "mixed_case", "leet", "placeholder", "repeat",
                 "dropped_letters", "edit_distance", "word_split"]


# the step registered under a name; an unknown name raises UnknownName (a ValueError) with the close matches
make_step = REGISTRY.create
