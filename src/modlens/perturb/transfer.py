"""Transfer of adversarial examples: variants crafted against detector A, scored by every
detector, give the attack-success-rate matrix (rows: source detector A, columns: target B).

Cell (A, B) = share of A's successful, unique adversarial examples that also fool B at B's
own threshold (a TAE fools B when B scores it below B's threshold; a BAE when at or above).
When the seed's scores are known, an example only counts for B if B got the seed right (a
TAE's seed at or above B's threshold): otherwise B was never fooled by the edit, it was
wrong already. A row with seed scores but none from B for its seed (an error, a rate limit)
does not count for B either: whether B got the seed right is unknown (the matrix's notes say
how many were left out). The diagonal is 1 by construction (those examples succeeded against A). The analysis reads
the same fields from the study log (`variants.attack_json`, `variants.target_detector` and
the variant text's scores), so `asr_matrix` works on plain rows and needs no detector.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from modlens.rows import Variant
from modlens.perturb.goals import fooled

if TYPE_CHECKING:  # the report reads transfer from the log and must import with no detector installed
    from modlens.detectors.base import Detector


@dataclass
class TransferRow:
    source: str                      # detector key the attack targeted
    goal: str                        # "tae" | "bae"
    text: str
    scores: dict[str, float | None]  # detector key -> toxicity of the adversarial text
    thresholds: dict[str, float]
    seed_scores: dict[str, float | None] | None = None  # the same detectors on the unperturbed seed


@dataclass
class TransferMatrix:
    sources: list[str]
    targets: list[str]
    rate: dict[str, dict[str, float | None]]   # rate[source][target]; None when nothing to count
    n: dict[str, dict[str, int]]               # examples with a score from that target
    goal: str
    dropped_duplicates: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "sources": self.sources, "targets": self.targets, "rate": self.rate,
                "n": self.n, "dropped_duplicates": self.dropped_duplicates, "notes": self.notes}

    def format(self) -> str:
        width = max([len(t) for t in self.targets] + [10])
        lines = [f"{self.goal.upper()} success rate (rows: crafted against, columns: scored by)",
                 " " * width + "".join(f"{t:>{width + 2}}" for t in self.targets)]
        for s in self.sources:
            cells = "".join(f"{'-' if self.rate[s][t] is None else f'{self.rate[s][t]:.2f} ({self.n[s][t]})':>{width + 2}}"
                            for t in self.targets)
            lines.append(f"{s:<{width}}{cells}")
        return "\n".join(lines)


def successful(variants: Iterable[Variant], goal: str | None = None) -> list[Variant]:
    """Attack variants that succeeded and are not marked duplicate."""
    out: list[Variant] = []
    for v in variants:
        a = v.attack or {}
        unique = a.get("constraints", {}).get("unique", {}).get("ok", True)
        if a.get("status") == "success" and unique and (goal is None or a.get("goal") == goal):
            out.append(v)
    return out


def score_variants(variants: Iterable[Variant], detectors: Mapping[str, Detector], goal: str = "tae") -> list[TransferRow]:
    """Scores each successful variant and its seed with every detector (one batched call per
    detector)."""
    chosen = successful(variants, goal)
    texts = [v.text for v in chosen] + [v.source_text for v in chosen]
    scores: dict[str, list[float | None]] = {}
    for key, det in detectors.items():
        scores[key] = [det.toxicity(r) for r in det.score(texts)] if texts else []
    thresholds = {k: d.threshold for k, d in detectors.items()}
    n = len(chosen)
    # every chosen variant has an attack record (`successful`), naming its target when the row does not
    return [TransferRow(v.target_detector or (v.attack or {})["target"], goal, v.text,
                        {k: scores[k][i] for k in detectors}, thresholds,
                        {k: scores[k][n + i] for k in detectors}) for i, v in enumerate(chosen)]


def asr_matrix(rows: Iterable[TransferRow | Mapping[str, Any]], goal: str = "tae", dedup: bool = True) -> TransferMatrix:
    """The success-rate matrix from rows (TransferRow or dicts with the same keys). Exact
    duplicates (same source and text) are counted once, as in TaeBench's dedup."""
    typed = [r if isinstance(r, TransferRow) else TransferRow(**r) for r in rows]
    seen: set[tuple[str, str]] = set()
    kept: list[TransferRow] = []
    dropped = 0
    for r in typed:
        if r.goal != goal:
            continue
        if dedup and (r.source, r.text) in seen:
            dropped += 1
            continue
        seen.add((r.source, r.text))
        kept.append(r)
    sources = sorted({r.source for r in kept})
    targets = sorted({t for r in kept for t in r.scores} | set(sources))
    hits = {s: {t: 0 for t in targets} for s in sources}
    n = {s: {t: 0 for t in targets} for s in sources}
    unknown_seed: dict[tuple[str, str], int] = {}
    for r in kept:
        for t, score in r.scores.items():
            if score is None or t not in r.thresholds:
                continue
            if r.seed_scores is not None:
                seed = r.seed_scores.get(t)
                if seed is None:  # B's verdict on the seed is unknown: right or wrong, it cannot be counted
                    unknown_seed[(r.source, t)] = unknown_seed.get((r.source, t), 0) + 1
                    continue
                if fooled(goal, seed, r.thresholds[t]):
                    continue  # B already misjudged the seed: nothing transferred
            n[r.source][t] += 1
            hits[r.source][t] += bool(fooled(goal, score, r.thresholds[t]))
    rate = {s: {t: (hits[s][t] / n[s][t] if n[s][t] else None) for t in targets} for s in sources}
    notes = [f"{k} of {s}'s examples not counted for {t}: {t} has no score for their seed"
             for (s, t), k in sorted(unknown_seed.items())]
    return TransferMatrix(sources, targets, rate, n, goal, dropped, notes)
