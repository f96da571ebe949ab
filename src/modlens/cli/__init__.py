"""`modlens` command line. Each subcommand is one module in this package defining
`add_arguments(parser)` and `run(args) -> int`; its docstring's first line is its help.
Register a new one with one line in `COMMANDS`. Shared options and the error type that
`main` prints (one line, one exit code per kind) are in `modlens.cli.common`."""
from __future__ import annotations

import argparse
import importlib
import sys

from modlens import __version__
from modlens.cli.common import EXIT_INTERRUPTED, EXIT_OK, CliError, print_error

# subcommand -> module in modlens.cli (imported lazily so `modlens --help` stays fast)
COMMANDS: dict[str, str] = {
    "serve": "serve",
    "pair": "pair",
    "feed": "feed",
    "status": "status",
    "export": "export",
    "detectors": "detectors",
    "score": "score",
    "train-head": "train_head",
    "normalize": "normalize",
    "perturb": "perturb",
    "audit": "audit",
    "attack": "attack",
    "data": "data",
    "report": "report",
    "browse": "browse",
    "extension": "extension",
    "study": "study",
    "join": "join",
    "merge": "merge",
    "rescore": "rescore",
    "import": "import_parquet",
    "fuse": "fuse",
}

HELP: dict[str, str] = {
    "serve": "run the daemon the browser extension talks to",
    "pair": "show or rotate the pairing token the extension must present",
    "feed": "replay comments from a CSV/JSONL file through the running daemon",
    "status": "is a daemon running, which detectors are loaded, counts in the log",
    "export": "export the study log as tidy tables with a data dictionary",
    "detectors": "list the detectors and whether each can load here",
    "score": "score one-off texts without a daemon (JSON lines)",
    "train-head": "train the embedded MiniLM toxicity head from labelled data",
    "normalize": "undo human-written perturbations (JSON lines)",
    "perturb": "generate perturbed variants of a text and score them",
    "audit": "run the engine over a dataset into the study log",
    "attack": "attack a detector with a named recipe (DeepWordBug, TextBugger, A2T, PWWS, TextFooler, ToxicTrap)",
    "data": "list the known datasets, or download their full public versions",
    "report": "write the analysis report (HTML or JSON) from the study log",
    "browse": "start Chromium with the extension loaded and paired",
    "extension": "build the browser extension's store archives, or print its folder",
    "study": "write, check and pack a multi-participant study folder",
    "join": "join a study: configure this computer's daemon from the researcher's study.modlens",
    "merge": "merge participants' bundles into one study log, or list what a merged log holds",
    "rescore": "score the log's texts with the detectors that have not scored them (merged studies)",
    "import": "load the Parquet shards of `modlens audit --out-parquet DIR` into the study log",
    "fuse": "generate DUO semantic-fusion test cases (text, emoji, images, speech, video) into the log",
}


def build_parser(load: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modlens", description="Audit content-moderation models on real comments.")
    parser.add_argument("--version", action="version", version=f"modlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        p = sub.add_parser(name, help=HELP.get(name, ""), description=HELP.get(name, ""))
        if name == load:
            mod = importlib.import_module(f"modlens.cli.{module}")
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0 if not argv else 2
    try:
        return int(args._run(args) or EXIT_OK)
    except CliError as err:
        return print_error(args.command, err)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
