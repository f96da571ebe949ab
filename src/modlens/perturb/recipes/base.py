"""What a recipe is: a named configuration of the composed `Attack` (goal + transformations +
constraints + search + budget) that cites the paper it follows and says plainly where an
offline stand-in replaces a part of the original (USE, BERT MLM, counter-fitted GloVe).

A recipe file defines one `Recipe` subclass with class attributes only; `build` turns it into
an `Attack` on a target. Options given to `build` (goal, judges, query budget, edit ratio,
seed) override the recipe's defaults and are recorded with every result."""
from __future__ import annotations

from typing import Any, ClassVar, Sequence

from modlens.detectors.base import Detector
from modlens.perturb.compose import Attack

Part = tuple[str, dict[str, Any]]


class Recipe:
    key: ClassVar[str] = ""
    title: ClassVar[str] = ""              # one line for `modlens attack --list`
    paper: ClassVar[str] = ""              # the citation
    transformations: ClassVar[list[Part]] = []
    constraints: ClassVar[list[Part]] = []
    search: ClassVar[Part] = ("greedy_delete", {})
    max_queries: ClassVar[int] = 200
    k: ClassVar[int] = 2                   # changes per transformation per word
    original: ClassVar[dict[str, str]] = {}   # the paper's transformation / constraints / search
    substitutes: ClassVar[str] = ""        # where an offline part replaces the paper's

    def __init__(self, **overrides: Any):
        """Recipe-level overrides: `transformations`, `constraints`, `search`, `k`, `max_queries`."""
        unknown = set(overrides) - {"transformations", "constraints", "search", "k", "max_queries"}
        if unknown:
            raise ValueError(f"unknown recipe option(s): {', '.join(sorted(unknown))}")
        self.parts: dict[str, Any] = {
            "transformations": list(overrides.get("transformations", self.transformations)),
            "constraints": list(overrides.get("constraints", self.constraints)),
            "search": overrides.get("search", self.search),
            "k": int(overrides.get("k", self.k)),
            "max_queries": int(overrides.get("max_queries", self.max_queries)),
        }

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "paper": self.paper, **self.parts,
                "original": dict(self.original), "substitutes": self.substitutes}

    def build(self, target: Detector, *, goal: str = "tae", judges: Sequence[Detector] = (),
              max_queries: int | None = None, max_edit_ratio: float | None = None, seed: int = 0,
              target_key: str | None = None, goal_labels: Sequence[str] | str | None = None,
              batch: bool = True) -> Attack:
        """The recipe as an attack on `target`. `max_edit_ratio` replaces the share of words the
        recipe may change (its `max_words_changed` fraction; added when the recipe has none)."""
        constraints = [(key, dict(opts)) for key, opts in self.parts["constraints"]]
        if max_edit_ratio is not None:
            constraints = [c for c in constraints if c[0] != "max_words_changed"]
            constraints.insert(0, ("max_words_changed", {"fraction": max_edit_ratio}))
        return Attack(target, transformations=self.parts["transformations"], constraints=constraints,
                      search=self.parts["search"], goal=goal, max_queries=self.parts["max_queries"] if max_queries is None else max_queries,
                      k=self.parts["k"], judges=judges, seed=seed, target_key=target_key, recipe=self.key,
                      goal_labels=goal_labels, batch=batch)
