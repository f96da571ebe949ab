"""One set of attack defaults: `audit --attack --recipe X` and `attack --recipe X` run the
recipe with the same limits (the recipe's own when no flag is given), the character attack keeps
its 200 queries and 0.25 edit share, and both commands' help says so."""
from __future__ import annotations

import json
import sqlite3

import pytest

from modlens.cli import build_parser, main
from modlens.perturb import recipes


def _attack_params(db) -> dict:
    with sqlite3.connect(db) as con:
        (params,) = con.execute("SELECT params_json FROM audit_runs ORDER BY run_id DESC LIMIT 1").fetchone()
    return json.loads(params)["attack"]


@pytest.fixture
def toxic_csv(tmp_path):
    f = tmp_path / "seeds.csv"  # one seed: the tests read the limits a run records, which do not depend on the rows
    f.write_text("text,toxic\nyou are a stupid idiot,1\n", encoding="utf-8")
    return f


def _audit(f, db, *extra):
    return main(["audit", str(f), "--db", str(db), "--detectors", "profanity-check", "--attack", "tae",
                 "--targets", "profanity-check", "--no-ensemble", "--quiet", *extra])


def _attack(f, db, *extra):
    return main(["attack", str(f), "--db", str(db), "--target", "profanity-check", "--no-ensemble", "--quiet", *extra])


@pytest.mark.parametrize("recipe", ["deepwordbug", "a2t"])
def test_audit_and_attack_run_a_recipe_with_the_same_default_limits(recipe, toxic_csv, tmp_path, capsys):
    assert _audit(toxic_csv, tmp_path / "audit.sqlite", "--recipe", recipe) == 0
    assert _attack(toxic_csv, tmp_path / "attack.sqlite", "--recipe", recipe) == 0
    audit, attack = _attack_params(tmp_path / "audit.sqlite"), _attack_params(tmp_path / "attack.sqlite")
    own = recipes.create(recipe).parts
    fraction = next((o["fraction"] for k, o in own["constraints"] if k == "max_words_changed"), None)
    assert (audit["max_queries"], audit["max_edit_ratio"]) == (attack["max_queries"], attack["max_edit_ratio"]) \
        == (own["max_queries"], fraction)


def test_explicit_limits_apply_to_both_and_the_character_attack_keeps_its_own(toxic_csv, tmp_path, capsys):
    limits = ["--max-queries", "30", "--max-edit-fraction", "0.5"]
    assert _audit(toxic_csv, tmp_path / "audit.sqlite", "--recipe", "deepwordbug", *limits) == 0
    assert _attack(toxic_csv, tmp_path / "attack.sqlite", "--recipe", "deepwordbug", *limits) == 0
    for db in ("audit.sqlite", "attack.sqlite"):
        p = _attack_params(tmp_path / db)
        assert (p["max_queries"], p["max_edit_ratio"]) == (30, 0.5), db
    assert _audit(toxic_csv, tmp_path / "char.sqlite") == 0
    p = _attack_params(tmp_path / "char.sqlite")
    assert (p["max_queries"], p["max_edit_ratio"], p.get("recipe")) == (200, 0.25, None)


@pytest.mark.parametrize("command", ["audit", "attack"])
def test_the_help_says_what_the_default_limits_are(command):
    p = build_parser(command)
    sub = next(a for a in p._actions if a.dest == "command").choices[command]
    helps = {s: a.help for a in sub._actions for s in a.option_strings}
    assert "the recipe's own" in helps["--max-queries"] and "the recipe's own" in helps["--max-edit-fraction"]
    if command == "audit":
        assert "200" in helps["--max-queries"] and "0.25" in helps["--max-edit-fraction"]
    args = p.parse_args([command, "x.csv"])
    assert (args.query_budget, args.max_edit_ratio) == (None, None)  # None: the attack's own, resolved when built
