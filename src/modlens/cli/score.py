"""score one-off texts without a daemon: one JSON line per text with every detector's scores

Without texts, reads one text per line from stdin (UTF-8; blank lines skipped). A blank text given as an
argument gets its line with `not_scored` (why: empty, whitespace only) and no detector's number, as
the audit and the daemon leave such texts unscored. `--detectors` takes every word after it:
write the texts before it, or after `--`. A detector that gives no score for a text (it failed,
or had none) puts `error` in that text's line; the command then exits 1, after every line. A
detector named with --detectors that cannot load stops it before any line (exit 1); of the
default detectors, one that cannot load is said on stderr and left out.

    modlens score "you are a stupid idiot" "have a nice day"
    modlens score --detector hf-classifier -o hf-classifier.preset=unitary/toxic-bert "text"
    echo "stup1d 1d1ot" | modlens score --normalize
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from modlens.cli.common import CliError, add_detectors_option, detector_configs, utf8_lines
from modlens.datasets.base import blank_reason
from modlens.errors import ErrorKind
from modlens.detectors.base import Detector, LabelScores
from modlens.engine import answers_or_errors
from modlens.services.detectors import load_detectors

DEFAULT_DETECTORS = ("minilm-toxicity", "profanity-check")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="*", help="texts to score (none: read one text per line from stdin)")
    add_detectors_option(parser, default=", ".join(DEFAULT_DETECTORS), keys="registry keys or cached:PATH...")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="NAME.KEY=VALUE",
                        help="detector option; VALUE is parsed as JSON when it can be (repeatable)")
    parser.add_argument("--normalize", action="store_true",
                        help="also score the normalized text (modlens.normalize pipeline)")


def parse_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """NAME.KEY=VALUE items as {detector name: {option: value}}; a VALUE is any JSON, else the string."""
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, opt = key.partition(".")  # detector names hold no "."; values may
        if not sep or not dot or not name or not opt:
            raise ValueError(f"bad option {item!r}: expected NAME.KEY=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        options.setdefault(name, {})[opt] = parsed
    return options


def _score(det: Detector, texts: list[str]) -> list[LabelScores | None]:
    """A command's call: a remote detector's `ascore` on a loop of its own, run to the end."""
    return asyncio.run(det.ascore(texts)) if det.remote else det.score(texts)


def detector_answers(detectors: dict[str, Detector], texts: list[str]) -> list[dict[str, dict[str, object]]]:
    """Per text, each detector's JSON answer (name, version, labels and toxicity, or the error): the
    answers of `modlens score`, `perturb` and `attack --text`, which `fail_on_no_score` then checks."""
    per_text: list[dict[str, dict[str, object]]] = [{} for _ in texts]
    for key, det in detectors.items():  # one failing detector must not hide the others' answers
        for out, (labels, tox, error) in zip(per_text, answers_or_errors(det, texts, _score)):
            out[key] = {"name": det.name, "version": det.version, "labels": labels, "toxicity": tox}
            if error is not None:
                out[key]["error"] = error
    return per_text


def _scored(detectors: dict[str, Detector], texts: list[str]) -> list[dict[str, object]]:
    """Per text, {"scores": each detector's answer}, or {"not_scored": why} for a blank one
    (`blank_reason`: nothing to score, as the audit and the daemon leave it)."""
    why = [blank_reason(t) for t in texts]
    answers = iter(detector_answers(detectors, [t for t, w in zip(texts, why) if w is None]))
    return [{"not_scored": w} if w is not None else {"scores": next(answers)} for w in why]


def _texts_taken_as_detectors(specs: list[str]) -> list[str]:
    """The last specs of `--detectors` that name no detector and look like no misspelt one: texts
    written after `--detectors`, which takes every word after it (`score --detectors X "text"`)."""
    from modlens.detectors import registry
    from modlens.names import close_matches
    from modlens.services.detectors import DetectorSpecError, parse_detector_spec

    taken: list[str] = []
    for spec in reversed(specs):
        try:
            parse_detector_spec(spec)
        except DetectorSpecError:
            if not close_matches(spec, registry.available()):
                taken.insert(0, spec)
                continue
        break
    return taken


def fail_on_no_score(rows: list[dict[str, object]]) -> None:
    """After every line is out: exit 1 (failed), naming per detector that answered some text with
    an error (it failed, or had no score for it) how many of the texts it was asked to score, and its
    first error. Exit 0 would say every text was scored. Normalized texts count as texts."""
    asked: dict[str, int] = {}
    failed: dict[str, list[str]] = {}
    for row in rows:
        for part in (row, row.get("normalized") or {}):
            answers: dict[str, dict[str, object]] = part.get("scores") or {}  # type: ignore[attr-defined]
            for key, answer in answers.items():
                asked[key] = asked.get(key, 0) + 1
                if "error" in answer:
                    failed.setdefault(key, []).append(str(answer["error"]))
    if failed:
        raise CliError("; ".join(f"detector {key} gave no score for {len(errors)} of {asked[key]} texts ({errors[0]})"
                                 for key, errors in failed.items()), kind=ErrorKind.FAILED,
                       fix="each line above carries its error; `modlens detectors` shows each detector's status")


def _stdin_texts() -> list[str]:
    """One text per non-blank line of stdin, read as bytes and decoded as UTF-8 (`utf8_lines`): Python's
    text stdin would turn a line that is not into other characters, which would be scored unsaid."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # stdin replaced by a text stream (`main` called from a program): already text
        return [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
    return list(utf8_lines(buffer, "stdin", "were not scored either"))


def run(args: argparse.Namespace) -> int:
    names = args.detectors or list(DEFAULT_DETECTORS)
    # the detectors are checked before stdin is read: in a terminal, a text taken for a detector
    # name would leave the command waiting for input
    taken = _texts_taken_as_detectors(names) if args.detectors else []
    if taken:
        raise CliError(f"--detectors took {', '.join(map(repr, taken))} as detector name(s), and no detector "
                       "is called that: --detectors takes every word after it",
                       fix="write the texts before --detectors (modlens score TEXT... --detectors KEY...), or after "
                           "`--` (modlens score --detectors KEY... -- TEXT...); `modlens detectors` lists the names")
    configs = detector_configs(names)  # an unknown name is an error, with the close matches
    texts = list(args.text) or _stdin_texts()
    if not texts:
        raise CliError("no texts given", fix="give texts as arguments, or one per line on stdin")
    try:
        options = parse_options(args.option)
    except ValueError as err:
        raise CliError(str(err)) from None
    unused = set(options) - set(names)
    if unused:
        raise CliError(f"options given for detector(s) not selected: {sorted(unused)}",
                       fix="add them with --detector, or drop their -o options")
    normalizer = None
    if args.normalize:
        from modlens.normalize.pipeline import build_normalizer  # heavy: only when asked for
        normalizer = build_normalizer()
    loaded = load_detectors([c.model_copy(update={"options": {**c.options, **options.get(c.key, {})}}) for c in configs])
    loaded.require([c.key for c in configs] if args.detectors else ())  # one named that cannot load, or none: no line scored by the rest
    for line in loaded.warnings():  # a default detector that cannot load: said, left out
        print(f"modlens score: {line}", file=sys.stderr)
    detectors = loaded.detectors
    try:
        rows: list[dict[str, object]] = [{"text": t, **s} for t, s in zip(texts, _scored(detectors, texts))]
        if normalizer is not None:
            normalized = [normalizer.normalize(t) for t in texts]
            changed = _scored(detectors, [n.text for n in normalized])
            for row, norm, s in zip(rows, normalized, changed):
                row["normalized"] = {**norm.to_dict(), **s}
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
    finally:
        loaded.close()
    fail_on_no_score(rows)
    return 0
