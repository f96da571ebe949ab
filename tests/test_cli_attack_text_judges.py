"""`attack DATASET` (and `audit --attack`) leaves a cached score table out of the judges: it knows only
its own texts, so it could never judge an attack's flip (`answers_any_text`). `attack --text` and
`perturb --attack` made every other loaded detector a judge, the table included: each flip it had no
row for became an unknown result, where the dataset path, with the same detectors, judged it. They now
pick the judges by the same rule."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.perturb.attack_record import result_known

SEED = "you are such an idiot honestly"


@pytest.fixture
def study(tmp_path):
    """profanity-check, and a cached table with a score for the seed alone."""
    (tmp_path / "t.csv").write_text(f"text,score\n{SEED},0.9\n", encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text('[[detectors]]\nname = "profanity-check"\n'
                    f'[[detectors]]\nname = "cached"\nid = "tbl"\n[detectors.options]\npath = "{tmp_path / "t.csv"}"\n'
                    'mappings = [["text", "score"]]\nname = "tbl"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [
    ["attack", "--target", "profanity-check", "--recipe", "deepwordbug", "--max-queries", "20", "--text", SEED],
    ["perturb", SEED, "--target", "profanity-check", "--attack", "tae", "--max-queries", "20"],
], ids=["attack-text", "perturb-attack"])
def test_a_cached_table_scores_the_result_but_does_not_judge_it(study, capsys, command):
    main([*command, "--config", str(study)])  # exit 1: the table has no score for the result's text
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    variant = lines[1]
    assert variant["params"]["judges"] == []  # profanity-check is the target; the table judges nothing
    assert variant["attack"]["status"] == "success" and result_known(variant["attack"]), variant["attack"]
    assert "tbl" in variant["scores"]  # it still scores the result
