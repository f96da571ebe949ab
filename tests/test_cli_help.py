"""Help from one source: each subcommand's module docstring is its help (first line: the summary in
`modlens --help`; the whole docstring: `modlens CMD --help`), and docs/CLI.md's command reference
is generated from the parsers (`python -m modlens.cli.docs --write`)."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from modlens.cli import COMMANDS, build_parser, command_module, main

DOC = Path(__file__).resolve().parents[1] / "docs" / "CLI.md"


def module_doc(command: str) -> str:
    return importlib.import_module(command_module(command)).__doc__ or ""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_summary_in_modlens_help_is_the_module_docstrings_first_line(command):
    summary = module_doc(command).splitlines()[0]
    assert summary and summary == summary.strip() and not summary.endswith("."), \
        f"{command_module(command)}: the docstring's first line is the summary (no full stop)"
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert helps[command] == summary


@pytest.mark.parametrize("command", ["attack", "normalize", "feed"])
def test_command_help_shows_the_whole_docstring(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    for line in module_doc(command).strip().splitlines():
        assert line.rstrip() in out


def test_cli_md_is_generated_from_the_parsers():
    from modlens.cli.docs import render_markdown

    text = DOC.read_text(encoding="utf-8")
    assert render_markdown() in text, "docs/CLI.md is stale: python -m modlens.cli.docs --write"
    for command in COMMANDS:
        assert f"### `modlens {command}`" in text


def test_the_reference_lists_every_option_and_subcommand():
    from modlens.cli.docs import render_markdown

    text = render_markdown()
    assert "`--max-queries N`" in text and "`--db PATH`" in text   # shared options, with their metavars
    assert "#### `modlens data fetch`" in text and "#### `modlens study pack`" in text
    assert "argparse.SUPPRESS" not in text and "==SUPPRESS==" not in text
    assert "--query-budget" not in text   # deprecated aliases stay out of the reference
