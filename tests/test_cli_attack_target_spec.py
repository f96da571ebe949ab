"""`modlens attack --target cached:PATH[...]`: the target named by a spec (not a registry name or a
study key) loads under its key (`cached`, or the spec's NAME), and the command looked it up by the
spec: --text stopped with a KeyError traceback, DATASET with "attack targets: cached:… not loaded
(loaded: cached, …)", exit 2, about a target that had loaded. Both now attack it by its key."""
from __future__ import annotations

import json
import sqlite3

import pytest

from modlens.cli import main

TEXT = "have a nice day"  # the table scores it 0.1: the target already calls it benign, so the attack skips it


@pytest.fixture(autouse=True)
def home(monkeypatch, tmp_path):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))


@pytest.fixture
def target(tmp_path):
    table = tmp_path / "scores.csv"
    table.write_text(f"text,score\n{TEXT},0.1\n", encoding="utf-8")
    return f"cached:{table}:text=score:table"


def test_attack_text_finds_a_target_named_by_a_spec(target, capsys):
    assert main(["attack", "--recipe", "deepwordbug", "--target", target, "--no-ensemble", "--text", TEXT]) == 0
    source, variant = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert source["target"] == "table" and variant["attack"]["target"] == "table"
    assert variant["attack"]["status"] == "skipped" and variant["attack"]["source_score"] == 0.1


def test_attack_dataset_finds_a_target_named_by_a_spec(tmp_path, target, capsys):
    seeds, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    seeds.write_text(f"text,toxic\n{TEXT},1\n", encoding="utf-8")  # a toxic gold label: a seed of the tae goal
    code = main(["attack", str(seeds), "--db", str(db), "--quiet", "--recipe", "deepwordbug", "--target", target,
                 "--no-ensemble"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert list(json.loads(out.out)["attacks"]) == ["table"]
    with sqlite3.connect(db) as con:
        (record,) = [json.loads(r[0]) for r in con.execute("SELECT attack_json FROM variants WHERE attack_json IS NOT NULL")]
    assert record["target"] == "table" and record["status"] == "skipped"
