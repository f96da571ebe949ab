"""CSV (RFC 4180, UTF-8, header row). NULL is an empty cell; booleans are 0/1 so every tool reads them.
A text a spreadsheet would run as a formula is written with a leading `'` (`studylog/csvcells.py`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from modlens.studylog import csvcells
from modlens.studylog.tables import ExportTable

EXTENSION = ".csv"


def write(path: Path, table: ExportTable, rows: Iterable[tuple[Any, ...]]) -> int:
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csvcells.writer(fh)
        out.writerow([c.name for c in table.columns])
        for row in rows:
            out.writerow(["" if v is None else int(v) if isinstance(v, bool) else v for v in row])
            n += 1
    return n
