"""Generate perturbed variants of a text (or attack a detector) and score them (JSON lines).

The first line per input is the source text with its scores; each following line is a
variant (strategy, params, seed, edited spans, attack result when --attack) with its scores
from every loaded detector.
"""
from __future__ import annotations

import argparse
import json
import sys

from modlens.config import DetectorConfig, StudyConfigError, load_study
from modlens.detectors import registry as detector_registry
from modlens.detectors.base import Detector, DetectorUnavailable
from modlens.perturb import registry
from modlens.perturb.attack import GreedyAttack
from modlens.perturb.generate import VariantGenerator
from modlens.perturb.importance import detector_score_fn, word_importance

PREFERRED_TARGETS = ("minilm-toxicity", "profanity-check")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="+", help="text(s) to perturb")
    parser.add_argument("--strategy", action="append", metavar="S",
                        help=f"strategy key (repeatable; default: the study's). Known: {', '.join(registry.available())}")
    parser.add_argument("--target", metavar="DETECTOR", help="detector key guiding word importance / attacked "
                        "(default: the study's target, else minilm-toxicity, else profanity-check)")
    parser.add_argument("--detector", action="append", metavar="NAME",
                        help="detector to load and score with (repeatable; default: the study's detectors)")
    parser.add_argument("--study", metavar="FILE", help="study.toml (default: embedded defaults)")
    parser.add_argument("--budget", type=int, help="variants per text (default: the study's)")
    parser.add_argument("--seed", type=int, help="random seed (default: the study's)")
    parser.add_argument("--threshold", type=float, help="word-importance threshold (default: the study's)")
    parser.add_argument("--attack", choices=["tae", "bae"], help="run a greedy attack on the target instead")
    parser.add_argument("--max-queries", type=int, default=200, help="attack query budget (default 200)")
    parser.add_argument("--max-edit-fraction", type=float, default=0.25, help="attack: max share of words edited")
    parser.add_argument("--perturbations", metavar="JSON", help="word -> human perturbations table for human_lookup")


def _load_detectors(configs: list[DetectorConfig]) -> dict[str, Detector]:
    loaded = {}
    for cfg in configs:
        try:
            loaded[cfg.key] = detector_registry.create(cfg.name, **cfg.options)
        except (DetectorUnavailable, KeyError) as err:
            fix = getattr(err, "fix", "")
            print(f"modlens perturb: detector {cfg.key} not loaded: {err}" + (f" (fix: {fix})" if fix else ""), file=sys.stderr)
    return loaded


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
    try:
        study = load_study(args.study)
    except StudyConfigError as err:
        print(err, file=sys.stderr)
        return 2
    p = study.perturbation
    configs = [DetectorConfig(name=n) for n in args.detector] if args.detector else study.detectors
    detectors = _load_detectors(configs)
    target = _pick_target(args.target or p.target, detectors)
    if (args.target or args.attack) and target is None:
        print(f"modlens perturb: target detector {args.target or '(any)'} is not loaded; loaded: {list(detectors) or 'none'}",
              file=sys.stderr)
        return 2
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
        print(f"modlens perturb: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
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
