"""docs/CLI.md's command reference, generated from the parsers so it cannot drift from `--help`:
each command's docstring (summary, then details and examples) and a table of its arguments and
options, sub-actions (`modlens data fetch`, …) included; deprecated aliases and hidden options
are left out. `python -m modlens.cli.docs` prints it, `--write` replaces the generated block of
docs/CLI.md (tests/test_cli_help.py checks it is current)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modlens.docblock import write_block

from modlens.cli import COMMANDS, build_parser, command_doc, command_module, details, summary



def _metavar(action: argparse.Action) -> str:
    """What follows the flag, written out as one would type it (`KEY …`, `[N]`)."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "|".join(map(str, action.choices))
    else:
        name = action.dest if not action.option_strings else action.dest.upper()
    if action.nargs == "?":
        return f"[{name}]"
    if action.nargs == "*":
        return f"[{name} …]"
    if action.nargs == "+":
        return f"{name} …"
    if isinstance(action.nargs, int):
        return " ".join([name] * action.nargs)
    return name


def _cell(text: str) -> str:
    """Help text as one table cell: `|` would end the cell, `<x>` reads as an HTML tag, `*` as emphasis."""
    text = " ".join(text.split())
    for char in "|<*":
        text = text.replace(char, "\\" + char)
    return text


def _sentence(text: str) -> str:
    """A one-line help as a sentence: capitalised, with its full stop."""
    text = _cell(text)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:
        text = text % {**vars(action), "default": action.default}
    return _cell(text)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        metavar = _metavar(action)
        if action.option_strings:
            names = ", ".join(f"`{flag} {metavar}`".replace(" `", "`") for flag in action.option_strings)
        else:
            names = f"`{metavar}`"
        names = names.replace("|", "\\|")  # GitHub tables split cells at a | even inside code
        rows.append(f"| {names} | {_help(action)} |")
    if not rows:
        return []
    return ["| argument | means |", "|---|---|", *rows]


def _subactions(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _command(name: str, parser: argparse.ArgumentParser, doc: str) -> list[str]:
    out = [f"### `modlens {name}`", "", _sentence(summary(doc)), ""]
    if details(doc):
        out += [details(doc) or "", ""]
    table = _options(parser)
    if table:
        out += [*table, ""]
    sub = _subactions(parser)
    if sub is not None:
        helps = {a.dest: a.help or "" for a in sub._choices_actions}
        for action_name, action_parser in sub.choices.items():
            out += [f"#### `modlens {name} {action_name}`", "", _sentence(helps.get(action_name, "")), ""]
            table = _options(action_parser)
            out += [*table, ""] if table else []
    return out


def render_markdown() -> str:
    """Every command of `COMMANDS`, in `modlens --help` order."""
    out: list[str] = []
    for name in COMMANDS:
        sub = _subactions(build_parser(name))
        assert sub is not None
        out += _command(name, sub.choices[name], command_doc(command_module(name)))
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":  # python -m modlens.cli.docs [--write]: print, or update docs/CLI.md
    if sys.argv[1:] == ["--write"]:
        write_block(Path(__file__).resolve().parents[3] / "docs" / "CLI.md", render_markdown())
    else:
        sys.stdout.write(render_markdown())
