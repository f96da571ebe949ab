"""Normalizer steps, one per file, registered here (the only place that lists them)."""
from __future__ import annotations

from modlens.normalize.steps._base import Step
from modlens.normalize.steps.dropped_letters import DroppedLetters
from modlens.normalize.steps.edit_distance import EditDistance
from modlens.normalize.steps.leet import Leet
from modlens.normalize.steps.mixed_case import MixedCase
from modlens.normalize.steps.placeholder import Placeholder
from modlens.normalize.steps.pyspell import PySpell
from modlens.normalize.steps.repeat import Repeat
from modlens.normalize.steps.spaced_letters import SpacedLetters
from modlens.normalize.steps.unicode_fold import UnicodeFold
from modlens.normalize.steps.word_split import WordSplit

STEPS: dict[str, type[Step]] = {
    cls.name: cls for cls in (SpacedLetters, UnicodeFold, MixedCase, Leet, Placeholder, Repeat,
                              DroppedLetters, EditDistance, WordSplit, PySpell)
}

# pyspellchecker is not in the default pipeline: it adds little once the other searches ran
# and costs tens of milliseconds per unknown word (see docs/NORMALIZE.md).
DEFAULT_STEPS = ["spaced_letters", "unicode", "mixed_case", "leet", "placeholder", "repeat",
                 "dropped_letters", "edit_distance", "word_split"]


def make_step(name: str) -> Step:
    try:
        return STEPS[name]()
    except KeyError:
        raise ValueError(f"unknown normalizer step {name!r}; available: {', '.join(STEPS)}") from None
