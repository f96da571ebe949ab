"""Perturbation contract: every variant records how it was made, so it can be reproduced."""
from __future__ import annotations

from typing import Callable, Sequence

from modlens.rows import Variant


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
