"""score the log's texts with the detectors that have not scored them (merged studies)"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import modlens.study
from modlens.cli.common import (CliError, add_db_option, add_detectors_option, add_study_option, db_path,
                                fail_on_score_errors)
from modlens.errors import ErrorKind
from modlens.config import StudyConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", nargs="?", metavar="STUDY.sqlite", help="the study log (same as --db)")
    add_db_option(p)
    add_detectors_option(p, default="the --config study's detectors, else those of the study recorded in the log")
    add_study_option(p)
    p.add_argument("--chunk", type=int, default=256, help="texts scored per transaction (default 256)")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.add_argument("--variants", action="store_true",
                   help="instead: make the variants the daemon deferred (over the study's live variant budget), "
                        "scored by the study's detectors that load here (one that does not is named; with none, "
                        "nothing is made)")


def run(args: argparse.Namespace) -> int:
    from modlens.audit.rescore import LogNotFound, UnknownDetector, run_rescore
    from modlens.services.detectors import DetectorsNotLoaded
    from modlens.services.errors import SetupError
    from modlens.studylog.connection import StudyLogError

    if args.log and args.db and Path(args.log) != Path(args.db):
        raise CliError(f"two study logs given ({args.log} and --db {args.db}); give one")
    if args.chunk < 1:
        raise CliError(f"--chunk must be at least 1, not {args.chunk}")
    db = Path(args.log) if args.log else db_path(args)
    study = modlens.study.load(args.config) if args.config else None
    if args.variants:
        return _deferred_variants(db, study, args.chunk)
    try:
        result = run_rescore(db, study=study, detectors=args.detectors, chunk_size=args.chunk, progress=not args.quiet)
    except LogNotFound as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND, fix="give the merged log's path (modlens merge --out)") from None
    except UnknownDetector as err:
        fix = f"did you mean {' or '.join(err.suggestions)}?" if err.suggestions else "`modlens detectors` lists them"
        raise CliError(str(err), fix=fix) from None
    except DetectorsNotLoaded as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=err.fix) from None
    except SetupError as err:
        raise CliError(str(err)) from None
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=err.fix) from None
    for key, why in result.unavailable.items():
        print(f"modlens rescore: detector {key} not used: {why}", file=sys.stderr)
    print(json.dumps(result.to_dict(), indent=2))
    from modlens.audit.attack_checks import unmade_warnings
    for line in unmade_warnings(result.unchecked_attacks):  # not a failure (exit 0): a model not installed here
        print(f"modlens rescore: {line}", file=sys.stderr)
    # `scored` counts the texts answered with an error too
    errors = {k: {"scores": t.scored, "errors": t.errors, "first": t.first_error}
              for k, t in result.detectors.items() if t.errors}
    _say_errors(errors, "`modlens rescore` again scores them again")
    fail_on_score_errors(errors)  # some text got no score: exit 1, after the summary, as `modlens audit`
    return 0


def _say_errors(errors: dict[str, dict[str, Any]], again: str) -> None:
    """The line `modlens audit` prints per detector whose scores include errors (`errors`: per key
    {"scores", "errors", "first"}, as `AuditResult.score_errors`); `again`: what scores them again."""
    from modlens.audit.run import error_warnings

    for line in error_warnings(errors, again):
        print(f"modlens rescore: {line}", file=sys.stderr)


def _deferred_variants(db: Path, study: StudyConfig | None, chunk: int) -> int:
    from modlens.audit.deferred_variants import run_deferred_variants
    from modlens.audit.rescore import LogNotFound
    from modlens.services.detectors import DetectorsNotLoaded
    from modlens.services.errors import SetupError

    try:
        result = run_deferred_variants(db, study=study, chunk=chunk)
    except LogNotFound as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND, fix="give the study log's path") from None
    except DetectorsNotLoaded as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=err.fix) from None
    except SetupError as err:
        raise CliError(str(err), fix="enable [perturbation] in the study (--config STUDY.toml)") from None
    for key, why in result.unavailable.items():
        print(f"modlens rescore: detector {key} not used: {why}", file=sys.stderr)
    print(json.dumps(result.to_dict(), indent=2))
    _say_errors(result.score_errors, "`modlens rescore` scores them again")
    from modlens.audit.run import step_error_warnings
    for line in step_error_warnings(result.step_errors, "their comments are marked done: nothing makes their "
                                                        "variants again"):
        print(f"modlens rescore: {line}", file=sys.stderr)
    # a variant some detector gave no score, or a comment whose variants failed: exit 1, as the audit
    fail_on_score_errors(result.score_errors, step_errors=result.step_errors)
    return 0
