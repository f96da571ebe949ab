"""write the analysis report (HTML or JSON) from the study log"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modlens import paths


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="study log (default: the one `modlens serve` uses)")
    p.add_argument("--out", help="output file (default: report.html / stdout for --format json)")
    p.add_argument("--format", choices=["html", "json"], default="html")


def run(args: argparse.Namespace) -> int:
    from modlens.analysis.data import LogError
    from modlens.analysis.report import render_html, report_from_db, to_json

    try:
        report = report_from_db(args.db or paths.default_db())
    except LogError as err:
        print(f"modlens report: {err}", file=sys.stderr)
        return 2
    text = to_json(report) if args.format == "json" else render_html(report)
    out = args.out or (None if args.format == "json" else "report.html")
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out} ({', '.join(report['sections']) or 'no sections'})", file=sys.stderr)
    return 0
