"""write the analysis report (HTML or JSON) from the study log"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modlens.cli.common import CliError, add_db_option, db_path, study_log_error


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_db_option(p)
    p.add_argument("--out", help="output file (default: report.html / stdout for --format json)")
    p.add_argument("--format", choices=["html", "json"], default="html")
    p.add_argument("--label-set", dest="label_sets", action="append", default=[], metavar="ID_OR_DEFINITION",
                   help="the gold label set to use for its source, by id or definition (e.g. 'toxicity >= 0.5'); "
                        "repeatable (default: per source, the newest set; the report lists every set)")


def run(args: argparse.Namespace) -> int:
    from modlens.analysis.data import LabelSetError, LogError
    from modlens.analysis.report import render_html, report_from_db, to_json

    db = db_path(args)
    try:
        report = report_from_db(db, args.label_sets)
    except LogError as err:
        raise study_log_error(err, db) from None
    except LabelSetError as err:
        raise CliError(str(err)) from None
    text = to_json(report) if args.format == "json" else render_html(report)
    out = args.out or (None if args.format == "json" else "report.html")
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out} ({', '.join(report['sections']) or 'no sections'})", file=sys.stderr)
    return 0
