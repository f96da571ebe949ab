"""`modlens attack --text` and `modlens perturb --attack` printed an attack whose result is unknown (the
target had no score for the texts the attack sent; `result_known` false) and exited 0, as if the target
had been asked and said no; the lines' scores are good (the result's text is the seed, which the target
answered), so nothing else said so. They now exit 1 after every line, saying
per target how many attacks have an unknown result, as `attack DATASET` and `audit --attack` do."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.perturb.attack_record import result_known

SEED = "you are such an idiot honestly"


@pytest.fixture
def study(tmp_path):
    """A target with a score for the seed alone (a cached table of one row): no answer for any
    text the attack makes of it."""
    (tmp_path / "seed.csv").write_text(f"text,score\n{SEED},0.9\n", encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text(f'[[detectors]]\nname = "cached"\nid = "seedonly"\n[detectors.options]\n'
                    f'path = "{tmp_path / "seed.csv"}"\nmappings = [["text", "score"]]\nname = "seedonly"\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [
    ["attack", "--target", "seedonly", "--no-ensemble", "--recipe", "deepwordbug", "--text", SEED],
    ["perturb", SEED, "--target", "seedonly", "--attack", "tae"],
], ids=["attack-text", "perturb-attack"])
def test_an_attack_whose_result_is_unknown_fails_the_command(study, capsys, command):
    code = main([*command, "--config", str(study)])
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert [line["kind"] for line in lines] == ["source", "variant"]  # every line printed first
    record = lines[1]["attack"]
    assert record["status"] == "failed" and not result_known(record), record
    assert all("error" not in answer for line in lines for answer in line["scores"].values())  # scores all good
    assert code == 1, out.err
    assert "1 attack on target seedonly has an unknown result" in out.err, out.err


def test_an_attack_whose_result_is_known_exits_0(capsys):
    # the same command with a target that answers every text: its result stands, exit 0
    assert main(["attack", "--target", "profanity-check", "--no-ensemble", "--recipe", "deepwordbug",
                 "--max-queries", "20", "--text", SEED]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert result_known(lines[1]["attack"])
