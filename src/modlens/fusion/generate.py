"""Seeds x fusions -> fused cases (DUO section 3.3). Every case draws from a generator seeded by
the run's seed, the fusion and the seed sentence, so a case is the same whichever other seeds or
fusions the run has (same settings -> same case keys). A seed a fusion cannot take is skipped
with its reason; a fusion this machine cannot run (a missing program or font) is reported once
with its fix and the others go on."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from modlens.fusion import fusions
from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, Skip
from modlens.fusion.render import FusionUnavailable
from modlens.fusion.seeds import Seed, seed_rng

Progress = Callable[[int, int], None]
"""progress(items done, items to do)"""


@dataclass
class GenerationResult:
    cases: list[FusedCase] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)    # {"fusion", "content_type", "seed", "reason"}
    unavailable: dict[str, dict[str, str]] = field(default_factory=dict)  # fusion -> {"reason", "fix"}
    seconds: dict[str, float] = field(default_factory=dict)        # fusion -> time spent building

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for c in self.cases:
            counts[c.fusion] = counts.get(c.fusion, 0) + 1
        reasons: dict[str, int] = {}
        for s in self.skipped:
            reasons[s["fusion"]] = reasons.get(s["fusion"], 0) + 1
        return {"cases": len(self.cases), "by_fusion": counts, "skipped": len(self.skipped),
                "skipped_by_fusion": reasons, "unavailable": self.unavailable}


def runnable(names: Sequence[str]) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(the fusions that can run here, {fusion: {"reason", "fix"}} for the others)."""
    ok, missing = [], {}
    for name in names:
        err = fusions.unavailable_reason(name)
        if err is None:
            ok.append(name)
        else:
            missing[name] = {"reason": str(err), "fix": err.fix}
    return ok, missing


def generate(seeds: Sequence[Seed], names: Sequence[str], ctx: FusionContext, *,
             progress: Progress | None = None) -> GenerationResult:
    """Every seed through every fusion of `names` that can run here, in that order."""
    result = GenerationResult()
    ok, result.unavailable = runnable(names)
    total, done = len(seeds) * len(ok), 0
    for name in ok:
        start = time.perf_counter()
        for seed in seeds:
            rng = seed_rng(ctx.run_seed, name, seed.template, seed.text)
            try:
                result.cases.append(fusions.build(name, seed, ctx, rng))
            except Skip as skip:
                result.skipped.append({"fusion": name, "content_type": seed.content_type, "seed": seed.text,
                                       "reason": skip.reason})
            except FusionUnavailable as err:  # found only now (e.g. the emoji font): the fusion stops here
                result.unavailable[name] = {"reason": str(err), "fix": err.fix}
                break
            finally:
                done += 1
                if progress is not None:
                    progress(done, total)
        result.seconds[name] = round(time.perf_counter() - start, 3)
    return result
