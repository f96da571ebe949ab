"""Normalizer contract: text in, normalized text plus per-token edits out.

A pipeline is a list of small steps (one file each in `steps/`). Every edit records its span
in the *original* text, the original and normalized token, the step that made it, a
confidence, and, for mixed-case words, the hidden word spelled by the capitals.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from json.encoder import encode_basestring  # (C where built: the one json.dumps(ensure_ascii=False) writes strings with)
from typing import Sequence, TypedDict


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


def edits_json(edits: Sequence[Edit]) -> str:
    """`json.dumps([e.to_dict() for e in edits], ensure_ascii=False)`, the same string, written field
    by field: the study log keeps every normalization's edits so, and json's encoder took most of the
    Python a normalization row costs (three edits: 5.0 -> 1.7 µs, `to_dict` included). Edits with a
    field of another type than declared (a bool, a NaN, a numpy number), or that are not `Edit`s but
    have a `to_dict`, go through json.dumps."""
    enc, parts = encode_basestring, []
    for e in edits:
        if type(e) is not Edit:
            return json.dumps([e.to_dict() for e in edits], ensure_ascii=False)
        start, end, original, normalized, step, c, hidden = (e.start, e.end, e.original, e.normalized, e.step,
                                                              e.confidence, e.hidden)
        if (type(start) is not int or type(end) is not int or type(c) is not float or c - c != 0  # NaN, ±inf
                or type(original) is not str or type(normalized) is not str or type(step) is not str
                or (hidden is not None and type(hidden) is not str)):
            return json.dumps([e.to_dict() for e in edits], ensure_ascii=False)
        parts.append(f'{{"start": {start}, "end": {end}, "original": {enc(original)}, "normalized": '
                     f'{enc(normalized)}, "step": {enc(step)}, "confidence": {c!r}, "hidden": '
                     f'{"null" if hidden is None else enc(hidden)}}}')
    return f"[{', '.join(parts)}]"
