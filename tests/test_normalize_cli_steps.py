"""`modlens normalize --help` listed the steps --steps takes as "available: ...", a hand-written list
that lacked word_split (in the default pipeline) and html_unescape, both of which --steps accepts:
the help said a step of the default pipeline could not be named. It now lists the registry."""
from __future__ import annotations

import json

from modlens.cli import _subparser, build_parser, main
from modlens.normalize.steps import REGISTRY


def test_normalize_help_lists_every_step_steps_accepts(capsys):
    text = _subparser(build_parser("normalize"), "normalize").format_help()
    listed = text.split("available:")[1].split(")")[0].replace("\n", " ")
    assert {s.strip() for s in listed.split(",")} == set(REGISTRY.names())
    assert main(["normalize", "--steps", "word_split", "muchdisdain"]) == 0
    assert json.loads(capsys.readouterr().out)["normalized"] == "much disdain"
