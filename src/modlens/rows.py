"""Plain record types shared by the study log, its readers and the services that fill it.

A leaf module: it imports nothing from modlens, so any layer may use it (the perturbation
strategies make `Variant`s, the study log stores them, analysis reads them back) without
importing the layer that writes them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, Protocol


@dataclass
class Variant:
    """A perturbed text and everything needed to make it again."""
    text: str
    strategy: str                   # registry key of the strategy (or attack) that made it
    params: dict[str, Any]          # every parameter needed to reproduce it
    seed: int
    positions: list[tuple[int, int]] = field(default_factory=list)  # edited character spans in the source text
    source_text: str = ""
    target_detector: str | None = None  # for attacks: the detector key the search targeted
    attack: dict[str, Any] | None = None  # for attacks: goal, status, queries, ...

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["positions"] = [list(p) for p in self.positions]
        return d


class Score(Protocol):
    """What the log keeps of one detector's answer (the engine's `DetectorResult`)."""
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None


class CommentRow(NamedTuple):
    """One comment for `records.comments.add_comments` (the keyword arguments of `add_comment`).
    `first_labels` (name -> (value, source)) are written only when the comment is new: like its
    text and parent, they describe the first sighting."""
    key: str
    text: str
    page_id: int | None = None
    parent_key: str | None = None
    author_hash: str | None = None
    time_shown: str | None = None
    truncated: bool = False
    original_length: int | None = None
    first_labels: dict[str, tuple[Any, str]] | None = None


TextScoreRow = tuple[str, int, dict[str, float] | None, float | None, float | None, str | None]
"""(text, detector_id, labels, toxicity, latency_ms, error): one detector's score of one text."""

LabelRow = tuple[int, str, Any, str]
"""(comment_id, name, value, source)."""

NormalizationRow = tuple[str, str, str, str, Sequence[Mapping[str, object]] | str]
"""(source_text, normalizer, version, result_text, edits): each edit a JSON object (`Edit.to_dict()`),
or the edits' JSON as `normalize.base.edits_json` writes it (stored as it is)."""

StepErrorRow = tuple[str, str, str, str, int | None, str]
"""(text, step, component, version, run_id, message): a normalizer or generator that failed for one text."""

MediaScoreRow = tuple[int, dict[str, float] | None, float | None, float | None, str | None, dict[str, Any]]
"""(detector_id, labels, toxicity, latency_ms, error, details): a score of an input with media."""
