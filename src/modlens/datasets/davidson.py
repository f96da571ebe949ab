"""Davidson et al. 2017 tweets: `class` 0 hate speech, 1 offensive, 2 neither. `toxic` is 1 for
hate or offensive (the Perspective definition of toxicity covers both)."""
from __future__ import annotations

from pathlib import Path

from modlens.datasets.base import Dataset, DatasetItem, read_rows, require_columns

CLASSES = {"0": "hate_speech", "1": "offensive_language", "2": "neither"}


def read(path: Path, **_: object) -> Dataset:
    if path.is_dir():
        path = path / "labeled_data.csv"
    rows = read_rows(path)
    require_columns(path, rows, ["tweet", "class"])
    items = []
    for n, row in enumerate(rows):
        key = str(row.get("") or row.get("id") or n)
        cls = str(row["class"]).strip()
        if cls not in CLASSES:
            raise ValueError(f"{path}: row {n + 2}: class {cls!r} is not 0, 1 or 2")
        labels = {"class": CLASSES[cls], "toxic": "0" if cls == "2" else "1"}
        for col in ("count", "hate_speech", "offensive_language", "neither"):
            if row.get(col) not in (None, ""):
                labels[f"votes_{col}" if col != "count" else "raters"] = row[col]
        items.append(DatasetItem(key=f"tweet-{key}", text=row["tweet"], labels=labels))
    return Dataset("davidson", path, items)
