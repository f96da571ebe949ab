"""Perturbation contract: every variant records how it was made, so it can be reproduced."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence


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


def attack_each(run: Callable[[str], Variant], texts: Sequence[str]) -> list[Variant]:
    """Attack each text; a successful example identical to an earlier one is marked
    `constraints.unique.ok = False` (TaeBench's exact-match dedup) with `duplicate_of`."""
    out: list[Variant] = []
    first: dict[str, int] = {}
    for n, text in enumerate(texts):
        v = run(text)
        assert v.attack is not None
        if v.attack["status"] == "success":
            if v.text in first:
                v.attack["constraints"]["unique"] = {"ok": False, "duplicate_of": first[v.text]}
            else:
                first[v.text] = n
        out.append(v)
    return out
