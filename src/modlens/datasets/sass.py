"""SASS (seed 004, Piedras et al.; not shipped: its repository has no licence), read from a user path.

Expected layout (TSV or CSV, header row; column names matched case-insensitively, the first
alias found wins):
- text:      `text` | `comment` | `example`
- category:  `category` (Blackmail, Classism, Exclusionary, Gaslighting, Misogyny, Sarcasm,
             Sexual Harassment, Stereotyping, False Positive, Neutral)
- type:      `type` | `filtered` (Filtered / Unfiltered; True/False)
- human:     `human` | `human_score` | `human toxicity` — the z-normalized human score in [0, 1]
             (a percentage such as `72.4%` is accepted). When absent, per-author 0-10 ratings in
             columns named `rater_*` / `annotator_*` / `author_*` are z-normalized per author,
             averaged per text and min-max scaled to [0, 1], as the paper describes.
- optional:  `toxicity score` | `perspective` (Perspective's recorded score), `expected toxicity`.
Labels: `category`, `filtered`, `human_score`, `toxic` = human score > 0.5 (the paper's binarization).
"""
from __future__ import annotations

from pathlib import Path
from statistics import mean, pstdev

from modlens.datasets.base import Dataset, DatasetError, DatasetItem, read_rows

ALIASES = {
    "text": ("text", "comment", "example", "sentence"),
    "category": ("category",),
    "type": ("type", "filtered", "subset"),
    "human": ("human", "human_score", "human score", "human toxicity", "human_toxicity"),
    "perspective": ("toxicity score", "perspective", "perspective_score"),
    "expected": ("expected toxicity", "expected_toxicity", "expected"),
}
RATER_PREFIXES = ("rater_", "annotator_", "author_")


def _number(raw: object, where: str) -> float:
    s = str(raw).strip()
    try:
        return float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise DatasetError(f"{where}: {raw!r} is not a number") from None


def _find(columns: list[str], role: str) -> str | None:
    lower = {c.lower().strip(): c for c in columns}
    return next((lower[a] for a in ALIASES[role] if a in lower), None)


def human_scores_from_raters(rows: list[dict], rater_cols: list[str], path: Path) -> list[float]:
    """Per-author z-scores, averaged per text, min-max scaled to [0, 1]."""
    z_by_col = {}
    for col in rater_cols:
        vals = [_number(r[col], f"{path}: {col}") for r in rows]
        mu, sd = mean(vals), pstdev(vals) or 1.0
        z_by_col[col] = [(v - mu) / sd for v in vals]
    avg = [mean(z_by_col[c][i] for c in rater_cols) for i in range(len(rows))]
    lo, hi = min(avg), max(avg)
    return [(a - lo) / (hi - lo) if hi > lo else 0.5 for a in avg]


def _filtered(raw: object) -> str:
    s = str(raw).strip().lower()
    if s in ("filtered", "true", "1", "yes"):
        return "filtered"
    if s in ("unfiltered", "false", "0", "no"):
        return "unfiltered"
    return s


def read(path: Path, **_: object) -> Dataset:
    rows = read_rows(path)
    if not rows:
        raise DatasetError(f"{path}: no rows")
    columns = list(rows[0])
    text_col, cat_col = _find(columns, "text"), _find(columns, "category")
    human_col = _find(columns, "human")
    rater_cols = [c for c in columns if c.lower().startswith(RATER_PREFIXES)]
    if not text_col or not cat_col or not (human_col or rater_cols):
        raise DatasetError(f"{path}: a SASS file needs a text, a category and a human score column "
                           f"(or rater_* columns); has: {', '.join(columns)} — see docs/ANALYSIS.md")
    if human_col:
        human = [_number(r[human_col], f"{path}: row {i + 2}") for i, r in enumerate(rows)]
    else:
        human = human_scores_from_raters(rows, rater_cols, path)
    type_col, persp_col, exp_col = _find(columns, "type"), _find(columns, "perspective"), _find(columns, "expected")
    items = []
    for i, (row, score) in enumerate(zip(rows, human)):
        labels = {"category": row[cat_col].strip(), "human_score": f"{score:.6g}", "toxic": "1" if score > 0.5 else "0"}
        if type_col:
            labels["filtered"] = _filtered(row[type_col])
        if persp_col and str(row[persp_col]).strip():
            labels["perspective_recorded"] = f"{_number(row[persp_col], f'{path}: row {i + 2}'):.6g}"
        if exp_col:
            labels["expected_toxicity"] = row[exp_col]
        items.append(DatasetItem(key=f"row-{i}", text=row[text_col], labels=labels))
    return Dataset("sass", path, items)
