"""CSV files that tests audit: a header and rows, written as a researcher's tool would."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Sequence


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def labelled_csv(path: Path, rows: Iterable[Sequence[Any]]) -> Path:
    """`text,toxic` rows: the smallest labelled file an audit reads."""
    return write_csv(path, ["text", "toxic"], rows)
