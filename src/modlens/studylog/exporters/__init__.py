"""Export formats, one small module each, registered here.

A format module defines `EXTENSION` and `write(path, table, rows) -> int`, where `rows` is an
iterable of tuples in `table.columns` order, already typed (None for NULL), and the return
value is the number of rows written."""
from __future__ import annotations

import importlib
from types import ModuleType

# format name -> module in modlens.studylog.exporters
FORMATS: dict[str, str] = {
    "csv": "csv",
    "jsonl": "jsonl",
    "parquet": "parquet",
}


def get(name: str) -> ModuleType:
    if name not in FORMATS:
        raise ValueError(f"unknown export format {name!r}; choose one of: {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{FORMATS[name]}")
