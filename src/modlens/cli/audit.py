"""run the engine over a dataset into the study log"""
from __future__ import annotations

import argparse
import json
import sys

import modlens.study
from modlens.chunks.sinks import CHUNK_ITEMS, GROUP_COMMIT_S
from modlens.cli.common import (CliError, add_attack_limit_options, add_db_option, add_deprecated_alias,
                                add_detectors_option, add_encoding_option, add_perturbation_options, add_strategies_option,
                                add_study_option, check_strategies, db_path, fail_on_score_errors, fail_on_unknown_attacks, print_audit_warnings,
                                registry_name, with_perturbation_options)
from modlens.datasets.registry import READER_REGISTRY, READERS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a CSV/TSV/JSONL/Parquet file or folder, or a shorthand (noisyhate, hatecheck, "
                                   "davidson, sass) looked up under $MODLENS_DATA, the fetched data, then the shipped copies; "
                                   "with --engine ray also a URI (s3://, gs://, file://…) read by Ray Data")
    p.add_argument("--format", dest="fmt", type=registry_name(READER_REGISTRY), metavar="FORMAT",
                   help=f"the file's layout: {', '.join(READERS)} or an installed reader plug-in's (default: detected "
                        "from its columns; the note on stderr says which and why)")
    add_detectors_option(p, keys="registry names, study-file detector keys, cached:PATH[:TEXT=SCORE,...][:NAME], "
                                 "or recorded[:NAME] (the scores the dataset file records, e.g. Perspective's)")
    add_study_option(p)
    p.add_argument("--normalize", action="store_true", help="also normalize every text and score the result")
    p.add_argument("--perturb", nargs="*", metavar="STRATEGY",
                   help="also generate variants: with these strategies, else --strategies, else the study's")
    add_strategies_option(p, default="the study's for --perturb, the attack's set for --attack",
                          what="strategies of --perturb's variants and --attack's edits")
    add_perturbation_options(p)
    p.add_argument("--attack", choices=["tae", "bae"],
                   help="also attack every seed comment (tae: toxic seeds made to look benign; bae: benign seeds made "
                        "to look toxic; seeds by the gold `toxic` label, else the target's verdict) and score each "
                        "adversarial text with every detector")
    p.add_argument("--targets", dest="attack_targets", nargs="+", action="extend", metavar="KEY",
                   help="detectors to attack (default: every loaded local detector)")
    p.add_argument("--target", dest="attack_targets", action="append", metavar="KEY",
                   help="one detector to attack (repeatable); adds to --targets")
    add_deprecated_alias(p, "--attack-targets", "--targets", dest="attack_targets", mode="extend", nargs="+")
    p.add_argument("--ensemble", nargs="+", metavar="KEY",
                   help="judges that must keep the seed's label (default: the other detectors)")
    p.add_argument("--no-ensemble", action="store_true",
                   help="attack without judges (with the default judges, transfer to them is 0 by construction)")
    p.add_argument("--recipe", metavar="NAME",
                   help="attack with this recipe (word and character attacks; `modlens attack --list`) instead of the "
                        "default character attack")
    add_attack_limit_options(p)
    add_deprecated_alias(p, "--attack-strategies", "--strategies", dest="strategies", mode="extend", nargs="+")
    add_db_option(p)
    p.add_argument("--limit", type=int, help="audit only the first N items")
    p.add_argument("--text-col", help="csv/jsonl/parquet: the text column (default: text, comment_text, tweet or sentence)")
    p.add_argument("--id-col", metavar="COLUMN",
                   help="csv/jsonl/parquet: the column whose values key the items (one per row, unique; default: the "
                        "row number behind the file's content hash). The data set is still named by the file's "
                        "content, so an edited file is a new data set, its rows logged as new comments (their "
                        "scores reused), unless --name declares which data set it is")
    p.add_argument("--name", metavar="NAME",
                   help="csv/jsonl/parquet, with --id-col: the data set this file is, whatever its bytes (default: "
                        "file-DIGEST, its content hash), so an edited file resumes its audit: rows already done are "
                        "skipped, and a key the log holds keeps the first text seen under it (a row whose text changed "
                        "is counted and named in a warning). Lower-case letters, digits, '.', '_', '-'; not a name "
                        "modlens gives itself (davidson, csv, file-…)")
    p.add_argument("--label", metavar="COLUMN[=TOXIC_VALUES]",
                   help="the gold label: COLUMN (1/true/yes/toxic/hateful… vs 0/false/no/neither…), COLUMN=A,B (these "
                        "values are toxic, the rest not), COLUMN>=X (a score), or none (default: the reader's own, "
                        "else a column named toxic, is_toxic, hateful, label, class, …)")
    p.add_argument("--label-cols", nargs="+", metavar="COLUMN",
                   help="csv/jsonl/parquet: more columns to store as labels, '*' for all (default: only the gold label, "
                        "group columns such as target/group/identity/platform, and ids)")
    add_encoding_option(p)
    p.add_argument("--no-html-unescape", dest="html_unescape", action="store_false", default=None,
                   help="davidson: keep the tweets' HTML entities (&amp;, &#128557;) instead of decoding them as read")
    p.add_argument("--chunk", type=int, default=CHUNK_ITEMS,
                   help=f"items written per transaction, also the most a crash leaves to redo (twice that with a model "
                        f"detector, which computes the next chunk while one is written; default {CHUNK_ITEMS})")
    p.add_argument("--group-commit", type=_seconds, default=GROUP_COMMIT_S, metavar="SECONDS",
                   help="chunks that come fast share one transaction for up to SECONDS (a daemon or another audit "
                        "writing the same log waits for the whole group). It saves COMMITs' page writes and fsyncs, which may pay where "
                        "they are slow (a spinning disk, a network file system: not measured); on the virtual disk it was measured on, it was slower, since "
                        f"each chunk in a group is a savepoint, which copies the pages it changes; default {GROUP_COMMIT_S:g}, a transaction per chunk")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    g = p.add_argument_group("scale (docs/SCALE.md)")
    g.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this process (default); ray: normalization, variants and each detector on a Ray "
                        "cluster (`pip install 'modlens[ray]'`), the study log written here")
    g.add_argument("--ray-address", metavar="auto|ray://HOST:PORT",
                   help="the Ray cluster to join (default: start a local Ray on this machine)")
    g.add_argument("--gpus-per-detector", type=float, default=0.0, metavar="N",
                   help="GPUs each detector actor asks for when the cluster has GPUs (default 0: CPU actors)")
    g.add_argument("--actors-per-detector", type=int, metavar="N",
                   help="actors per detector (default: from the cluster's GPUs, else its CPUs)")
    g.add_argument("--out-parquet", metavar="DIR",
                   help="write the results as sharded Parquet in DIR instead of the study log (`modlens import DIR` "
                        "loads them later); a rerun resumes")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 <= seconds <= 60:
        raise argparse.ArgumentTypeError(f"{value}: from 0 (a transaction per chunk) to 60 seconds")
    return seconds


def run(args: argparse.Namespace) -> int:
    from modlens.audit import AttackSpec, run_audit

    study = with_perturbation_options(modlens.study.load(args.config), args)  # checks --strategies too
    perturb = None
    if args.perturb is not None:
        check_strategies(args.perturb, "--perturb")
        perturb = list(dict.fromkeys([*args.perturb, *(args.strategies or [])])) or study.perturbation.strategies
    reader_options = {"text_col": args.text_col, "id_col": args.id_col, "label_cols": args.label_cols, "label": args.label,
                      "encoding": args.encoding, "html_unescape": args.html_unescape, "name": args.name}
    attack_only = [flag for flag, n in (("--targets", "attack_targets"), ("--ensemble", "ensemble"),
                                        ("--no-ensemble", "no_ensemble"), ("--recipe", "recipe")) if getattr(args, n)]
    if args.strategies and not (args.attack or args.perturb is not None):
        raise CliError("--strategies need --perturb or --attack tae|bae")
    if args.ensemble and args.no_ensemble:
        raise CliError("--ensemble and --no-ensemble exclude each other")
    if attack_only and not args.attack:
        raise CliError(f"{', '.join(attack_only)} need --attack tae|bae")
    attack = None if not args.attack else AttackSpec(
        args.attack, targets=args.attack_targets, ensemble=[] if args.no_ensemble else args.ensemble,
        max_queries=args.query_budget,
        max_edit_ratio=args.max_edit_ratio, strategies=args.strategies, recipe=args.recipe)
    if args.recipe:
        from modlens.names import UnknownName
        from modlens.perturb import recipes
        try:
            recipes.recipe_class(args.recipe)
        except UnknownName as err:
            raise CliError(err.message, fix=err.fix) from None
        if args.strategies:
            raise CliError("--strategies and --recipe exclude each other", fix="a recipe names its own transformations; "
                           "drop --strategies (or --recipe for the character attack)")
    ray_only = [flag for flag, n in (("--ray-address", "ray_address"), ("--gpus-per-detector", "gpus_per_detector"),
                                     ("--actors-per-detector", "actors_per_detector"),
                                     ("--out-parquet", "out_parquet")) if getattr(args, n)]
    if ray_only and args.engine != "ray":
        raise CliError(f"{', '.join(ray_only)} need --engine ray")
    ray_options = None
    if args.engine == "ray":
        from modlens.scale.ray_audit import RayOptions
        ray_options = RayOptions(address=args.ray_address, gpus_per_detector=args.gpus_per_detector,
                                 actors_per_detector=args.actors_per_detector)
    result = run_audit(args.dataset, db=db_path(args), fmt=args.fmt, study=study,
                       detectors=args.detectors, normalize=args.normalize, perturb=perturb,
                       limit=args.limit, chunk_size=args.chunk, reader_options=reader_options,
                       progress=not args.quiet, attack=attack,
                       on_note=lambda note: print(f"modlens audit: {note}", file=sys.stderr),
                       engine=args.engine, ray_options=ray_options, out_parquet=args.out_parquet,
                       group_commit_s=args.group_commit)
    print_audit_warnings("audit", result)
    print(json.dumps(result.to_dict(), indent=2))
    # a score asked for that is an error, or a step that failed for some texts: exit 1, after the summary
    fail_on_score_errors(result.score_errors, step_errors=result.step_errors)
    fail_on_unknown_attacks(result.attacks)  # an attack whose result is unknown: exit 1 too
    return 0
