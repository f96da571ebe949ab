"""undo human-written perturbations (JSON lines)

One JSON line per text: the normalized text and each edit (docs/NORMALIZE.md).

    modlens normalize "you are an idiooot" "st*pid"
    modlens normalize --file comments.txt      # one text per line; "-" reads stdin
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from modlens.cli.common import CliError, utf8_lines
from modlens.errors import ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("texts", nargs="*", help="texts to normalize")
    parser.add_argument("--file", "-f", help="read one text per line from this file ('-' for stdin)")
    from modlens.normalize.steps import REGISTRY

    parser.add_argument("--steps", help="comma-separated steps instead of the default pipeline "
                        f"(available: {', '.join(REGISTRY.names())})")


def _inputs(args: argparse.Namespace) -> Iterator[str]:
    yield from args.texts
    if args.file:
        # bytes, decoded line by line: a line that is not UTF-8 stops the command with its number,
        # after the lines before it were printed (a text stream fails on the whole buffer, unsaid)
        stream = sys.stdin.buffer if args.file == "-" else Path(args.file).open("rb")
        with stream:
            yield from utf8_lines(stream, "stdin" if args.file == "-" else args.file, "were normalized")


def run(args: argparse.Namespace) -> int:
    from modlens.normalize.pipeline import build_normalizer

    if not args.texts and not args.file:
        raise CliError("no texts given", fix="give texts as arguments, or --file F (one per line; - for stdin)")
    if args.file and args.file != "-" and not Path(args.file).is_file():
        raise CliError(f"no such file: {args.file}", kind=ErrorKind.NOT_FOUND)
    try:
        normalizer = build_normalizer([s.strip() for s in args.steps.split(",") if s.strip()] if args.steps else None)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for text in _inputs(args):
        result = normalizer.normalize(text)
        print(json.dumps({"text": text, "normalized": result.text,
                          "edits": [e.to_dict() for e in result.edits],
                          "normalizer": result.normalizer, "version": result.version}, ensure_ascii=False))
    return 0
