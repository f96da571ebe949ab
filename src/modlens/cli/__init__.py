"""`modlens` command line. Each subcommand is one module defining `add_arguments(parser)` and
`run(args) -> int`, listed once in `COMMANDS` (in this package, but for `serve`, which lives in the
daemon and is named by its module path: the engine never imports it); an installed package adds
one under the entry point group `modlens.commands` (CONTRIBUTING.md). Its docstring is its
help: the first line is the summary `modlens --help` lists, the whole docstring what
`modlens CMD --help` prints, and docs/CLI.md's command reference is generated from the parsers
(`python -m modlens.cli.docs --write`). Shared options and the error type that `main` prints
(one line, one exit code per kind) are in `modlens.cli.common`."""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Any

from modlens import __version__
from modlens.cli.common import EXIT_INTERRUPTED, EXIT_OK, CliError, print_error
from modlens.errors import ModlensError
from modlens.names import MODULES, PluginError, Registry

# subcommand -> module in modlens.cli (or a full module path), the one listing (in `modlens --help`
# order); a module is imported only when its command runs, so `modlens --help` stays fast
COMMANDS: dict[str, str] = {
    "serve": "modlens.daemon.serve",   # the daemon's command: loaded by name, never imported by the engine
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
    "sample": "sample",
    "rate": "rate",
    "join": "join",
    "merge": "merge",
    "rescore": "rescore",
    "import": "import_parquet",
    "fuse": "fuse",
    "perspective": "perspective",
}
# the built-ins above, then subcommands installed packages add (a module with the same three parts)
COMMAND_REGISTRY = Registry("command", "modlens.cli", COMMANDS, group="modlens.commands",
                            needs=("add_arguments", "run"), kind=MODULES)


def command_module(name: str) -> str:
    """The full module path of the built-in command `name` ("modlens.cli.audit")."""
    return COMMAND_REGISTRY.module(name)


def command_doc(module: str) -> str:
    """A command module's docstring (`module`: its full path), read from its source without
    importing it (`modlens --help` lists every summary, and importing every command would cost each
    `modlens` run ~0.2 s), its indentation removed as `inspect.cleandoc` does."""
    spec = importlib.util.find_spec(module)
    doc = ""
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        doc = importlib.import_module(module).__doc__ or ""
    else:
        with Path(spec.origin).open("rb") as fh:
            for tok in tokenize.tokenize(fh.readline):
                if tok.type not in (tokenize.ENCODING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                    doc = str(ast.literal_eval(tok.string)) if tok.type == tokenize.STRING else ""
                    break
    return _cleandoc(doc)


def _cleandoc(doc: str) -> str:
    first, _, rest = doc.strip().partition("\n")
    return (first.strip() + "\n" + textwrap.dedent(rest)).rstrip()


def _plugin_command(name: str) -> Any:
    """An installed package's command module, or None (with a line on stderr) when it fails to import."""
    try:
        return COMMAND_REGISTRY.load(name)
    except PluginError as err:
        print(f"modlens: {err}\n  fix: {err.fix}", file=sys.stderr)
        return None


def summary(doc: str) -> str:
    """The first line of a docstring: the command's one-line help."""
    return doc.partition("\n")[0]


def details(doc: str) -> str | None:
    """The docstring after its first line: details and examples (None when there are none)."""
    return doc.partition("\n")[2].strip("\n") or None


def build_parser(load: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modlens", description="Audit content-moderation models on real comments.")
    parser.add_argument("--version", action="version", version=f"modlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # running a built-in command needs no plug-in: they are found (and imported) only to list or run one
    names = list(COMMANDS) if load in COMMANDS else COMMAND_REGISTRY.names()
    for name in names:
        plugin = None if name in COMMANDS else _plugin_command(name)
        if plugin is None and name not in COMMANDS:
            continue  # a plug-in that failed to import: said on stderr, the other commands still work
        doc = command_doc(command_module(name)) if plugin is None else _cleandoc(plugin.__doc__ or name)
        # the rest of the docstring (details, examples) follows the options, as written
        p = sub.add_parser(name, help=summary(doc), description=summary(doc), epilog=details(doc),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == load:
            mod = plugin or COMMAND_REGISTRY.load(name)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub: argparse.ArgumentParser = action.choices[name]
    return sub


def _unknown_flags(sub: argparse.ArgumentParser, extras: list[str]) -> CliError:
    """Arguments the command does not take, with the close matches among its flags (argparse
    alone prints the top-level usage and no suggestion)."""
    import difflib

    flags = [a.split("=", 1)[0] for a in extras if a.startswith("--")]
    known = [s for s in sub._option_string_actions if s.startswith("--")]
    close = {f: difflib.get_close_matches(f, known, n=2, cutoff=0.75) for f in flags}
    hints = [(f, " or ".join(m)) for f, m in close.items() if m]
    if len(hints) == 1:
        fix = f"did you mean {hints[0][1]}?"
    elif hints:
        fix = "; ".join(f"{f}: did you mean {m}?" for f, m in hints)
    else:
        fix = f"see `{sub.prog} --help`"
    return CliError(f"unrecognized argument(s): {' '.join(extras)}", fix=fix)


def _interrupted(command: str, argv: list[str], args: argparse.Namespace, err: KeyboardInterrupt) -> int:
    """Ctrl-C: what was kept, and, for a resumable command, the command that resumes it."""
    import shlex

    detail = f": {err}" if str(err) else ""
    print(f"\nmodlens {command}: interrupted{detail}", file=sys.stderr)
    if command == "attack" and getattr(args, "text", None):  # its texts are printed, never logged: nothing resumes
        print("  nothing was logged (texts given with --text are not); the lines above are all it did",
              file=sys.stderr)
    elif command in RESUMABLE:
        print(f"  resume: {shlex.join(['modlens', *argv])}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _file_for_folder(err: OSError) -> CliError | None:
    """A file given where a folder is needed (`import FILE`, `export --out FILE`, `--out FILE/x`), found
    by the operating system's refusal: one line naming the file, not a traceback. None for any other
    cause (e.g. a file created exclusively that exists), which stays an internal error."""
    if isinstance(err, FileExistsError):  # only mkdir's: a file created exclusively may exist for other reasons
        tb = err.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None or tb.tb_frame.f_code.co_name not in ("mkdir", "makedirs"):
            return None
    path = Path(str(err.filename or ""))
    for p in (path, *path.parents) if err.filename else ():
        if p.exists():
            if p.is_dir():
                return None
            return CliError(f"{p}: a file, where a folder is needed", fix="give a folder (or a new path)")
    return None


# commands that pick up where an interrupted run stopped when run again unchanged (`attack --text`,
# which logs nothing, excepted in _interrupted)
RESUMABLE = {"audit", "attack", "rescore", "import", "data"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is not None and command not in COMMAND_REGISTRY:
        from modlens.names import close_matches
        close = close_matches(command, COMMAND_REGISTRY.names())
        return print_error(command, CliError("unknown command", fix=f"did you mean {' or '.join(close)}?"
                                             if close else "see `modlens --help` for the commands"))
    parser = build_parser(command)
    args, extras = parser.parse_known_args(argv)
    if extras and command is not None:
        return print_error(command, _unknown_flags(_subparser(parser, command), extras))
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0 if not argv else 2
    try:
        return int(args._run(args) or EXIT_OK)
    except ModlensError as err:  # a command's own CliError, or any error it let through with its fix and kind
        return print_error(args.command, err)
    except (NotADirectoryError, FileExistsError) as err:
        wrong = _file_for_folder(err)
        if wrong is None:
            raise
        return print_error(args.command, wrong)
    except KeyboardInterrupt as err:
        return _interrupted(args.command, argv, args, err)
    except BrokenPipeError:  # `modlens … | head -1`: the reader left; end quietly, as a pipe's writer does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when stdout is flushed
        return EXIT_OK
