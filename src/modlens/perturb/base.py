"""Perturbation contract: every variant records how it was made, so it can be reproduced."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Variant:
    text: str
    strategy: str                   # registry key of the strategy (or attack) that made it
    params: dict[str, Any]          # every parameter needed to reproduce it
    seed: int
    positions: list[tuple[int, int]] = field(default_factory=list)  # edited character spans in the source text
    source_text: str = ""
    target_detector: str | None = None  # for attacks: the detector key the search targeted
    attack: dict[str, Any] | None = None  # for attacks: goal, status, queries, ...

    def to_dict(self) -> dict:
        d = asdict(self)
        d["positions"] = [list(p) for p in self.positions]
        return d
