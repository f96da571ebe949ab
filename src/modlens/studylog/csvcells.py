"""CSV cells a spreadsheet opens as text: the one writer for every CSV modlens writes for a person
to open (exports, survey task files, report tables), and the one rule that reads them back.

A spreadsheet (Excel, LibreOffice Calc, Google Sheets) runs a cell that begins with `=`, `+`, `-`,
`@`, a tab or a carriage return as a formula, so a comment such as `=HYPERLINK("http://…","x")`
would run on the researcher's machine. OWASP's CSV-injection guidance: prefix such a cell with a
single quote, which the spreadsheet takes as "this is text"; RFC 4180 quoting (the csv module's)
does the rest.

The rule, so that reading back gives the exact text: a string cell that begins with any number
of `'` (none included) followed by a trigger character gets one more `'` in front. So `=x` is
written `'=x`, and a text that already was `'=x` is written `''=x`; `restore` takes one `'` off a
cell of that shape and leaves every other cell alone. Cells that are not strings (numbers, a
negative score) are written as they are: a spreadsheet reads `-0.5` as a number, not a formula.

Only modlens's own files are read back this way (`is_own_header`): a file from elsewhere keeps
every quote it has. Parquet and JSONL exports keep the exact text; they are not opened as sheets.
"""
from __future__ import annotations

import csv
import re
from typing import Any, Iterable, Sequence

TRIGGERS = "=+-@\t\r"
QUOTE = "'"
_ESCAPED = re.compile(r"'*[=+\-@\t\r]")     # what gets a quote in front when written
_WRITTEN = re.compile(r"'+[=+\-@\t\r]")     # what had one put there
# survey task files (study export-tasks --format survey): assignment, task, item<N>_id (or _ref), item<N>_text, …
_TASKS_ITEM = re.compile(r"item\d+_(id|ref|text)")


def neutralise(cell: Any) -> Any:
    """The cell as written: a string a spreadsheet would run gets a leading `'`; anything else as is."""
    if isinstance(cell, str) and _ESCAPED.match(cell):
        return QUOTE + cell
    return cell


def restore(cell: Any) -> Any:
    """The text `neutralise` was given, from what it wrote (for files `is_own_header` recognises)."""
    if isinstance(cell, str) and _WRITTEN.match(cell):
        return cell[1:]
    return cell


class SafeWriter:
    """`csv.writer` whose every cell goes through `neutralise` (same arguments, same methods)."""

    def __init__(self, fh: Any, **kwargs: Any) -> None:
        self._out = csv.writer(fh, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._out.writerow([neutralise(c) for c in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(fh: Any, **kwargs: Any) -> SafeWriter:
    """A CSV writer for files a person may open in a spreadsheet: use it for every such file."""
    return SafeWriter(fh, **kwargs)


def is_own_header(header: Sequence[str]) -> bool:
    """Whether a CSV with this header row is one modlens wrote through `writer`: an exported table
    of the study log (its exact columns) or a survey task file. Only those are `restore`d on reading."""
    from modlens.studylog.tables import EXPORT_TABLES, wide_table

    names = list(header)
    if names[:2] == ["assignment", "task"] and len(names) > 2 and all(_TASKS_ITEM.fullmatch(n) for n in names[2:]):
        return True
    if any(names == [c.name for c in t.columns] for t in EXPORT_TABLES):
        return True
    # the wide per-row table: its fixed columns, then a score and an in-sample column per detector
    detectors = [n.removeprefix("score:") for n in names if n.startswith("score:")]
    return names == [c.name for c in wide_table(detectors).columns]


def restore_row(row: Sequence[str]) -> list[str]:
    return [restore(c) for c in row]


__all__ = ["QUOTE", "TRIGGERS", "SafeWriter", "is_own_header", "neutralise", "restore", "restore_row", "writer"]
