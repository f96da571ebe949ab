"""Normalizer contract: text in, normalized text plus per-token edits out.

A pipeline is a list of small steps (one file each in `steps/`). Every edit records its span
in the *original* text, the original and normalized token, the step that made it, a
confidence, and, for mixed-case words, the hidden word spelled by the capitals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict


class EditDict(TypedDict):
    """`Edit.to_dict()`: one edit as the study log and exports keep it (JSON)."""
    start: int
    end: int
    original: str
    normalized: str
    step: str
    confidence: float
    hidden: str | None


class NormalizedDict(TypedDict):
    """`Normalized.to_dict()`."""
    text: str
    edits: list[EditDict]
    normalizer: str
    version: str


@dataclass
class Edit:
    start: int            # character span in the original text
    end: int
    original: str
    normalized: str
    step: str             # name of the step that made the (last) change
    confidence: float
    hidden: str | None = None  # e.g. "rats" for "democRATs"

    def to_dict(self) -> EditDict:
        # asdict's recursive deep copy is most of an audit's cost per decoded tweet; the fields are plain values
        return {"start": self.start, "end": self.end, "original": self.original, "normalized": self.normalized,
                "step": self.step, "confidence": self.confidence, "hidden": self.hidden}


@dataclass
class Normalized:
    text: str
    edits: list[Edit] = field(default_factory=list)
    normalizer: str = ""
    version: str = ""

    def to_dict(self) -> NormalizedDict:
        return {"text": self.text, "edits": [e.to_dict() for e in self.edits],
                "normalizer": self.normalizer, "version": self.version}
