"""run the engine over a dataset into the study log"""
from __future__ import annotations

import argparse
import json
import sys

from modlens.cli.common import (CliError, add_attack_limit_options, add_db_option, add_detectors_option,
                                add_study_option, db_path, load_study)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a CSV/TSV/JSONL file or folder, or a shorthand (noisyhate, hatecheck, davidson) "
                                   "looked up under $MODLENS_DATA, the fetched data, then the shipped copies")
    p.add_argument("--format", dest="fmt", choices=["noisyhate", "hatecheck", "davidson", "sass", "csv", "jsonl"],
                   help="the file's layout (default: guessed from its columns)")
    add_detectors_option(p, keys="registry names, study-file detector keys, or cached:PATH[:TEXT=SCORE,...][:NAME]")
    add_study_option(p)
    p.add_argument("--normalize", action="store_true", help="also normalize every text and score the result")
    p.add_argument("--perturb", nargs="+", metavar="STRATEGY", help="also generate variants with these strategies")
    p.add_argument("--attack", choices=["tae", "bae"],
                   help="also attack every seed comment (tae: toxic seeds made to look benign; bae: benign seeds made "
                        "to look toxic; seeds by the gold `toxic` label, else the target's verdict) and score each "
                        "adversarial text with every detector")
    p.add_argument("--attack-targets", nargs="+", metavar="KEY",
                   help="detectors to attack (default: every loaded local detector)")
    p.add_argument("--ensemble", nargs="+", metavar="KEY",
                   help="judges that must keep the seed's label (default: the other detectors)")
    p.add_argument("--no-ensemble", action="store_true",
                   help="attack without judges (with the default judges, transfer to them is 0 by construction)")
    add_attack_limit_options(p)
    p.add_argument("--attack-strategies", nargs="+", metavar="STRATEGY",
                   help="attack: word transformations (default: the attack's default set, docs/PERTURB.md)")
    add_db_option(p)
    p.add_argument("--limit", type=int, help="audit only the first N items")
    p.add_argument("--text-col", help="csv/jsonl: the text column (default: text)")
    p.add_argument("--label-cols", nargs="+", help="csv/jsonl: columns kept as labels (default: all others)")
    p.add_argument("--chunk", type=int, default=256, help="items written per transaction (default 256)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from modlens.audit import AttackSpec, AuditError, run_audit

    study = load_study(args.config)
    reader_options = {}
    if args.text_col:
        reader_options["text_col"] = args.text_col
    if args.label_cols:
        reader_options["label_cols"] = args.label_cols
    attack_only = [f"--{n.replace('_', '-')}" for n in ("attack_targets", "ensemble", "no_ensemble", "attack_strategies")
                   if getattr(args, n)]
    if args.ensemble and args.no_ensemble:
        raise CliError("--ensemble and --no-ensemble exclude each other")
    if attack_only and not args.attack:
        raise CliError(f"{', '.join(attack_only)} need --attack tae|bae")
    attack = None if not args.attack else AttackSpec(
        args.attack, targets=args.attack_targets, ensemble=[] if args.no_ensemble else args.ensemble,
        max_queries=args.query_budget,
        max_edit_ratio=args.max_edit_ratio, strategies=args.attack_strategies)
    try:
        result = run_audit(args.dataset, db=db_path(args), fmt=args.fmt, study=study,
                           detectors=args.detectors, normalize=args.normalize, perturb=args.perturb,
                           limit=args.limit, chunk_size=args.chunk, reader_options=reader_options,
                           progress=not args.quiet, attack=attack)
    except AuditError as err:
        raise CliError(str(err)) from None
    for key, why in result.unavailable.items():
        print(f"modlens audit: detector {key} not used: {why}", file=sys.stderr)
    print(json.dumps(result.to_dict(), indent=2))
    return 0
