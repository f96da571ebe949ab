"""generate DUO semantic-fusion test cases (toxic seeds split across text, emoji, images, speech, video)

    modlens fuse --list
    modlens fuse --pairs 10 --detectors profanity-check
    modlens fuse --content-type abuse_hate --fusion T+E --fusion I+T --images ./pictures --score
    modlens fuse --pairs-file pairs.csv --no-oracle --export ./cases

Keyword pairs come from the shipped datasets (or --pairs-file), fill the templates into seed
sentences, and the oracle keeps the seeds the study's text detectors (or --detectors) find toxic.
Each seed goes through each fusion; the cases, their media (under --media-dir) and one run row
go into the study log (--db). A rerun with the same settings adds nothing. --score then scores
every case in the log with the detectors; --export writes a JSONL manifest and the media files
for external moderation APIs. The summary is printed as JSON (docs/FUSION.md). A case part some
detector gave no score for (an error row, scored again by the next --score) is said on stderr and
makes it exit 1 after the summary, as `modlens audit` does.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import modlens.study
from modlens.cli.common import (CliError, add_db_option, add_detectors_option, add_study_option, db_path,
                                detector_configs, fail_on_score_errors)
from modlens.errors import ErrorKind, inline_fix, with_fix
from modlens.paths import hash_file

if TYPE_CHECKING:
    from modlens.config import StudyConfig
    from modlens.detectors.base import Detector
    from modlens.fusion.keywords import KeywordPair
    from modlens.fusion.seeds import OracleResult, Seed
    from modlens.services.detectors import LoadedDetectors

DEFAULT_PAIRS = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--list", action="store_true", help="print the templates, fusions and keyword sources, then exit")
    p.add_argument("--content-type", dest="content_types", action="append", metavar="TYPE",
                   help="abuse_hate, spam or sexual (repeatable; default: all)")
    p.add_argument("--fusion", dest="fusions", action="append", metavar="NAME",
                   help="fusion type, e.g. T+E, T+I, I+T, I, V+T, V+A, A+T, V+A+T (repeatable; default: all that "
                        "can run here)")
    p.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                   help=f"keyword pairs per content type (default {DEFAULT_PAIRS})")
    p.add_argument("--pairs-file", metavar="CSV", help="explicit keyword pairs, lines content_type,a,b "
                                                      "(instead of extracting them from the datasets)")
    p.add_argument("--templates", metavar="FILE", help="more templates (TOML, the layout of the shipped "
                                                      "fusion/data/templates.toml; same name replaces)")
    p.add_argument("--images", metavar="DIR", help="pictures for keywords: DIR/<label>/*.png|jpg")
    p.add_argument("--emoji-table", metavar="FILE", help="more keyword -> emoji rows (keyword<TAB>emoji<TAB>note)")
    p.add_argument("--seed", type=int, help="random seed of pair sampling and every transform (default: the study's, 0)")
    p.add_argument("--no-oracle", action="store_true", help="keep every seed (do not require a detector to find it toxic)")
    p.add_argument("--oracle-rule", choices=["any", "all"], default="any",
                   help="a seed is kept when any (default) or all of the text detectors that answered find it toxic")
    add_detectors_option(p, default="the study's detectors",
                         keys="registry names or study keys: the oracle's judges and, with --score, the scorers")
    add_study_option(p, "--study", "--config")
    add_db_option(p)
    p.add_argument("--media-dir", metavar="DIR", help="where case media are written (default: the study's media "
                                                     "folder, media/ in $MODLENS_HOME)")
    p.add_argument("--export", metavar="DIR", help="also write the cases as cases.jsonl + media files to DIR")
    p.add_argument("--score", action="store_true", help="then score every case in the log with the detectors")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _note(message: str) -> None:
    print(f"modlens fuse: {message}", file=sys.stderr)


def list_lines() -> list[str]:
    from modlens.fusion import fusions
    from modlens.fusion.keywords import KEYWORD_SOURCES
    from modlens.fusion.templates import load_templates

    lines = ["templates:"]
    for t in load_templates().values():
        lines += [f"  {t.name} ({t.content_type}): {t.pattern}, middle {'/'.join(t.middle)} by {t.middle_rule}",
                  f"      A: {t.a}", f"      B: {t.b}"]
    lines.append("fusions:")
    for name in fusions.available():
        err = fusions.unavailable_reason(name)
        state = "ready" if err is None else f"unavailable: {with_fix(err)}"
        lines.append(f"  {name}: {fusions.describe(name)} [{state}]")
    lines.append("keyword sources:")
    lines += [f"  {k}: {v}" for k, v in KEYWORD_SOURCES.items()]
    return lines


def _check(args: argparse.Namespace) -> None:
    from modlens.fusion import fusions
    from modlens.fusion.case import CONTENT_TYPES
    from modlens.names import UnknownName

    for ct in args.content_types or []:
        if ct not in CONTENT_TYPES:
            raise CliError(f"--content-type {ct!r} is not one of {', '.join(CONTENT_TYPES)}")
    try:
        fusions.check(args.fusions or [])
    except UnknownName as err:
        raise CliError(err.message, fix=err.fix) from None
    if args.pairs < 1:
        raise CliError(f"--pairs must be at least 1, not {args.pairs}")
    for flag, value in (("--images", args.images), ("--pairs-file", args.pairs_file),
                        ("--templates", args.templates), ("--emoji-table", args.emoji_table)):
        if value and not Path(value).exists():
            raise CliError(f"{flag} {value}: not found", kind=ErrorKind.NOT_FOUND)
    if args.images and not Path(args.images).is_dir():
        raise CliError(f"--images {args.images}: not a folder", fix="give a folder of label folders: DIR/<label>/*.png")


def _fusions(args: argparse.Namespace) -> list[str]:
    """The requested fusions (an unavailable one requested by name is an error), else all that can run."""
    from modlens.fusion import fusions
    from modlens.fusion.generate import runnable

    names = list(dict.fromkeys(args.fusions or fusions.available()))
    ok, missing = runnable(names)
    for name, why in missing.items():
        if args.fusions:
            raise CliError(f"fusion {name} cannot run here: {why['reason']}", kind=ErrorKind.FAILED, fix=why["fix"])
        _note(f"fusion {name} skipped: {inline_fix(why['reason'], why['fix'])}")
    if not ok:
        raise CliError("no fusion can run here", kind=ErrorKind.FAILED, fix="`modlens fuse --list` says what each needs")
    return ok


def _pairs(args: argparse.Namespace, content_types: list[str], seed: int) -> list[KeywordPair]:
    from modlens.fusion import keywords

    try:
        if args.pairs_file:
            pairs = [p for p in keywords.read_pairs_file(args.pairs_file) if p.content_type in content_types]
            lexica = None
            try:
                lexica = keywords.Lexica()
            except keywords.KeywordError as err:  # the pairs are given: check them with less
                _note(f"pairs not checked for nonsense: {err}")
            good = []
            for p in pairs:
                problem = keywords.pair_problem(p.content_type, p.a, p.b, lexica)
                if problem:
                    _note(f"pair {p.content_type},{p.a},{p.b} dropped: {problem}")
                else:
                    good.append(p)
            return good
        lexica = keywords.Lexica()
        out = []
        for ct in content_types:
            got = keywords.extract_pairs(ct, args.pairs, random.Random(f"{seed}|pairs|{ct}"), lexica)
            if len(got) < args.pairs:
                _note(f"{ct}: only {len(got)} keyword pairs (asked for {args.pairs})")
            out += got
        return out
    except keywords.KeywordError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=err.fix) from None


def _load_detectors(args: argparse.Namespace, study: StudyConfig) -> LoadedDetectors:
    from modlens.services.detectors import load_detectors

    configs = detector_configs(args.detectors, study) if args.detectors else list(study.detectors)
    loaded = load_detectors(configs)
    # each one --detectors named must load, and one at least (the study's that cannot are said, left out)
    loaded.require([c.key for c in configs] if args.detectors else (),
                   fix="see `modlens detectors`; pass --detectors with ones that load (profanity-check), or --no-oracle")
    for line in loaded.warnings():
        _note(line)
    return loaded


def _oracle(args: argparse.Namespace, seeds: list[Seed], detectors: dict[str, Detector]) -> OracleResult:
    from modlens.fusion.seeds import OracleError, apply_oracle, no_oracle

    if args.no_oracle:
        return no_oracle(seeds)
    try:
        result = apply_oracle(seeds, detectors, args.oracle_rule)
    except OracleError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=err.fix) from None
    unanswered = result.unanswered()  # a judge with no score for a seed did not find it benign
    benign = "no detector found toxic" if args.oracle_rule == "any" else "not every detector that answered found toxic"
    for ct, counts in result.summary()["by_content_type"].items():
        if counts["dropped"]:
            hint = " (toxicity detectors rarely flag spam: --no-oracle keeps them)" if ct == "spam" else ""
            why = [f"{n} {what}" for n, what in ((counts["dropped"] - unanswered.get(ct, 0), benign),
                                                 (unanswered.get(ct, 0), "no detector had a score for")) if n]
            _note(f"{ct}: the oracle dropped {counts['dropped']} of {counts['kept'] + counts['dropped']} "
                  f"seeds: {'; '.join(why)}{hint}")
    return result


def _media_reader(args: argparse.Namespace, study: StudyConfig) -> dict[str, Detector] | None:
    """The default scorers of fused cases: the study's detectors, plus `asr` (speech recognition,
    OCR of pictures and video frames, then MiniLM) unless the study already reads audio."""
    from modlens.config import DetectorConfig
    from modlens.services.detectors import load_detectors

    if any(d.name == "asr" for d in study.detectors):
        return None
    loaded = load_detectors([DetectorConfig(name="asr")])
    for line in loaded.warnings():
        _note(line)
    if loaded.detectors:
        _note("scoring with asr as well: speech, pictures and video frames read, then minilm-toxicity "
              "(--detectors chooses the scorers)")
    return dict(loaded.detectors) or None


def _digest(path: str | None) -> str | None:
    return hash_file(hashlib.sha256(), path).hexdigest()[:16] if path else None


def run(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(list_lines()))
        return 0
    _check(args)
    from modlens.fusion.case import CONTENT_TYPES
    from modlens.fusion.emoji import EmojiTableError, load_emoji_table
    from modlens.fusion.fusions.base import FusionContext
    from modlens.fusion.generate import generate
    from modlens.fusion.seeds import make_seeds
    from modlens.fusion.templates import TemplateError, load_templates

    study = modlens.study.load(args.study)
    seed = study.perturbation.seed if args.seed is None else args.seed
    content_types = list(dict.fromkeys(args.content_types or CONTENT_TYPES))
    names = _fusions(args)
    try:
        templates = load_templates(args.templates)
        emoji_table = load_emoji_table(Path(args.emoji_table) if args.emoji_table else None)
    except TemplateError as err:
        raise CliError(str(err), fix="see the layout of the shipped templates.toml (docs/FUSION.md)") from None
    except EmojiTableError as err:
        raise CliError(str(err), fix=err.fix) from None
    pairs = _pairs(args, content_types, seed)
    seeds = make_seeds(pairs, templates, seed)
    need_detectors = not args.no_oracle or args.score
    loaded = _load_detectors(args, study) if need_detectors else None
    detectors = loaded.detectors if loaded is not None else {}
    try:
        oracle = _oracle(args, seeds, detectors)
        ctx = FusionContext(emoji_table, Path(args.images) if args.images else None, run_seed=seed)
        progress = None if args.quiet else _progress
        generated = generate(oracle.kept, names, ctx, progress=progress)
        if progress is not None:
            print(file=sys.stderr)
        for skip in generated.skipped:  # every skip, with its reason (the report counts them too)
            _note(f"{skip['fusion']} skipped {skip['seed']!r}: {skip['reason']}")
        params = {"seed": seed, "content_types": content_types, "fusions": names, "pairs": args.pairs,
                  "pairs_file": args.pairs_file, "pairs_file_sha256": _digest(args.pairs_file),
                  "templates": args.templates, "templates_sha256": _digest(args.templates),
                  "emoji_table": args.emoji_table, "emoji_table_sha256": _digest(args.emoji_table),
                  "images": args.images, "oracle": {**oracle.summary(), "toxic_by": oracle.verdicts()},
                  "skipped": generated.skipped}
        summary: dict[str, Any] = {"pairs": len(pairs), "seeds": len(seeds), "oracle": oracle.summary(),
                                   "generation": generated.summary()}
        scorers = dict(detectors)
        if args.score and not args.detectors and loaded is not None:
            media_reader = _media_reader(args, study)
            if media_reader is not None:
                loaded.detectors.update(media_reader)  # closed with the others
                scorers.update(media_reader)
        written, score_errors = _write(args, generated.cases, params, scorers)
        summary.update(written)
    finally:
        if loaded is not None:
            loaded.close()
    from modlens.audit.run import error_warnings
    for line in error_warnings(score_errors, "`modlens fuse --score` again scores them again", "case parts"):
        _note(line)
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    fail_on_score_errors(score_errors, "case parts")  # an error row: exit 1, after the summary, as the audit
    return 0


def _progress(done: int, total: int) -> None:
    print(f"\rmodlens fuse: {done}/{total} seed x fusion", end="", file=sys.stderr, flush=True)


def _write(args: argparse.Namespace, cases: list[Any], params: dict[str, Any],
           detectors: dict[str, Detector]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The cases into the log (and --export), scored with --score: the summary's part, and per detector
    whose scores include error rows {"scores", "errors", "first"} (as `AuditResult.score_errors`)."""
    from modlens.fusion.record import record_cases
    from modlens.media.store import MediaStore
    from modlens.studylog.store import StudyLog
    from modlens.studylog.connection import StudyLogError

    store = MediaStore(args.media_dir) if args.media_dir else MediaStore()
    out: dict[str, Any] = {"db": str(db_path(args)), "media_dir": str(store.root)}
    score_errors: dict[str, dict[str, Any]] = {}
    try:
        with StudyLog(db_path(args)) as log:
            out["recorded"] = record_cases(log, cases, store, params).to_dict()
            if args.score:
                from modlens.audit.fused import score_cases
                out["scored"] = score_cases(log, detectors, store)
                score_errors = _score_errors(out["scored"])
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=getattr(err, "fix", None)) from None
    if args.export:
        from modlens.fusion.export import export_cases
        readable = {m for d in detectors.values() for m in d.modalities} or {"text"}
        verdicts = None if args.no_oracle else params["oracle"]["toxic_by"]
        out["export"] = export_cases(cases, args.export, readable=readable, verdicts=verdicts,
                                     run={"run_id": out["recorded"]["run_id"], **params}).to_dict()
    return out, score_errors


def _score_errors(scored: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per detector key whose scoring of this run left error rows (a call that raised, a media file
    missing, an OCR read that failed, no answer: `audit.fused._row`; retried by the next run): the
    parts it scored, the errors, and the first error this run wrote, as `score_cases` tallied them.
    A part it cannot read here (`not_scored_locally`) is an answer, no error."""
    return {key: {"scores": t["pending"], "errors": t["errors"], "first": t["first_error"]}
            for key, t in scored["detectors"].items() if t["errors"]}
