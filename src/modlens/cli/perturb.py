"""Generate perturbed variants of a text (or attack a detector) and score them (JSON lines).

The first line per input is the source text with its scores; each following line is a
variant (strategy, params, seed, edited spans, attack result when --attack) with its scores
from every loaded detector.
"""
from __future__ import annotations

import argparse
import json
import sys

from modlens.cli.common import CliError, add_attack_limit_options, add_detectors_option, add_study_option, load_study
from modlens.config import DetectorConfig
from modlens.detectors.base import Detector
from modlens.perturb import registry
from modlens.perturb.attack import GreedyAttack
from modlens.perturb.generate import VariantGenerator
from modlens.perturb.importance import detector_score_fn, word_importance
from modlens.services.detectors import load_detectors

PREFERRED_TARGETS = ("minilm-toxicity", "profanity-check")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="+", help="text(s) to perturb")
    parser.add_argument("--strategy", action="append", metavar="S",
                        help=f"strategy key (repeatable; default: the study's). Known: {', '.join(registry.available())}")
    parser.add_argument("--target", metavar="DETECTOR", help="detector key guiding word importance / attacked "
                        "(default: the study's target, else minilm-toxicity, else profanity-check)")
    add_detectors_option(parser, dest="detector", keys="registry keys to load and score with")
    add_study_option(parser, "--study", "--config")
    parser.add_argument("--budget", type=int, help="variants per text (default: the study's)")
    parser.add_argument("--seed", type=int, help="random seed (default: the study's)")
    parser.add_argument("--threshold", type=float, help="word-importance threshold (default: the study's)")
    parser.add_argument("--attack", choices=["tae", "bae"], help="run a greedy attack on the target instead")
    add_attack_limit_options(parser, queries_dest="max_queries", edit_ratio_dest="max_edit_fraction")
    parser.add_argument("--perturbations", metavar="JSON", help="word -> human perturbations table for human_lookup")


def _pick_target(requested: str | None, loaded: dict[str, Detector]) -> str | None:
    if requested:
        return requested if requested in loaded else None
    for key in PREFERRED_TARGETS:
        if key in loaded:
            return key
    return next(iter(loaded), None)


def _scores(texts: list[str], detectors: dict[str, Detector]) -> list[dict]:
    out = [dict() for _ in texts]
    for key, det in detectors.items():
        for row, labels in zip(out, det.score(texts)):
            tox = det.toxicity(labels)
            row[key] = {"name": det.name, "version": det.version, "toxicity": tox,
                        "above_threshold": None if tox is None else tox >= det.threshold}
    return out


def run(args: argparse.Namespace) -> int:
    study = load_study(args.study)
    p = study.perturbation
    configs = [DetectorConfig(name=n) for n in args.detector] if args.detector else study.detectors
    loaded = load_detectors(configs)
    for line in loaded.warnings():
        print(f"modlens perturb: {line}", file=sys.stderr)
    detectors = loaded.detectors
    target = _pick_target(args.target or p.target, detectors)
    if (args.target or args.attack) and target is None:
        raise CliError(f"target detector {args.target or '(any)'} is not loaded; loaded: {list(detectors) or 'none'}",
                       fix="pick a loaded --target, or add it with --detector (see `modlens detectors`)")
    options = {"human_lookup": {"path": args.perturbations}} if args.perturbations else {}
    strategies = args.strategy or (None if args.attack else p.strategies)
    seed = p.seed if args.seed is None else args.seed
    try:
        if args.attack:
            judges = [d for k, d in detectors.items() if k != target]
            maker = GreedyAttack(detectors[target], goal=args.attack, strategies=strategies, max_queries=args.max_queries,
                                 max_edit_fraction=args.max_edit_fraction, judges=judges, seed=seed,
                                 target_key=target, strategy_options=options)
        else:
            maker = VariantGenerator(strategies, budget=p.budget if args.budget is None else args.budget, seed=seed,
                                     importance_threshold=p.importance_threshold if args.threshold is None else args.threshold,
                                     strategy_options=options)
    except (KeyError, ValueError) as err:
        raise CliError(str(err.args[0] if err.args else err)) from None
    for key, reason in maker.unavailable.items():
        print(f"modlens perturb: strategy {key} unavailable: {reason}", file=sys.stderr)

    for text in args.text:
        if args.attack:
            variants = [maker.run(text)]
        else:
            importance = word_importance(text, detector_score_fn(detectors[target])) if target else None
            variants = maker.generate(text, importance=importance)
            for v in variants:
                v.target_detector = target
        scores = _scores([text] + [v.text for v in variants], detectors)
        print(json.dumps({"kind": "source", "text": text, "target": target, "scores": scores[0]}, ensure_ascii=False))
        for v, s in zip(variants, scores[1:]):
            print(json.dumps({"kind": "variant", **v.to_dict(), "scores": s}, ensure_ascii=False))
    return 0
