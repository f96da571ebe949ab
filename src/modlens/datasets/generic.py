"""Any CSV/TSV/JSONL file with a text column; other columns (or only `label_cols`) become labels.
A column named `toxic` (0/1) is the gold label the robustness section compares against."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from modlens.datasets.base import Dataset, DatasetError, DatasetItem, read_rows, require_columns


def read(path: Path, *, text_col: str = "text", id_col: str | None = None,
         label_cols: Sequence[str] | None = None, name: str | None = None, **_: object) -> Dataset:
    rows = read_rows(path)
    require_columns(path, rows, [text_col] + ([id_col] if id_col else []) + list(label_cols or []))
    items, seen = [], set()
    for n, row in enumerate(rows):
        text = row.get(text_col)
        if not isinstance(text, str):
            raise DatasetError(f"{path}: row {n + 1}: {text_col!r} is not a string")
        key = str(row[id_col]) if id_col else f"row-{n}"
        if key in seen:
            raise DatasetError(f"{path}: row {n + 1}: duplicate id {key!r} in column {id_col!r}")
        seen.add(key)
        cols = label_cols if label_cols is not None else [c for c in row if c not in (text_col, id_col)]
        labels = {c: row[c] for c in cols if row.get(c) is not None and not isinstance(row[c], (dict, list))}
        items.append(DatasetItem(key=key, text=text, labels=labels))
    return Dataset(name or path.stem, path, items)
