"""One fused test case: a toxic seed sentence ("women are pigs") whose parts were moved into
other modalities. A case carries its two halves as inputs of their own, so the report can show
the baseline: each half alone looks benign, the seed is toxic, the fused whole is missed."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from modlens.media import MediaBlob, MediaInput
from modlens.studylog.codec import canonical_json

CONTENT_TYPES = ("abuse_hate", "spam", "sexual")
# the inputs every detector scores for every case: the seed sentence (the oracle), each half
# alone, and the fused case
PARTS = ("seed", "part_a", "part_b", "case")


@dataclass(frozen=True)
class FusedCase:
    content_type: str           # one of CONTENT_TYPES
    template: str               # template name, e.g. "A is/are B"
    keyword_a: str
    middle: str                 # the template's connecting word(s): "are", ":", "your"
    keyword_b: str
    seed_text: str              # the template filled with the pair
    fusion: str                 # fusion type, e.g. "T+E", "T+I", "I+T", "V+T", "V+A", "A+T", "V+A+T"
    caption: str                # text shown beside the media ("" for media-only cases)
    media: tuple[MediaBlob, ...]
    part_a: MediaInput          # the half carrying keyword A, alone
    part_b: MediaInput          # the half carrying keyword B, alone
    params: dict[str, Any] = field(default_factory=dict)  # every transform's parameters
    seed: int = 0

    def __post_init__(self) -> None:
        if self.content_type not in CONTENT_TYPES:
            raise ValueError(f"content_type must be one of {CONTENT_TYPES}, not {self.content_type!r}")

    @property
    def key(self) -> str:
        """Stable identity: the same generation settings give the same key (reruns add nothing)."""
        ident = {"content_type": self.content_type, "template": self.template, "a": self.keyword_a,
                 "middle": self.middle, "b": self.keyword_b, "seed_text": self.seed_text, "fusion": self.fusion,
                 "caption": self.caption, "media": [m.sha256 for m in self.media], "params": self.params,
                 "seed": self.seed}
        return hashlib.sha256(canonical_json(ident).encode()).hexdigest()[:32]

    def inputs(self) -> dict[str, MediaInput]:
        """What each detector scores, by part name (PARTS)."""
        return {"seed": MediaInput(self.seed_text), "part_a": self.part_a, "part_b": self.part_b,
                "case": MediaInput(self.caption, self.media)}

    @property
    def modalities(self) -> tuple[str, ...]:
        """The modalities of the fused case: text when it has a caption, plus its media kinds."""
        kinds = {m.kind for m in self.media}
        return tuple(k for k in ("text", "image", "audio", "video")
                     if (k == "text" and self.caption.strip()) or k in kinds)
