"""The plain values a chunk carries between its steps, its compute and its sink."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from modlens.datasets.base import DatasetItem
from modlens.rows import Score, Variant


@dataclass(frozen=True)
class Failed:
    """A step's outcome for one text when its component raised: the message, recorded."""
    message: str


@dataclass(frozen=True)
class StepError:
    """A normalizer or generator that failed for one text (a `step_errors` row)."""
    text: str
    step: str         # "normalize" | "variants"
    component: str    # the normalizer's or generator's name
    version: str
    message: str


ScoreRow = tuple[str, str, Score]  # (text, detector key, answer)


@dataclass
class Chunk:
    """Everything one chunk produced: what a sink records. `comment_ids` are the log's ids of
    `items` (None where the sink keeps no log: Parquet shards)."""
    items: Sequence[DatasetItem]
    comment_ids: Sequence[int | None]
    generated: Sequence[Sequence[Variant]] = ()
    normalizations: Sequence[tuple[str, Any]] = ()  # (source text, `Normalized`)
    scores: Sequence[ScoreRow] = ()
    errors: Sequence[StepError] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.generated:
            self.generated = [[] for _ in self.items]
