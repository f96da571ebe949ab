"""What a dataset reader yields: comments with their labels and any human-made variants.

Every reader turns one file layout into `DatasetItem`s. `key` is stable within the file
(a row number or the dataset's own id), so re-running an audit finds the same comments.
`labels` always includes `toxic` ("1"/"0") when the dataset says whether the text is toxic:
the robustness and SASS sections of the report compare detectors against it.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from modlens.perturb.base import Variant


class DatasetError(ValueError):
    """The file does not have the layout its reader expects; the message says what is missing."""


@dataclass
class DatasetItem:
    key: str
    text: str
    labels: dict[str, Any] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)


@dataclass
class Dataset:
    name: str            # platform becomes f"dataset:{name}"
    path: Path           # the file read (one page per file)
    items: list[DatasetItem]
    meta: dict[str, Any] = field(default_factory=dict)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV, TSV or JSONL file as dicts (JSONL: one object per line)."""
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DatasetError(f"{path}:{n}: not valid JSON ({err.msg}); expected one object per line") from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{n}: expected a JSON object per line")
                rows.append(obj)
        return rows
    delimiter = "\t" if suffix in (".tsv", ".tab") else ","
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter=delimiter))


def require_columns(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        raise DatasetError(f"{path}: no rows")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}; has: {', '.join(map(str, rows[0]))}")


def word_span(text: str, index: int) -> tuple[int, int] | None:
    """Character span of the `index`-th whitespace token of `text`."""
    pos = 0
    for i, token in enumerate(text.split()):
        start = text.index(token, pos)
        pos = start + len(token)
        if i == index:
            return (start, pos)
    return None


def iter_nonempty(items: list[DatasetItem]) -> Iterator[DatasetItem]:
    return (it for it in items if it.text.strip())
