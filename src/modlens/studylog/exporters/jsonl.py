"""JSON Lines: one object per row, NULL as null, JSON columns kept as strings (as in CSV/Parquet)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from modlens.studylog.tables import ExportTable

EXTENSION = ".jsonl"


def write(path: Path, table: ExportTable, rows: Iterable[tuple[Any, ...]]) -> int:
    names = [c.name for c in table.columns]
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(dict(zip(names, row)), ensure_ascii=False) + "\n")
            n += 1
    return n
