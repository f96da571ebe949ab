"""Composite transformation: the union of several (ToxicTrap's "character or word" recipes;
TextAttack's CompositeTransformation). Each proposed change keeps the key of the part that
made it (so constraints such as `readable` know a character edit from a word swap) and
records the composite (`composite(char:char_swap|wordnet_synonym)`) in `params["via"]`."""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Sequence

from modlens.perturb.generate import WordSlot
from modlens.perturb.parts import Transformation, WordChange


class Composite(Transformation):
    key = "composite"
    kind = "word"
    description = "the union of the changes several transformations propose"

    def __init__(self, transformations: Sequence[str | Transformation], options: dict[str, dict[str, Any]] | None = None):
        """`transformations`: registry keys (or instances); `options`: per-key options."""
        from modlens.perturb import transformations as registry  # the registry imports this module

        parts: list[Transformation] = []
        for t in transformations:
            parts.append(t if isinstance(t, Transformation) else registry.create(t, **(options or {}).get(t, {})))
        if not parts:
            raise ValueError("composite needs at least one transformation")
        self.parts = parts
        # "char" when all parts edit characters, "word" as soon as one swaps words
        self.kind = "char" if all(p.kind == "char" for p in parts) else "word"
        self.name = "composite(" + "|".join(p.key for p in parts) + ")"
        self._unavailable: dict[str, str] | None = None

    def availability(self) -> str | None:
        """Usable when at least one part is; the others are skipped (see `unavailable`)."""
        reasons = self.unavailable()
        if len(reasons) == len(self.parts):
            return "; ".join(f"{k}: {r}" for k, r in reasons.items())
        return None

    def unavailable(self) -> dict[str, str]:
        """{part key: reason} for the parts that cannot run here (checked once)."""
        if self._unavailable is None:
            self._unavailable = {p.key: r for p in self.parts if (r := p.availability())}
        return self._unavailable

    def data(self) -> dict[str, Any]:
        skip = self.unavailable()
        return {p.key: d for p in self.parts if p.key not in skip and (d := p.data())}

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        """Up to k changes from every usable part (k each, as each would propose alone), in
        part order, without duplicates; each part draws from its own RNG stream."""
        skip = self.unavailable()
        out: list[WordChange] = []
        seen: set[tuple[str, bool]] = set()
        base = rng.random()
        for n, part in enumerate(self.parts):
            if part.key in skip:
                continue
            sub = random.Random(f"{base}/{n}/{part.key}")
            for change in part.changes(text, slots, index, sub, k):
                if (change.new, change.insert_after) in seen:
                    continue
                seen.add((change.new, change.insert_after))
                out.append(replace(change, params={**change.params, "via": self.name}))
        return out
