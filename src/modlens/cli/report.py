"""write the analysis report (HTML or JSON) from the study log, or its tables for a paper (CSV, LaTeX)

`--format csv` writes a folder: one CSV per table of the HTML report (NN-caption.csv, NN its
number there, "Table NN"), index.csv and references.csv. `--format latex` writes one file of
booktabs tables (labels tab:modlens-NN) ending with the references. Every cell is the HTML
report's, intervals included: all three are written from the same tables (docs/ANALYSIS.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from modlens.cli.common import CliError, add_db_option, db_path, study_log_error


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_db_option(p)
    p.add_argument("--out", help="output file, or folder for csv (default: report.html, stdout for json, "
                                  "report-tables/ for csv, report-tables.tex for latex)")
    p.add_argument("--format", choices=["html", "json", "csv", "latex"], default="html",
                   help="html (the report), json (every figure, unrounded), csv or latex (the HTML report's tables)")
    p.add_argument("--label-set", dest="label_sets", action="append", default=[], metavar="ID_OR_DEFINITION",
                   help="the gold label set to use for its source, by id or definition (e.g. 'toxicity >= 0.5'); "
                        "repeatable (default: per source, the newest set; the report lists every set)")
    p.add_argument("--study", metavar="STUDY_ID",
                   help="one study's report: only its ratings, rater task reviews and crowd imports are read "
                        "(default: every study's ratings, pooled, as the report says); comments, scores and "
                        "gold labels are the whole log's")


def run(args: argparse.Namespace) -> int:
    from modlens.analysis.data import LabelSetError, LogError, StudyChoiceError
    from modlens.analysis.report import render_html, report_from_db, to_json

    db = db_path(args)
    try:
        report = report_from_db(db, args.label_sets, args.study)
    except LogError as err:
        raise study_log_error(err, db) from None
    except (LabelSetError, StudyChoiceError) as err:
        raise CliError(str(err)) from None
    if args.format in ("csv", "latex"):
        return _tables(report, args.format, args.out)
    text = to_json(report) if args.format == "json" else render_html(report)
    out = args.out or (None if args.format == "json" else "report.html")
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out} ({', '.join(report['sections']) or 'no sections'})", file=sys.stderr)
    return 0


def _tables(report: dict[str, Any], fmt: str, out: str | None) -> int:
    from modlens.analysis.report import render
    from modlens.analysis.report_tables import to_latex, write_csv

    rendered = render(report)
    if fmt == "csv":
        folder = Path(out or "report-tables")
        write_csv(rendered.tables, rendered.references, folder)
        print(f"wrote {len(rendered.tables)} tables, index.csv and references.csv ({len(rendered.references)}) "
              f"to {folder}", file=sys.stderr)
        return 0
    path = Path(out or "report-tables.tex")
    path.write_text(to_latex(rendered.tables, rendered.references, report["db"]), encoding="utf-8")
    print(f"wrote {len(rendered.tables)} tables and {len(rendered.references)} references to {path}", file=sys.stderr)
    return 0
