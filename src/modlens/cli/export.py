"""export the study log as tidy tables with a data dictionary"""
from __future__ import annotations

import argparse
import sys

from modlens import paths
from modlens.studylog.exporters import FORMATS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="study log to read (default: $MODLENS_HOME/study.sqlite)")
    parser.add_argument("--out", required=True, help="directory to write the tables into (created if missing)")
    parser.add_argument("--format", choices=list(FORMATS), default="csv", help="file format (default: csv)")
    parser.add_argument("--tables", nargs="+", metavar="TABLE", help="only these tables (default: all)")


def run(args: argparse.Namespace) -> int:
    from modlens.studylog.export import export
    from modlens.studylog.store import StudyLogError

    db = args.db or paths.default_db()
    try:
        manifest = export(db, args.out, args.format, args.tables)
    except (StudyLogError, ValueError) as err:
        print(f"modlens export: {err}", file=sys.stderr)
        return 2
    for name, info in manifest["tables"].items():
        print(f"{info['rows']:>9}  {name}")
    print(f"wrote {len(manifest['tables'])} tables ({args.format}) and DATA.md to {args.out}")
    return 0
