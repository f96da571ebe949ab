"""run the engine over a dataset into the study log"""
from __future__ import annotations

import argparse
import json
import sys

from modlens import paths


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a CSV/TSV/JSONL file or folder, or a shorthand (noisyhate, hatecheck, davidson) "
                                   "looked up under $MODLENS_DATA or ../shared/data")
    p.add_argument("--format", dest="fmt", choices=["noisyhate", "hatecheck", "davidson", "sass", "csv", "jsonl"],
                   help="the file's layout (default: guessed from its columns)")
    p.add_argument("--detectors", nargs="+", metavar="KEY",
                   help="registry names, study-file detector keys, or cached:PATH[:TEXT=SCORE,...][:NAME] "
                        "(default: the study's detectors)")
    p.add_argument("--config", help="study.toml (detectors, normalizer, perturbation settings)")
    p.add_argument("--normalize", action="store_true", help="also normalize every text and score the result")
    p.add_argument("--perturb", nargs="+", metavar="STRATEGY", help="also generate variants with these strategies")
    p.add_argument("--db", help="study log (default: the one `modlens serve` uses)")
    p.add_argument("--limit", type=int, help="audit only the first N items")
    p.add_argument("--text-col", help="csv/jsonl: the text column (default: text)")
    p.add_argument("--label-cols", nargs="+", help="csv/jsonl: columns kept as labels (default: all others)")
    p.add_argument("--chunk", type=int, default=256, help="items written per transaction (default 256)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from modlens.audit import AuditError, run_audit
    from modlens.config import StudyConfigError, load_study

    try:
        study = load_study(args.config)
    except StudyConfigError as err:
        print(err, file=sys.stderr)
        return 2
    reader_options = {}
    if args.text_col:
        reader_options["text_col"] = args.text_col
    if args.label_cols:
        reader_options["label_cols"] = args.label_cols
    try:
        result = run_audit(args.dataset, db=args.db or paths.default_db(), fmt=args.fmt, study=study,
                           detectors=args.detectors, normalize=args.normalize, perturb=args.perturb,
                           limit=args.limit, chunk_size=args.chunk, reader_options=reader_options,
                           progress=not args.quiet)
    except AuditError as err:
        print(f"modlens audit: {err}", file=sys.stderr)
        return 2
    for key, why in result.unavailable.items():
        print(f"modlens audit: detector {key} not used: {why}", file=sys.stderr)
    print(json.dumps(result.to_dict(), indent=2))
    return 0
