"""Optional monotone maps from a detector's scores onto Perspective's scale, one per attribute.

Fitted (isotonic regression) on recorded Perspective scores: NoisyHate's shipped `dev.csv`
(`perspective_clean` / `perspective_perturbed`), a SASS file (`perspective_avg_toxicity`), or a
user's own cached responses (CSV/JSONL with a text and a score column, or `response` objects as
Perspective returned them). The pairs are split (seeded); the map is fitted on one part and its
agreement with Perspective measured on the held-out part, before and after: Spearman's rho, mean
absolute difference, and agreement at the thresholds communities use (0.5, 0.7, 0.8, 0.9: both
scores on the same side). A map is stored with the detector's name, version and the label it was fitted on, and used only
for that detector, version and label (a map of a detector's `toxicity` says nothing of its
`insult`), and only when a request (or the study) asks for calibrated scores.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from modlens import paths
from modlens.errors import ModlensError

THRESHOLDS = (0.5, 0.7, 0.8, 0.9)


class CalibrationError(ModlensError, ValueError):
    """The recorded scores cannot be used (no such file or column, too few pairs)."""


@dataclass
class Agreement:
    pairs: int
    spearman: float | None
    mean_abs_diff: float
    at: dict[str, float]  # threshold -> share of pairs on the same side of it

    @classmethod
    def of(cls, ours: Sequence[float], theirs: Sequence[float]) -> "Agreement":
        from scipy.stats import spearmanr

        rho = float(spearmanr(ours, theirs).statistic) if len(ours) > 2 else math.nan
        n = len(ours)
        return cls(n, None if math.isnan(rho) else round(rho, 4),
                   round(sum(abs(a - b) for a, b in zip(ours, theirs)) / n, 4),
                   {str(t): round(sum((a >= t) == (b >= t) for a, b in zip(ours, theirs)) / n, 4) for t in THRESHOLDS})


@dataclass
class Calibration:
    attribute: str
    detector: str          # the detector's name
    version: str           # the detector version the map was fitted for (and is applied to)
    source: str            # where the Perspective scores came from
    x: list[float]         # isotonic breakpoints: detector score -> Perspective score, linear in between
    y: list[float]
    fitted_at: str
    seed: int
    holdout: float
    raw: Agreement         # held-out agreement of the uncalibrated scores
    calibrated: Agreement  # ... and of the calibrated ones
    extra: dict[str, Any] = field(default_factory=dict)
    # the detector's label whose scores were fitted; None: a map stored before labels were kept,
    # which no call uses (it cannot say which label it maps)
    label: str | None = None

    @property
    def id(self) -> str:
        return hashlib.sha256(json.dumps([self.x, self.y]).encode()).hexdigest()[:12]

    def apply(self, score: float) -> float:
        import numpy as np

        return float(np.interp(score, self.x, self.y))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Calibration":
        d = {k: v for k, v in d.items() if k != "id"}
        return cls(**{**d, "raw": Agreement(**d["raw"]), "calibrated": Agreement(**d["calibrated"])})


def fit(attribute: str, detector: str, version: str, ours: Sequence[float], theirs: Sequence[float], *,
        source: str, label: str, holdout: float = 0.3, seed: int = 0) -> Calibration:
    """An isotonic map fitted on (1 - holdout) of the pairs, its agreement measured on the rest."""
    from sklearn.isotonic import IsotonicRegression

    pairs = [(float(a), float(b)) for a, b in zip(ours, theirs)]
    if len(pairs) < 10:
        raise CalibrationError(f"{len(pairs)} scored pairs; a calibration needs at least 10")
    if not 0 < holdout < 1:
        raise CalibrationError("holdout must be between 0 and 1 (the share of pairs kept for the agreement)")
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_test = max(3, round(len(pairs) * holdout))
    test, train = [pairs[i] for i in order[:n_test]], [pairs[i] for i in order[n_test:]]
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True)
    iso.fit([a for a, _ in train], [b for _, b in train])
    xs, ys = [float(v) for v in iso.X_thresholds_], [float(v) for v in iso.y_thresholds_]
    theirs_test = [b for _, b in test]
    raw = Agreement.of([a for a, _ in test], theirs_test)
    cal = Calibration(attribute, detector, version, source, xs, ys,
                      datetime.now(timezone.utc).isoformat(timespec="seconds"), seed, holdout, raw, raw,
                      {"train_pairs": len(train)}, label)
    cal.calibrated = Agreement.of([cal.apply(a) for a, _ in test], theirs_test)
    return cal


# --- where maps live ---------------------------------------------------------------------------
def folder() -> Path:
    return paths.home() / "perspective-calibrations"


def _file(attribute: str, detector: str, version: str, label: str) -> Path:
    key = json.dumps([detector, version, label])
    return folder() / f"{attribute}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def save(cal: Calibration) -> Path:
    if cal.label is None:
        raise CalibrationError("a calibration must name the detector label it was fitted on")
    path = _file(cal.attribute, cal.detector, cal.version, cal.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(cal.to_dict(), indent=2))
    tmp.replace(path)
    return path


def load(attribute: str, detector: str, version: str, label: str) -> Calibration | None:
    """The map fitted for this attribute on exactly this detector (name), version and label, if any."""
    path = _file(attribute, detector, version, label)
    if not path.is_file():
        return None
    cal = Calibration.from_dict(json.loads(path.read_text()))
    same = (cal.attribute, cal.detector, cal.version, cal.label) == (attribute, detector, version, label)
    return cal if same else None


class Maps:
    """Loaded maps, re-read when their file changes (a new fit takes effect without a restart)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str, str], tuple[int | None, Calibration | None]] = {}

    def get(self, attribute: str, detector: str, version: str, label: str) -> Calibration | None:
        key = (attribute, detector, version, label)
        try:
            stamp: int | None = _file(*key).stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        seen = self._seen.get(key)
        if seen is None or seen[0] != stamp:
            seen = (stamp, load(*key) if stamp is not None else None)
            self._seen[key] = seen
        return seen[1]


def stored() -> list[Calibration]:
    return [Calibration.from_dict(json.loads(p.read_text())) for p in sorted(folder().glob("*.json"))]


# --- recorded Perspective scores -----------------------------------------------------------------
TEXT_COLUMNS = ("text", "comment", "comment_text", "sentence", "example")
# a column taken as Perspective's score of an attribute without --score-column: one whose name says
# Perspective and that attribute, or Perspective's (or a score) alone. A column named like the attribute
# (`toxicity`, `insult`) is not: Jigsaw's, Civil Comments' and NoisyHate's files name their annotators'
# shares so. SASS's `perspective_avg_toxicity` and NoisyHate's columns are Perspective's TOXICITY only.
SCORE_COLUMNS = ("perspective", "perspective_score", "score")
TOXICITY_COLUMNS = ("perspective_avg_toxicity", "perspective_toxicity")


def _score_columns(attribute: str) -> tuple[str, ...]:
    a = attribute.lower()
    return (f"perspective_{a}", f"perspective_{a}_score", *(TOXICITY_COLUMNS if attribute == "TOXICITY" else ()),
            *SCORE_COLUMNS)


def _number(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if 0 <= v <= 1 else None


def _response_score(response: Any, attribute: str) -> float | None:
    try:
        return _number(response["attributeScores"][attribute]["summaryScore"]["value"])
    except (KeyError, TypeError):
        return None


def recorded_pairs(source: str, attribute: str = "TOXICITY", *, text_column: str | None = None,
                   score_column: str | None = None) -> list[tuple[str, float]]:
    """(text, Perspective score) pairs from `source`: `noisyhate` (the shipped or fetched dev.csv),
    `sass` (a fetched SASS file), or a CSV/TSV/JSONL path. Rows without a usable score are skipped."""
    from modlens.datasets.base import read_rows

    if source in ("noisyhate", "sass"):
        found = paths.find_data(paths.SHORTHANDS[source])
        if found is None:
            raise CalibrationError(f"{source}: not found; `modlens data fetch {source}` downloads it")
        path = found
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise CalibrationError(f"{source}: no such file")
    rows = read_rows(path)
    if not rows:
        raise CalibrationError(f"{path}: no rows")
    columns = list(rows[0])
    lower = {c.lower(): c for c in columns}
    noisyhate = {"perspective_clean", "clean"} <= set(lower) and text_column is None and score_column is None
    if noisyhate and attribute != "TOXICITY":
        raise CalibrationError(f"{path}: NoisyHate's layout records Perspective's TOXICITY only (perspective_clean, "
                               f"perspective_perturbed), not {attribute}: give a file of Perspective's {attribute} "
                               "scores (its other columns are Civil Comments' annotators, not Perspective)")
    if noisyhate:
        mappings = [(lower["clean"], lower["perspective_clean"])]
        if {"perturbed", "perspective_perturbed"} <= set(lower):
            mappings.append((lower["perturbed"], lower["perspective_perturbed"]))
    else:
        text = text_column or next((lower[c] for c in TEXT_COLUMNS if c in lower), None)
        score = score_column or next((lower[c] for c in _score_columns(attribute) if c in lower), None)
        if text is None or text not in columns:
            raise CalibrationError(f"{path}: no text column (give --text-column; columns: {', '.join(columns)})")
        if score is not None and score not in columns:
            raise CalibrationError(f"{path}: no column {score!r} (columns: {', '.join(columns)})")
        if score is None and "response" not in lower:
            raise CalibrationError(f"{path}: no Perspective {attribute} score column (looked for "
                                   f"{', '.join(_score_columns(attribute))}, or whole responses in `response`; "
                                   f"give --score-column; columns: {', '.join(columns)})")
        mappings = [(text, score or lower["response"])]
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for row in rows:
        for text_col, score_col in mappings:
            value = row.get(score_col)
            recorded = _response_score(value, attribute) if isinstance(value, dict) else _number(value)
            said = row.get(text_col)
            if recorded is not None and isinstance(said, str) and said.strip() and said not in seen:
                seen.add(said)
                out.append((said, recorded))
    return out


def fit_recorded(study: Any, attribute: str, source: str, *, detectors: dict[str, Any] | None = None,
                 holdout: float = 0.3, seed: int = 0, text_column: str | None = None,
                 score_column: str | None = None) -> Calibration:
    """Scores the recorded texts with the detector `attribute` maps to (study.toml `[perspective]`)
    through the engine's batchers, then `fit`s. `detectors`: prebuilt ones (tests) instead of the study's."""
    import asyncio

    from modlens.engine import Engine
    from modlens.perspective.attributes import resolve

    pairs = recorded_pairs(source, attribute, text_column=text_column, score_column=score_column)
    engine = Engine(study, detectors)

    async def score(key: str) -> list[Any]:
        try:
            return await engine.score([t for t, _ in pairs], only=[key])
        finally:
            await engine.close(detectors=detectors is None)

    try:
        src = resolve(study.perspective, engine.detectors).get(attribute)
        if src is None:
            raise CalibrationError(f"{attribute}: no detector of this study answers it; map it in study.toml "
                                   f"[perspective.attributes.{attribute}]")
        results = asyncio.run(score(src.detector))
    except BaseException:
        if detectors is None:
            for d in engine.detectors.values():
                d.close()
        raise
    det = engine.detectors[src.detector]
    ours, theirs = [], []
    for (_, recorded), per in zip(pairs, results):
        r = per[src.detector]
        if r.error is None and r.labels is not None and src.label in r.labels:
            ours.append(float(r.labels[src.label]))
            theirs.append(recorded)
    label = source if source in ("noisyhate", "sass") else Path(source).name
    return fit(attribute, det.name, det.version, ours, theirs, source=label, label=src.label, holdout=holdout, seed=seed)
