"""SASS (Piedras et al., Critical Perspectives; not shipped: its repository has no licence), read from a user path.

Expected layout (TSV or CSV, header row; column names matched case-insensitively, the first
alias found wins; the released files' names are `tag`, `human_toxicity`, `perspective_avg_toxicity`):
- text:      `text` | `comment` | `example` | `sentence`
- category:  `category` (Blackmail, Classism, Exclusionary, Gaslighting, Misogyny, Sarcasm,
             Sexual Harassment, Stereotyping, False Positive, Neutral)
- type:      `tag` | `type` | `filtered` (Filtered / Unfiltered; True/False)
- human:     `human_toxicity` | `human` | `human_score` | `human toxicity` — the z-normalized human
             score in [0, 1] (a percentage such as `72.4%` is accepted); `toxicity` too in a file whose
             columns are exactly the released `norm_human_toxicity_scores.csv`'s (toxicity, category,
             tag, text; under any file name, which decides nothing), since elsewhere a bare
             `toxicity` may be a detector's score (`--label 'toxicity>0.5'` makes it gold in any file). When absent, per-author 0-10
             ratings in columns named `rater_*` / `annotator_*` / `author_*` are z-normalized per
             author, averaged per text and min-max scaled to [0, 1], as the paper describes. With
             neither, the file is read as "categories only": no human score, no gold label.
- optional:  `perspective_avg_toxicity` | `toxicity_score` | `toxicity score` | `perspective`
             (Perspective's recorded score, as in the released `toxicity_benchmark_scores.csv`),
             `gpt_zero_shot_mode` / `gpt_one_shot_mode` / `gpt_few_shot_mode` (GPT-3's recorded 0/1
             answers, as in the released `final_experiment_results.csv`), `expected toxicity`.
Labels: `category`, `filtered`, `human_score`, `toxic` = human score > 0.5 (the paper's binarization),
and `<system>_recorded` per recorded system (`perspective_recorded`, `gpt-3-zero-shot_recorded`, …).
Recorded columns of plain numbers are also offered as `recorded` detectors (`recorded_name`): the
column the paper's tables use (`perspective_avg_toxicity`) or a bare `perspective` is `perspective`,
another Perspective column `perspective-<column>` (`perspective-toxicity_score`), so two released
files never give two detectors of one name; GPT-3's are `gpt-3-zero-shot`, `gpt-3-one-shot`, `gpt-3-few-shot`.
The released data is several files of this layout (all `dataset:sass`): rows are keyed by the
file's content hash and row number (`base.row_key`), so each file's rows are comments of their own.
A file is the data set `sass` only when its bytes are one of the released files' (the catalog pins
their SHA-256, `base.catalog_name`); any other file in this layout (an edited copy, a subset, your own
ratings) is named by its content and is never pooled with SASS or cited as it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from statistics import mean, pstdev

from modlens.datasets.base import (NO_GOLD, Dataset, DatasetError, DatasetItem, catalog_name, file_digest, read_rows,
                                   row_key)
from modlens.datasets.gold import GoldSpec, gold_label

ALIASES = {
    "text": ("text", "comment", "example", "sentence"),
    "category": ("category",),
    "type": ("tag", "type", "filtered", "subset"),
    "human": ("human_toxicity", "human", "human_score", "human score", "human toxicity"),
    "perspective": ("perspective_avg_toxicity", "toxicity_score", "toxicity score", "perspective", "perspective_score",
                    "perspective_toxicity"),
    "expected": ("expected toxicity", "expected_toxicity", "expected"),
    "gpt-3-zero-shot": ("gpt_zero_shot_mode", "gpt_zero_shot"),
    "gpt-3-one-shot": ("gpt_one_shot_mode", "gpt_one_shot"),
    "gpt-3-few-shot": ("gpt_few_shot_mode", "gpt_few_shot"),
}
# the systems whose scores a file may record (the paper's Table 3 rows), each a role of ALIASES
SYSTEMS = ("perspective", "gpt-3-zero-shot", "gpt-3-one-shot", "gpt-3-few-shot")
PAPER_PERSPECTIVE = ("perspective_avg_toxicity", "perspective")  # Perspective columns named plain `perspective`
RATER_PREFIXES = ("rater_", "annotator_", "author_")
HUMAN_FILE_COLUMN = "toxicity"  # the human score's name in the released norm_human_toxicity_scores.csv
HUMAN_FILE_COLUMNS = (HUMAN_FILE_COLUMN, "category", "tag", "text")  # that file's header, in any order


def _number(raw: object, where: str) -> float:
    s = str(raw).strip()
    try:
        return float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise DatasetError(f"{where}: {raw!r} is not a number") from None


def find_column(columns: list[str], role: str) -> str | None:
    """The file's column for a role of `ALIASES` (the first alias present, case-insensitive)."""
    lower = {c.lower().strip(): c for c in columns}
    return next((lower[a] for a in ALIASES[role] if a in lower), None)


def human_column(columns: list[str]) -> str | None:
    """The human score's column: an alias of `ALIASES["human"]`, else a bare `toxicity` when the
    columns are exactly the released human-score file's (`HUMAN_FILE_COLUMNS`). The file's name
    decides nothing: a renamed copy still has its human scores, and a file that merely has "human"
    in its name does not make a `toxicity` column gold labels."""
    found = find_column(columns, "human")
    if found or {c.lower().strip() for c in columns} != set(HUMAN_FILE_COLUMNS):
        return found
    return next((c for c in columns if c.lower().strip() == HUMAN_FILE_COLUMN), None)


def human_scores_from_raters(rows: list[dict[str, Any]], rater_cols: list[str], path: Path) -> list[float]:
    """Per-author z-scores, averaged per text, min-max scaled to [0, 1]."""
    z_by_col = {}
    for col in rater_cols:
        vals = [_number(r[col], f"{path}: {col}") for r in rows]
        mu, sd = mean(vals), pstdev(vals) or 1.0
        z_by_col[col] = [(v - mu) / sd for v in vals]
    avg = [mean(z_by_col[c][i] for c in rater_cols) for i in range(len(rows))]
    lo, hi = min(avg), max(avg)
    return [(a - lo) / (hi - lo) if hi > lo else 0.5 for a in avg]


def recorded_label(system: str) -> str:
    """The label holding a system's recorded score ("perspective" -> "perspective_recorded")."""
    return f"{system}_recorded"


def recorded_name(system: str, column: str) -> str:
    """The `recorded` detector's name for a system's column (see the module's docstring)."""
    if system != "perspective" or column.lower().strip() in PAPER_PERSPECTIVE:
        return system
    return f"perspective-{column.strip().lower().replace(' ', '_')}"


def _filtered(raw: object) -> str:
    s = str(raw).strip().lower()
    if s in ("filtered", "true", "1", "yes"):
        return "filtered"
    if s in ("unfiltered", "false", "0", "no"):
        return "unfiltered"
    return s


def _is_number(raw: object) -> bool:
    try:
        float(str(raw))
        return True
    except ValueError:
        return False


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None, **_: object) -> Dataset:
    """Read whole: per-author z-scores need every row."""
    rows = read_rows(path, encoding)
    if not rows:
        raise DatasetError(f"{path}: no rows")
    columns = list(rows[0])
    text_col, cat_col = find_column(columns, "text"), find_column(columns, "category")
    human_col = human_column(columns)
    rater_cols = [c for c in columns if c.lower().startswith(RATER_PREFIXES)]
    if not text_col or not cat_col:
        raise DatasetError(f"{path}: a SASS file needs a text and a category column (and a human score "
                           f"column, or rater_* columns); has: {', '.join(columns)} — see docs/DATASETS.md")
    if label is not None and label.column and label.column not in columns:
        raise DatasetError(f"{path}: --label: no column {label.column!r}; has: {', '.join(columns)}")
    human: list[float | None]
    if human_col:
        human = [_number(r[human_col], f"{path}: row {i + 2}: {human_col}") if str(r[human_col]).strip() else None
                 for i, r in enumerate(rows)]  # an empty cell: no human score for that text
        outside = next(((i, h) for i, h in enumerate(human) if h is not None and not 0 <= h <= 1), None)
        if outside:
            raise DatasetError(f"{path}: row {outside[0] + 2}: {human_col} = {outside[1]:g} is outside [0, 1]; "
                               "SASS human scores are z-normalized and scaled to [0, 1] (a percentage needs its %)",
                               fix="rescale the column, or give the raw 0-10 ratings as rater_* columns")
    elif rater_cols:
        human = list(human_scores_from_raters(rows, rater_cols, path))
    else:
        human = [None] * len(rows)
    type_col, exp_col = find_column(columns, "type"), find_column(columns, "expected")
    recorded = {system: col for system in SYSTEMS if (col := find_column(columns, system))}
    items, digest = [], file_digest(path)
    for i, (row, score) in enumerate(zip(rows, human)):
        labels: dict[str, object] = {"category": row[cat_col].strip()}
        if score is not None:
            labels.update({"human_score": f"{score:.6g}", "toxic": "1" if score > 0.5 else "0"})
        if label is not None:
            labels.pop("toxic", None)
            toxic = gold_label(label, row, f"{path}: row {i + 2}") if label.column else None
            if toxic is not None:
                labels["toxic"] = str(toxic)
        if type_col:
            labels["filtered"] = _filtered(row[type_col])
        for system, col in recorded.items():
            if str(row[col]).strip():
                labels[recorded_label(system)] = f"{_number(row[col], f'{path}: row {i + 2}: {col}'):.6g}"
        if exp_col:
            labels["expected_toxicity"] = row[exp_col]
        items.append(DatasetItem(key=row_key(digest, i), text=row[text_col], labels=labels))
    name, why = catalog_name("sass", path, digest)
    return Dataset(name, path, items, notes=_notes(human_col, rater_cols, label, recorded) + ([why] if why else []),
                   recorded_scores=_recorded(rows, text_col, recorded), gold=_definition(human_col, rater_cols, label),
                   source_id=digest)


def _definition(human_col: str | None, rater_cols: list[str], label: GoldSpec | None) -> str:
    """The gold label's definition (`Dataset.gold`)."""
    if label is not None:
        return label.definition()
    if human_col:
        return f"{human_col} > 0.5"
    if rater_cols:
        return f"mean z-score of {', '.join(rater_cols)}, min-max scaled, > 0.5"
    return NO_GOLD


def _notes(human_col: str | None, rater_cols: list[str], label: GoldSpec | None, recorded: dict[str, str]) -> list[str]:
    if label is not None:
        gold = label.describe()
    elif human_col:
        gold = f"toxic = {human_col} > 0.5 (the paper's binarization)"
    elif rater_cols:
        gold = f"toxic = human score > 0.5, the human score from {len(rater_cols)} raters' z-scores"
    else:
        gold = ("none: categories only (no human scores in this file): comments with their category labels; "
                "the SASS section and the gold-label metrics need human scores")
    notes = [f"gold label: {gold}"]
    if recorded:
        notes.append("recorded scores stored as labels: " + ", ".join(
            f"{col} -> {recorded_label(system)}" for system, col in recorded.items())
            + "; --detectors recorded scores with them as " + ", ".join(recorded_name(s, c) for s, c in recorded.items()))
    return notes


def _recorded(rows: list[dict[str, Any]], text_col: str, recorded: dict[str, str]) -> dict[str, list[list[str]]]:
    """Each recorded column as a cached detector, when it holds plain numbers (the cached table
    reads them as they are; a percentage stays a label only)."""
    return {recorded_name(system, col): [[text_col, col]] for system, col in recorded.items()
            if all(_is_number(r[col]) for r in rows if str(r[col]).strip())}
