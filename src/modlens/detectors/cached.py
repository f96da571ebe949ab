"""Cached scores: answers from a recorded table of text -> score (e.g. Perspective in NoisyHate).

Lets an audit include a detector that can no longer be called. A text that is not in the
table gets `None` (reported as missing by the engine), never a guess. Several
(text column, score column) pairs may point into one file: NoisyHate keeps Perspective's
score of the clean sentence in `perspective_clean` and of the perturbed one in
`perspective_perturbed`, so `mappings=[["clean", "perspective_clean"], ["perturbed",
"perspective_perturbed"]]` serves both.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Sequence

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores, config_hash
from modlens.errors import ModlensError
from modlens.paths import portable


class CachedScoreError(ModlensError, ValueError):
    """The score table cannot be used as configured (bad column, bad value, conflict)."""


def _rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as err:
                        raise CachedScoreError(f"{path}:{n}: not valid JSON: {err}") from None
        return rows
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter=delimiter))


def load_table(path: Path, mappings: Sequence[tuple[str, str]]) -> dict[str, float]:
    """text -> score from every (text_col, score_col) pair. Empty scores are skipped (unknown);
    the same text with two different scores is an error, not a silent pick."""
    rows = _rows(path)
    if rows:
        for text_col, score_col in mappings:
            for col in (text_col, score_col):
                if col not in rows[0]:
                    raise CachedScoreError(f"{path}: no column {col!r}; columns: {', '.join(map(str, rows[0]))}")
    table: dict[str, float] = {}
    for n, row in enumerate(rows, 2):
        for text_col, score_col in mappings:
            text, raw = row.get(text_col), row.get(score_col)
            if text is None or raw is None or str(raw).strip() == "":
                continue
            try:
                value = float(raw)
            except ValueError:
                raise CachedScoreError(f"{path}: row {n}: {score_col}={raw!r} is not a number") from None
            if math.isnan(value):
                continue
            text = str(text)
            if text in table and abs(table[text] - value) > 1e-9:
                raise CachedScoreError(f"{path}: row {n}: text has two scores ({table[text]} and {value}): {text[:60]!r}")
            table[text] = value
    return table


class CachedDetector(Detector):
    remote = False
    max_batch = 1024  # a dictionary lookup: large batches cost nothing

    def __init__(self, path: str | Path, mappings: Sequence[tuple[str, str]], *, name: str = "cached",
                 label: str = "toxicity", threshold: float = 0.5):
        self.path = Path(path)
        self.mappings = [(str(t), str(s)) for t, s in mappings]
        self.name = name
        self.label = label
        self.labels = (label,)
        self.toxicity_label = label
        self.threshold = threshold
        data = self.path.read_bytes()
        self.table = load_table(self.path, self.mappings)
        self.sha256 = hashlib.sha256(data).hexdigest()
        # The file's bytes, not where it lies, identify the data: the same table gives the same
        # version on every machine.
        portable = {k: v for k, v in self.config().items() if k not in ("path", "path_sha256")}
        self.version = f"{self.sha256[:12]}-{config_hash(portable)}"

    def config(self) -> dict[str, Any]:
        # the table by package-relative name and content hash, never by its folder (logs travel in bundles)
        return {"path": portable(self.path), "path_sha256": self.sha256, "mappings": [list(m) for m in self.mappings],
                "label": self.label, "threshold": self.threshold, "entries": len(self.table)}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        out: list[LabelScores | None] = []
        for text in texts:
            value = self.table.get(text)
            out.append(None if value is None else {self.label: value})
        return out


def create(path: str | None = None, text_col: str | None = None, score_col: str | None = None,
           mappings: Sequence[Sequence[str]] | None = None, name: str = "cached", label: str = "toxicity",
           threshold: float = 0.5) -> CachedDetector:
    """`path` plus either `text_col`/`score_col` or `mappings` (a list of [text_col, score_col])."""
    if not path:  # named with the columns still missing, none that were given
        columns = [] if mappings else [k for k, v in (("text_col", text_col), ("score_col", score_col)) if not v]
        if len(columns) == 2:
            columns = ["text_col and score_col (or mappings)"]
        raise DetectorUnavailable.needs_options("cached", ["path", *columns],
                                                "set options.path to a CSV/TSV/JSONL file with text and score columns")
    pairs: list[tuple[str, str]] = [tuple(m) for m in (mappings or [])]  # type: ignore[misc]
    if text_col or score_col:
        if not (text_col and score_col):
            raise DetectorUnavailable("error", "cached: give both text_col and score_col",
                                      "set options.text_col and options.score_col")
        pairs.append((text_col, score_col))
    if not pairs or any(len(p) != 2 for p in pairs):
        raise DetectorUnavailable("error", "cached: no (text column, score column) pair given",
                                  "set text_col/score_col, or mappings = [[text_col, score_col], ...]")
    if not Path(path).is_file():
        from modlens.paths import SHORTHANDS, find_data
        shipped = find_data(SHORTHANDS[path]) if path in SHORTHANDS else None  # e.g. path = "noisyhate"
        if shipped is None:
            raise DetectorUnavailable("missing_weights", f"cached: score table not found: {path}",
                                      "point options.path at an existing CSV/TSV/JSONL file or a dataset name")
        path = str(shipped)
    try:
        return CachedDetector(path, pairs, name=name, label=label, threshold=threshold)
    except CachedScoreError as err:
        raise DetectorUnavailable("error", f"cached: {err}", "fix the column names or values in the score table") from err
