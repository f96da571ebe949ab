"""The report's tables as data, so the HTML page, the CSV files and the LaTeX tables are three
renderings of the same cells and cannot disagree (`modlens report --format html|csv|latex`).

A section's `render` builds its tables with `sections.html.table(header, rows)`, which turns every
cell into its text once (`Cell`: the figure as the page prints it, e.g. `0.812 [0.790, 0.833]`)
and, while the report is rendered (`collecting`), records the table. The report frame then
numbers the tables in the order the page shows them and captions each with the headings above it
(`analysis/report.py`, `render`); `write_csv` and `to_latex` write those same tables. A table
that a section builds but does not put on the page is not numbered and not written.

Each table also carries the page's notes on its part of the page (`Table.notes`: the notes under
the same headings, e.g. which rows a figure rests on, which versions a column pools).

CSV: one file per table (`NN-caption.csv`, header row, the cells' text), an `index.csv` naming
each file's table, caption and notes, and `references.csv`; cells go through the one spreadsheet-safe
writer (`studylog/csvcells.py`), a number's cell is written as the number. LaTeX: one file with
a booktabs `table` per table (a `longtable` above `LONG` rows), captioned and labelled
`tab:modlens-NN` (a column with a long cell or head wraps in a paragraph column), its notes in
small print below it, and the
references as a `thebibliography` whose keys `\\cite` can name. Checked by hand with pdfLaTeX
(TeX Live 2022: booktabs, longtable): the files compile.
"""
from __future__ import annotations

import contextvars
import csv
import html
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from modlens.studylog import csvcells

WRAP_AT = 40  # a text cell longer than this, or with a word longer than LONG_WORD, wraps (class wrap)
LONG_WORD = 18  # e.g. a long identifier: may break inside, where a number never does
LONG = 40  # LaTeX: tables with more rows than this are a longtable (breaks across pages)


def cell_text(v: Any, digits: int = 3) -> str:
    """A cell as the report prints it: None as an en dash, floats to `digits` decimals."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


@dataclass(frozen=True)
class Cell:
    text: str
    number: bool = False  # the cell is one number (int or float): CSV writes it as a number

    @classmethod
    def of(cls, v: Any) -> "Cell":
        return cls(cell_text(v), isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None)

    @property
    def wraps(self) -> bool:
        return len(self.text) > WRAP_AT or any(len(w) > LONG_WORD for w in self.text.split())


@dataclass
class Table:
    header: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    nowrap: tuple[int, ...] = ()  # columns whose cells never break on the page (an identifier read whole)
    number: int = 0  # its place on the page, 1, 2, …; 0 while not placed
    marker: str = field(default="", repr=False)  # where its HTML stands in the page, until numbered
    # the page's notes on its part of the page (under the same headings: e.g. which rows a figure
    # rests on), so a table written out for a paper says what the page says beside it
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> "Table":
        return cls(list(header), [[Cell.of(c) for c in r] for r in rows])

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        def td(i: int, c: Cell) -> str:
            kind = " class=nowrap" if i in self.nowrap else " class=wrap" if c.wraps else ""
            return f"<td{kind}>{html.escape(c.text)}</td>"
        body = "".join("<tr>" + "".join(td(i, c) for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        at = f" id={self.marker}" if self.marker else ""
        # a table fits its page (cells wrap: the report's CSS); should one still be wider, the wrapper
        # scrolls it inside the page instead of widening the page
        return f"<div class=tw{at}><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


_COLLECTED: contextvars.ContextVar[list[Table] | None] = contextvars.ContextVar("report_tables", default=None)
MARKER = "modlens-table-{}-"  # an id unlikely in any text a cell holds; replaced by t<number> once placed


def record(t: Table) -> None:
    """Record `t` when a report is being rendered (`collecting`), giving it a marker for its place."""
    found = _COLLECTED.get()
    if found is not None:
        t.marker = MARKER.format(len(found))
        found.append(t)


@contextmanager
def collecting() -> Iterator[list[Table]]:
    """Every table `sections.html.table` builds inside the block, in the order built."""
    found: list[Table] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


# --- CSV ---------------------------------------------------------------------------------------

class _Number:
    """A number's cell for the csv module: written as its text, never taken for a formula."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def slug(text: str, limit: int = 60) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:limit].rstrip("-") or "table"


def file_name(t: Table) -> str:
    return f"{t.number:02d}-{slug(t.caption)}.csv"


def _write(path: Path, rows: Sequence[Sequence[Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        csvcells.writer(fh).writerows(rows)
    tmp.replace(path)


def write_csv(tables: Sequence[Table], references: Sequence[dict[str, str]], out_dir: str | Path) -> list[Path]:
    """One CSV per table, `index.csv` and `references.csv` in `out_dir` (created); the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stale = _listed(out / "index.csv") - {file_name(t) for t in tables}
    written = []
    for t in tables:
        path = out / file_name(t)
        _write(path, [t.header, *[[_Number(c.text) if c.number else c.text for c in r] for r in t.rows]])
        written.append(path)
    _write(out / "index.csv", [["table", "file", "caption", "rows", "columns", "notes"],
                               *[[t.number, file_name(t), t.caption, len(t.rows), len(t.header), "\n".join(t.notes)]
                                 for t in tables]])
    _write(out / "references.csv", [["key", "citation", "reference"],
                                    *[[r["key"], r["citation"], r["reference"]] for r in references]])
    for name in stale:  # tables an earlier run wrote here that this report no longer has
        (out / name).unlink(missing_ok=True)
    return [*written, out / "index.csv", out / "references.csv"]


def _listed(index: Path) -> set[str]:
    """The table files an earlier `write_csv` listed in this folder's index.csv (only those: any
    other file in the folder is left alone)."""
    if not index.is_file():
        return set()
    rows = read_csv(index)
    return {r[1] for r in rows[1:] if len(r) > 1 and re.fullmatch(r"\d{2,}-[a-z0-9-]+\.csv", r[1])}


def read_csv(path: str | Path) -> list[list[str]]:
    """A table file as written, each cell's text back as the report printed it."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [csvcells.restore_row(r) for r in csv.reader(fh)]


# --- LaTeX -------------------------------------------------------------------------------------

# characters LaTeX reserves, then the report's few symbols outside what pdfLaTeX's utf8 input reads
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "—": "---",
          "\u00a0": "~", "≥": r"$\geq$", "≤": r"$\leq$", "α": r"$\alpha$", "Δ": r"$\Delta$", "×": r"$\times$",
          "±": r"$\pm$", "→": r"$\rightarrow$", "↳": r"$\hookrightarrow$", "…": r"\ldots{}", "·": r"$\cdot$",
          "⚠": r"\textbf{(!)}", "−": "-", "“": "``", "”": "''", "’": "'", "‘": "`"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


WRAP_COLUMN = 24  # LaTeX: a column with a longer cell or head wraps in a paragraph column this wide
PARAGRAPH = r"p{3.2cm}"


def _align(t: Table, col: int) -> str:
    """A paragraph column where a cell or the head is long (a page has no room for it on one line),
    else r for a column of figures (numbers, intervals, dashes), l for text."""
    cells = [r[col].text for r in t.rows if col < len(r) and r[col].text not in ("–", "")]
    if max((len(c) for c in [*cells, t.header[col]]), default=0) > WRAP_COLUMN:
        return PARAGRAPH
    return "r" if cells and all(re.match(r"[-\d.\[]", c) for c in cells) else "l"


def latex_table(t: Table) -> str:
    spec = "".join(_align(t, i) for i in range(len(t.header)))
    head = " & ".join(latex_escape(h) for h in t.header) + r" \\"
    body = [" & ".join(latex_escape(c.text) for c in r) + r" \\" for r in t.rows]
    caption = rf"\caption{{{latex_escape(t.caption)}}}\label{{tab:modlens-{t.number:02d}}}"
    notes = [r"{\footnotesize " + r"\par ".join(latex_escape(n) for n in t.notes) + r"\par}"] if t.notes else []
    if len(t.rows) > LONG:
        return "\n".join([rf"\begin{{longtable}}{{{spec}}}", caption + r" \\", r"\toprule", head, r"\midrule",
                          r"\endfirsthead", r"\toprule", head, r"\midrule", r"\endhead", *body, r"\bottomrule",
                          r"\end{longtable}", *notes])
    return "\n".join([r"\begin{table}[htbp]", r"\centering", r"\small", caption,
                      rf"\begin{{tabular}}{{{spec}}}", r"\toprule", head, r"\midrule", *body, r"\bottomrule",
                      r"\end{tabular}", *notes, r"\end{table}"])


def to_latex(tables: Sequence[Table], references: Sequence[dict[str, str]], source: str) -> str:
    """Every table and the references as one LaTeX file (`\\input` it, or copy a table out)."""
    out = [f"% modlens report tables: {source}",
           r"% needs \usepackage{booktabs} and \usepackage{longtable} (pdfLaTeX with utf8 input, or LuaLaTeX/XeLaTeX);",
           "% each table is labelled tab:modlens-NN, NN its number in the HTML report (its table id tNN);",
           r"% long cells wrap in p{3.2cm} columns; a table still wider than the text: \resizebox or a landscape page", ""]
    out += [latex_table(t) + "\n" for t in tables]
    if references:
        out += [r"\begin{thebibliography}{" + str(len(references)) + "}",
                *[rf"\bibitem{{{r['key']}}} {latex_escape(r['reference'])}" for r in references],
                r"\end{thebibliography}", ""]
    return "\n".join(out)
