"""generate perturbed variants of a text (or attack a detector) and score them (JSON lines)

The first line per input is the source text with its scores; each following line is a
variant (strategy, params, seed, edited spans, attack result when --attack) with its scores
from every loaded detector. When fewer variants than the budget come out, the source line's
`reasons` says why ({"text": why} when none could be made at all, else one entry per strategy
that made none), and stderr repeats it. A blank text gets its source line with `not_scored` (why:
empty, whitespace only) and no detector's number or variant, as `modlens score` leaves it. A
detector that gives no score for a text (it failed, or had none) puts `error` in its answer on that
text's line; the command then exits 1, after every line, and says which detector, as `modlens score`;
a target whose call fails then ranks no word (the heuristic does, and the variants name no target),
and the command exits 1 after every line too, saying for how many texts.
With --attack, so does an attack whose result is unknown (the target or a judge had no score for a
text the attack sent: its record's `reason` says why; a call that fails is no score for its texts, and
the next text is attacked).
A detector named by --detector or --target that cannot load, or none that loads, stops the command
before its first line (exit 1); so does the study's perturbation.target without --target (exit 2 where
--detector leaves it out): variants it did not guide are not made in its name. One of the study's that
nobody named is said on stderr and left out.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import modlens.study
from modlens.cli.common import (CliError, add_attack_limit_options, add_detectors_option, add_perturbation_options,
                                add_strategies_option, add_study_option, detector_configs, fail_on_unknown_attacks,
                                with_perturbation_options)
from modlens.cli.score import detector_answers, fail_on_no_score
from modlens.datasets.base import blank_reason
from modlens.detectors.base import Detector
from modlens.errors import ErrorKind
from modlens.names import close_matches
from modlens.perturb import registry
from modlens.perturb.attack_record import result_known
from modlens.perturb.generate import VariantGenerator
from modlens.perturb.importance import detector_score_fn, word_importance
from modlens.services.detectors import LoadedDetectors, load_detectors
from modlens.services.variant_setup import guided_by

PREFERRED_TARGETS = ("minilm-toxicity", "profanity-check")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="+", help="text(s) to perturb")
    add_strategies_option(parser, default=f"the study's; with --attack, the attack's set. Known: "
                                          f"{', '.join(registry.available())}")
    parser.add_argument("--target", metavar="DETECTOR", help="detector key guiding word importance / attacked "
                        "(default: the study's target, else minilm-toxicity, else profanity-check)")
    add_detectors_option(parser, keys="registry names, study-file detector keys, or cached:PATH... to load and score with")
    add_study_option(parser)
    add_perturbation_options(parser)
    parser.add_argument("--attack", choices=["tae", "bae"], help="run a greedy attack on the target instead")
    add_attack_limit_options(parser, queries_dest="max_queries", edit_ratio_dest="max_edit_fraction", recipes=False)
    parser.add_argument("--perturbations", metavar="JSON", help="word -> human perturbations table for human_lookup")


def _pick_target(requested: str | None, loaded: dict[str, Detector]) -> str | None:
    if requested:
        return requested if requested in loaded else None
    for key in PREFERRED_TARGETS:
        if key in loaded:
            return key
    return next(iter(loaded), None)


def _scores(texts: list[str], detectors: dict[str, Detector]) -> list[dict[str, dict[str, object]]]:
    """Per text, each detector's JSON answer as `modlens score` gives it (name, version, labels and
    toxicity, or the error), and whether the toxicity is above the detector's threshold."""
    out = detector_answers(detectors, texts)
    for row in out:
        for key, answer in row.items():
            tox = answer.get("toxicity")
            answer["above_threshold"] = tox >= detectors[key].threshold if isinstance(tox, float) else None
    return out


def _explain(reasons: dict[str, str], importance: list[float] | None) -> list[str]:
    """The stderr lines for `reasons`, with the flag that would change the outcome."""
    if "text" not in reasons:
        return [why if k == "budget" else f"strategy {k} made no variant: {why}" for k, why in reasons.items()]
    hint = ""
    if importance and reasons["text"].startswith("no word's removal"):
        hint = "; use --threshold 0" if max(importance) > 0 else \
            "; removing any one word does not lower the score: try another --target"
    return [reasons["text"] + hint]


def _below_threshold(reasons: dict[str, str], importance: list[float] | None) -> bool:
    return bool(importance) and max(importance or [0.0]) > 0 and \
        reasons.get("text", "").startswith("no word's removal")


def _any_drop(maker: VariantGenerator, p: Any) -> VariantGenerator:
    """The same generator with threshold 0: any word whose removal lowers the score."""
    return VariantGenerator(p.strategies, budget=p.budget, seed=p.seed, importance_threshold=0.0,
                            strategy_options=maker.options)


def run(args: argparse.Namespace) -> int:
    study = with_perturbation_options(modlens.study.load(args.config), args)  # checks --strategies too
    configs = detector_configs(args.detectors, study) if args.detectors else study.detectors
    loaded = load_detectors(configs)
    try:
        return _run(args, study, loaded)
    finally:
        loaded.close()  # a remote detector's HTTP session, closed as `modlens score` closes it


def _run(args: argparse.Namespace, study: Any, loaded: LoadedDetectors) -> int:
    p = study.perturbation
    # the target asked for: --target, else the study's perturbation.target; made without it, the variants
    # would be ranked by another detector or the heuristic while the study names this one
    wanted = args.target or p.target
    # one named (--detectors, the target) that cannot load, or none: no line scored by the rest
    loaded.require([*(s.name for s in loaded.statuses if args.detectors), *([wanted] if wanted else [])])
    for line in loaded.warnings():
        print(f"modlens perturb: {line}", file=sys.stderr)
    detectors = loaded.detectors
    target = _pick_target(wanted, detectors)
    if target is None:  # `wanted` is no loaded detector's key (require stopped one that cannot load, and none)
        if args.target:
            close = close_matches(args.target, detectors)
            raise CliError(f"target detector {args.target} is not loaded; loaded: {list(detectors)}",
                           fix=f"did you mean {' or '.join(close)}?" if close else
                           "pick a loaded --target, or add it with --detector (see `modlens detectors`)")
        raise CliError(f"the study's perturbation.target {wanted} is not among the --detector ones "  # --detector left it out
                       f"({', '.join(detectors)})", fix=f"add --detector {wanted}, or name another --target")
    options = {"human_lookup": {"path": args.perturbations}} if args.perturbations else {}
    if args.attack:
        attacked = _attack(args, target, detectors, p.seed, options)
        fail_on_no_score(attacked)  # after every line, as score
        fail_on_unknown_results(attacked)
        return 0
    try:
        maker = VariantGenerator(p.strategies, budget=p.budget, seed=p.seed,
                                 importance_threshold=p.importance_threshold, strategy_options=options)
    except (KeyError, ValueError) as err:
        raise CliError(str(err.args[0] if err.args else err)) from None
    for key, reason in maker.unavailable.items():
        print(f"modlens perturb: strategy {key} unavailable: {reason}", file=sys.stderr)
    from modlens.audit.attacks import CallFailureAsNoScore
    # a call that raises is no score (the heuristic ranks the words), as the engine takes it: every text goes on
    ranker = CallFailureAsNoScore(detectors[target])
    rank = detector_score_fn(ranker)
    rows: list[dict[str, Any]] = []
    for text in args.text:
        if not_scored("perturb", text, target):
            continue
        importance = word_importance(text, rank)
        variants, reasons = maker.generate_explained(text, importance=importance)
        if not variants and _below_threshold(reasons, importance) and args.threshold is None:
            # the obvious first try ("you are a stupid idiot": each insult alone keeps it toxic)
            # makes variants: the words whose removal lowers the score at all, said on stderr
            variants, reasons = _any_drop(maker, p).generate_explained(text, importance=importance)
            print(f"modlens perturb: {text!r}: no word's removal lowered the score by more than "
                  f"{p.importance_threshold:g}; perturbed the words whose removal lowers it at all "
                  "(--threshold T sets the bar)", file=sys.stderr)
        for v in variants:
            v.target_detector = guided_by(v, target)  # none where the heuristic ranked the words
        if len(variants) < p.budget:
            for line in _explain(reasons, importance):
                print(f"modlens perturb: {text!r}: {line}", file=sys.stderr)
        rows += _print(text, target, variants, detectors, {"reasons": reasons})
    unranked = None
    if ranker.error is not None:  # the target gave no score for some text's word removals, which no line carries
        ranked = sum(row["kind"] == "source" for row in rows)
        unranked = (f"target {target} gave no score for the word removals of {ranker.failed_calls} of {ranked} "
                    f"texts ({ranker.error}): their words were ranked by the heuristic")
    try:
        fail_on_no_score(rows)  # a detector that gave no score for some text: said after every line, as score
    except CliError as err:
        if unranked is None:
            raise
        # one error says both: raised alone, the detectors' would hide the target's word removals
        raise CliError(f"{err.message}; {unranked}", kind=ErrorKind.FAILED, fix=err.fix) from None
    if unranked is not None:
        raise CliError(unranked, kind=ErrorKind.FAILED,
                       fix="every line is printed; those variants say params.ranking heuristic and name no target; "
                           "`modlens detectors` shows each detector's status")
    return 0


def _attack(args: argparse.Namespace, target: str, detectors: dict[str, Detector], seed: int,
            options: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The character attack (`char_greedy`; --strategies replace its set) on each text; the
    other loaded detectors are its judges (a cached table only scores, as `attack` picks them). The lines printed."""
    from modlens.audit.attacks import AttackSpec, CallFailureAsNoScore, build_attack, plan_attacks
    from modlens.services.errors import SetupError
    spec = AttackSpec(args.attack, targets=[target], max_queries=args.max_queries,
                      max_edit_ratio=args.max_edit_fraction, strategies=args.strategies, strategy_options=options)
    try:
        # a call that raises is no score, an unknown result, as `attack DATASET` records it: every text is attacked
        attack = build_attack(spec, target, CallFailureAsNoScore(detectors[target]),
                              [CallFailureAsNoScore(detectors[k]) for k in plan_attacks(spec, detectors)[target]], seed)
    except SetupError as err:
        raise CliError(str(err).removeprefix("attack: "),
                       fix="check --strategies (`modlens perturb --help` lists them), --max-queries >= 1 and "
                           "0 < --max-edit-fraction <= 1") from None
    for key, reason in attack.unavailable.items():
        print(f"modlens perturb: strategy {key.removeprefix('char:')} unavailable: {reason}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    for text in args.text:
        if not not_scored("perturb", text, target):
            rows += _print(text, target, [attack.run(text)], detectors, {})
    return rows


def not_scored(command: str, text: str, target: str | None) -> bool:
    """True for a blank text (`blank_reason`), after printing its source line: why it is not scored,
    no detector's number and no variant, as `modlens score`, the audit and the daemon leave it."""
    why = blank_reason(text)
    if why is None:
        return False
    print(json.dumps({"kind": "source", "text": text, "target": target, "not_scored": why}, ensure_ascii=False))
    print(f"modlens {command}: {text!r}: not scored or perturbed: {why}", file=sys.stderr)
    return True


def fail_on_unknown_results(rows: list[dict[str, Any]]) -> None:
    """After every line (and `fail_on_no_score`): exit 1 (failed) when some printed attack's result is
    unknown (`result_known`: the target or a judge had no score for a text the attack sent), as
    `attack DATASET` and `audit --attack` do after their summary (`cli.common.fail_on_unknown_attacks`).
    Exit 0 would say each attack's success, failure or skip is what the target and judges answered."""
    unknown: dict[str, dict[str, int]] = {}
    for row in rows:
        if row["kind"] == "variant" and row.get("attack") and not result_known(row["attack"]):
            unknown.setdefault(row["target_detector"], {"unknown": 0})["unknown"] += 1
    fail_on_unknown_attacks(unknown, fix="every line is printed; each such attack's `reason` says why; the same "
                                         "command attacks it again, which tells only where a call failed (a target "
                                         "that is a cached table without the text, or a target answer without the "
                                         "goal's label, leaves it unknown again)")


def _print(text: str, target: str | None, variants: list[Any], detectors: dict[str, Detector],
           extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The source line (with `extra`), then one line per variant, each scored by every detector.
    The lines printed, for `fail_on_no_score`."""
    scores = _scores([text] + [v.text for v in variants], detectors)
    rows = [{"kind": "source", "text": text, "target": target, "scores": scores[0], **extra},
            *({"kind": "variant", **v.to_dict(), "scores": s} for v, s in zip(variants, scores[1:]))]
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    return rows
