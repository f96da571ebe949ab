"""export the study log as tidy tables with a data dictionary

Beside the log's own tables, `comment_scores_wide`: one row per comment with its gold label and one
score column and in-sample mark per detector (docs/DATA.md), the join a researcher would otherwise
make of comments, gold labels and scores."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from modlens.cli.common import CliError, add_db_option, db_path, registry_name, study_log_error
from modlens.studylog.exporters import FORMATS, REGISTRY
from modlens.studylog.tables import WIDE_NAME


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument("--out", help="directory to write the tables into (created if missing)")
    parser.add_argument("--format", type=registry_name(REGISTRY), metavar="FORMAT", default="csv",
                        help=f"file format: {', '.join(FORMATS)} or an installed exporter plug-in's (default: csv)")
    parser.add_argument("--tables", nargs="+", metavar="TABLE",
                        help=f"only these tables (default: all, and {WIDE_NAME}, the wide per-row table)")
    parser.add_argument("--bundle", metavar="OUT", help="instead: write this participant's bundle for the researcher "
                                                        "(consented rows only, Parquet; docs/MULTI.md)")
    parser.add_argument("--show", action="store_true", help="with --bundle: print what the bundle holds, write nothing")
    parser.add_argument("--study-id", help="with --bundle: the study to bundle (default: the joined one)")
    parser.add_argument("--taebench", metavar="DIR", help="instead: write the log's attack results as a TaeBench-style "
                                                          "dataset (Parquet + JSONL, quality-filter verdicts; docs/PERTURB.md)")
    parser.add_argument("--successes-only", action="store_true", help="with --taebench: only successful attacks")


def run(args: argparse.Namespace) -> int:
    from modlens.studylog.export import check_tables, export
    from modlens.studylog.connection import StudyLogError

    db = db_path(args)
    if args.taebench:
        return run_taebench(db, args.taebench, args.successes_only)
    if args.bundle or args.show:
        from modlens.cli.export_bundle import run_bundle

        return run_bundle(args, db)
    if not args.out:
        raise CliError("give --out DIR (tables) or --bundle FILE (a participant bundle)")
    tables = args.tables
    wide = tables is None or WIDE_NAME in tables
    if tables is not None:
        tables = [t for t in tables if t != WIDE_NAME]
    try:
        check_tables(tables or ())  # before the wide table's read of the log
        manifest = export(db, args.out, args.format, tables,
                          derived=[lambda log: _wide(db, log)] if wide else [])
    except StudyLogError as err:
        raise study_log_error(err, db) from None
    except ValueError as err:  # unknown table
        raise CliError(str(err)) from None
    for name, info in manifest["tables"].items():
        print(f"{info['rows']:>9}  {name}")
    print(f"wrote {len(manifest['tables'])} tables ({args.format}) and DATA.md to {args.out}")
    return 0


def run_taebench(db: Path, out: str, successes_only: bool = False) -> int:
    """`--taebench DIR` (also `modlens attack --export DIR`): the attack results as a dataset."""
    from modlens.audit.export_taebench import export_taebench
    from modlens.studylog.connection import StudyLogError

    try:
        manifest = export_taebench(db, out, successes_only=successes_only)
    except StudyLogError as err:
        raise study_log_error(err, db) from None
    s = manifest["quality"]["summary"]
    if not manifest["rows"]:
        print("modlens export: the log holds no attack results (run `modlens audit ... --attack tae` first)")
    print(f"wrote {manifest['rows']} attack results ({s['successes']} successful, {s['passed_every_filter']} passed "
          f"every quality filter, {s['kept'] - s['passed_every_filter']} failed none but were not checked by every "
          f"one) to {out}: {', '.join(manifest['files'])}")
    return 0


def _wide(db: Path, log: Any) -> tuple[Any, Any, dict[str, Any]]:
    """The wide per-row table read from the export's open log (its snapshot), with its detectors'
    names and versions for the manifest."""
    from modlens.analysis import wide

    table, rows, detectors = wide.from_db(db, log=log)
    return table, rows, {"detectors": detectors}
