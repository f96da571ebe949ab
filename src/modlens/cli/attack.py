"""attack a detector with a named recipe (DeepWordBug, TextBugger, A2T, PWWS, TextFooler, ToxicTrap)

    modlens attack --list
    modlens attack --recipe pwws --target profanity-check --text "you are a stupid idiot"
    modlens attack --recipe textfooler --target minilm-toxicity --detector profanity-check noisyhate --limit 50

With --text: one JSON line per text for the source and one for the attack's result (the
Variant with its `attack` record, scored by every loaded detector; a blank text: its source line
only, with `not_scored` and no score, as `modlens score` prints it); nothing is logged. A detector
that gives no score for a text puts `error` in its answer and the command exits 1 after every
line, saying which detector, as `modlens score` does; so does an attack whose result is unknown (the
target or a judge had no score for a text the attack sent: its record's `reason` says why). A target
or judge call that fails (a remote detector down, a model that crashed) is no score for the texts it
carried, as with a DATASET: that attack's result is unknown and the next text is attacked. With a
DATASET: the audit's attack over the dataset (seeds by the gold label, else the target's
verdict), every result and its scores written to the study log (--db), as
`modlens audit DATASET --attack GOAL --recipe NAME` does; the summary is printed as JSON, and
stderr says what audit's says (a detector not used, a detector whose scores include errors).
A score that is an error, or an attack whose result is unknown (the target or a judge had no score
for a text the attack sent: counted as `unknown` in `attacks`), makes it exit 1 after the summary
(and the export), as the audit does; the same command attacks them again, which tells only where
a call failed (a target that is a cached table without the text stays unknown).
The study's detectors (the embedded defaults without --study) and any --detector are loaded too:
they score the results and are the judges (TaeBench's AND rule) unless --no-ensemble, but for a
cached table, which knows no text but its own and only scores, with --text as with a DATASET. The target
and each of them must load: one that cannot stops the command before it attacks anything (exit 1).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import modlens.study
from modlens.cli.common import (CliError, add_attack_limit_options, add_db_option, add_detectors_option,
                                add_encoding_option, add_study_option, db_path, detector_configs,
                                fail_on_score_errors, fail_on_unknown_attacks, print_audit_warnings)
from modlens.names import UnknownName


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", nargs="?", help="a dataset file or shorthand, as for `modlens audit` (or use --text)")
    p.add_argument("--list", action="store_true", help="print the recipes and their parts, then exit")
    p.add_argument("--recipe", metavar="NAME", help="the recipe (see --list)")
    p.add_argument("--target", metavar="DETECTOR", help="the detector attacked (a registry name, a study key, or "
                   "cached:PATH[:TEXT=SCORE,...][:NAME], attacked under its NAME, default cached)")
    p.add_argument("--text", nargs="+", action="extend", metavar="TEXT", help="attack these texts instead of a dataset")
    p.add_argument("--goal", choices=["tae", "bae"], default="tae",
                   help="tae (default): toxic seeds made to look benign; bae: benign seeds made to look toxic")
    p.add_argument("--goal-labels", nargs="+", metavar="LABEL",
                   help="multi-label goal: every one of these labels of the target must drop below its threshold "
                        "(bae: any one rise above); 'all' = every harm label (e.g. hf-classifier unitary/toxic-bert)")
    add_detectors_option(p, keys="registry names or study keys: more detectors, beside the study's, to score the "
                                 "results and judge them")
    p.add_argument("--no-ensemble", action="store_true", help="no judges: the other detectors only score the results")
    add_study_option(p)
    add_attack_limit_options(p)  # unset: the recipe's own budget and edit limit, as `audit --attack --recipe`
    p.add_argument("--seed", type=int, help="random seed (default: the study's, 0)")
    add_db_option(p)
    p.add_argument("--limit", type=int, help="dataset: attack only the first N items")
    add_encoding_option(p)
    p.add_argument("--quiet", action="store_true", help="dataset: no progress bar")
    p.add_argument("--export", metavar="DIR", help="dataset: then write the log's attack results as a TaeBench-style "
                                                  "dataset (Parquet + JSONL, quality-filter verdicts) to DIR")


def _part(key: str, options: dict[str, Any]) -> str:
    return f"{key}({options['fraction']:g})" if key == "max_words_changed" else key


def recipes_table() -> list[str]:
    from modlens.perturb import recipes
    lines = []
    for key in recipes.available():
        r = recipes.create(key)
        d = r.describe()
        tr = ", ".join(f"composite({'|'.join(o['transformations'])})" if k == "composite" else k
                       for k, o in d["transformations"])
        search = d["search"][0] + "".join(f" {k}={v}" for k, v in d["search"][1].items())
        lines += [f"{key}: {r.title}",
                  f"    transformations: {tr} (k={d['k']} per word)",
                  f"    constraints: {', '.join(_part(k, o) for k, o in d['constraints']) or 'none'}"
                  + ("" if any(k == "max_words_changed" for k, _ in d["constraints"]) else "; no edit limit"),
                  f"    search: {search}; max queries {d['max_queries']}",
                  f"    offline substitutes: {d['substitutes']}",
                  f"    paper: {r.paper}"]
    return lines


def _check(args: argparse.Namespace) -> None:
    from modlens.perturb import recipes
    if not args.recipe:
        raise CliError("--recipe is required", fix="pick one of `modlens attack --list`")
    try:
        recipes.recipe_class(args.recipe)
    except UnknownName as err:
        raise CliError(err.message, fix=err.fix) from None
    if not args.target:
        raise CliError("--target is required", fix="name the detector to attack, e.g. --target profanity-check")
    if bool(args.text) == bool(args.dataset):
        raise CliError("give a DATASET or --text TEXT ..., not both" if args.text else "nothing to attack",
                       fix="modlens attack --recipe NAME --target DETECTOR (DATASET | --text TEXT ...)")
    if args.dataset and args.goal_labels:
        raise CliError("--goal-labels works with --text only", fix="drop --goal-labels, or attack --text")
    if args.text and args.encoding:
        raise CliError("--encoding is the dataset file's; texts given with --text are already text",
                       fix="drop --encoding, or attack a dataset file")


def run(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(recipes_table()))
        return 0
    _check(args)
    if getattr(args, "export", None) and not args.dataset:
        raise CliError("--export needs a dataset (texts given with --text are not logged)",
                       fix="attack a dataset file, or run `modlens export --taebench DIR` on a study log")
    study = modlens.study.load(args.config)
    seed = study.perturbation.seed if args.seed is None else args.seed
    # the study's detectors judge by default (the label filter is then checked), --detector adds more
    judges = [*(d.key for d in study.detectors), *(args.detectors or [])]
    key = _target_key(args.target, study)
    extra = [d for d in dict.fromkeys(judges) if d not in (args.target, key)]
    if args.dataset:
        return _dataset(args, study, seed, extra, key)
    return _texts(args, study, seed, extra, key)


def _target_key(spec: str, study: Any) -> str:
    """The key the target loads under: a spec (cached:PATH...) is not its own key (`cached`, or its
    NAME). A spec that names nothing is said where the command checks its detectors, after its input."""
    from modlens.services.detectors import DetectorSpecError, parse_detector_spec
    try:
        return parse_detector_spec(spec, study).key
    except DetectorSpecError:
        return spec


def _dataset(args: argparse.Namespace, study: Any, seed: int, extra: list[str], key: str) -> int:
    from modlens.audit import AttackSpec, run_audit
    if args.seed is not None:
        study = study.model_copy(update={"perturbation": study.perturbation.model_copy(update={"seed": seed})})
    spec = AttackSpec(args.goal, targets=[key], ensemble=[] if args.no_ensemble else None,
                      max_queries=args.query_budget, max_edit_ratio=args.max_edit_ratio, recipe=args.recipe)
    result = run_audit(args.dataset, db=db_path(args), study=study, detectors=[args.target, *extra],
                       limit=args.limit, progress=not args.quiet, attack=spec,
                       reader_options={"encoding": args.encoding},
                       on_note=lambda note: print(f"modlens attack: {note}", file=sys.stderr))
    print_audit_warnings("attack", result)
    print(json.dumps(result.to_dict(), indent=2))
    if args.export:
        from modlens.cli.export import run_taebench
        code = run_taebench(db_path(args), args.export)
        if code:
            return code
    fail_on_score_errors(result.score_errors)  # as the audit: exit 1 when some score asked for is an error
    fail_on_unknown_attacks(result.attacks)  # or some attack's result is unknown
    return 0


def _recipe(key: str) -> Any:
    from modlens.perturb import recipes
    return recipes.create(key)


def _texts(args: argparse.Namespace, study: Any, seed: int, extra: list[str], key: str) -> int:
    from modlens.services.detectors import load_detectors
    loaded = load_detectors(detector_configs([args.target, *extra], study))
    try:
        return _attack_texts(args, seed, loaded, key)
    finally:
        loaded.close()  # a remote detector's HTTP session, closed as `modlens score` closes it


def _attack_texts(args: argparse.Namespace, seed: int, loaded: Any, target_key: str) -> int:
    from modlens.cli.perturb import _print, fail_on_unknown_results, not_scored
    from modlens.cli.score import fail_on_no_score
    loaded.require([s.name for s in loaded.statuses])  # the target and its judges, as `attack DATASET` (run_audit) requires them
    from modlens.audit.attacks import AttackSpec, CallFailureAsNoScore, plan_attacks
    detectors = loaded.detectors
    # a call that raises is no score, an unknown result, as `attack DATASET` records it: every text is attacked
    target = CallFailureAsNoScore(detectors[target_key])
    spec = AttackSpec(args.goal, targets=[target_key], ensemble=[] if args.no_ensemble else None)
    judges = [CallFailureAsNoScore(detectors[k]) for k in plan_attacks(spec, detectors)[target_key]]  # as `attack DATASET`
    labels = None
    if args.goal_labels:
        labels = "all" if args.goal_labels == ["all"] else args.goal_labels
    try:
        attack = _recipe(args.recipe).build(target, goal=args.goal, judges=judges, max_queries=args.query_budget,
                                            max_edit_ratio=args.max_edit_ratio, seed=seed, target_key=target_key,
                                            goal_labels=labels)
    except (KeyError, ValueError) as err:
        raise CliError(str(err.args[0] if err.args else err),
                       fix="check the limits (--max-queries >= 1, 0 < --max-edit-fraction <= 1) and --goal-labels "
                           "against the target's labels") from None
    for key, reason in attack.unavailable.items():
        print(f"modlens attack: transformation {key} unavailable: {reason}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    for text in args.text:
        if not not_scored("attack", text, target_key):  # a blank text: its line says why, no number
            rows += _print(text, target_key, [attack.run(text)], detectors, {})  # the lines `modlens perturb` prints
    fail_on_no_score(rows)  # a detector that gave no score for some text: said after every line, as score
    fail_on_unknown_results(rows)  # or some attack's result is unknown, as `attack DATASET`
    return 0
