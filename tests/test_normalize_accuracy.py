"""Accuracy floors on NoisyHate dev (the paper's rule) and HateCheck spell_* cases, and the
`modlens normalize` command. Floors sit just under the measured values (docs/NORMALIZE.md);
the NoisyHate ones also stay above the best baseline per type."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.normalize.evaluate import (hatecheck_accuracy, load_hatecheck_spell, load_noisyhate,
                                        noisyhate_accuracy, restored)
from modlens.normalize.pipeline import build_normalizer

# measured: overall 0.947, RepeatChar 0.965, Abbr 0.737, SpecialChar 0.966, MixedCase 0.976,
# MixedCase+ 0.963; best baselines 0.748 / 0.62 / 0.711 / 0.82 / 0.924 / 0.954
NOISYHATE_FLOORS = {"overall": 0.94, "RepeatChar": 0.96, "Abbr": 0.72, "SpecialChar": 0.95,
                    "MixedCase": 0.97, "MixedCase+": 0.955}
HATECHECK_FLOOR = 0.62  # measured 0.639 over all 760 spell_* cases (space deletions unsolved)


@pytest.fixture(scope="module")
def normalizer():
    return build_normalizer()


def test_noisyhate_dev_floor(shared_data, normalizer):
    pairs = load_noisyhate(shared_data / "noisyhate" / "dev.csv")
    acc = noisyhate_accuracy(lambda t: normalizer.normalize(t).text, pairs)
    for key, floor in NOISYHATE_FLOORS.items():
        assert acc[key] >= floor, f"{key}: {acc[key]:.3f} < {floor}"


def test_noisyhate_rule_counts_the_token_at_position(shared_data):
    pair = load_noisyhate(shared_data / "noisyhate" / "dev.csv")[0]
    assert not restored(pair.perturbed, pair)                     # the perturbed text itself fails
    tokens = pair.perturbed.split()
    tokens[pair.position] = pair.clean_word.upper()
    assert restored(" ".join(tokens), pair)                       # compared lowercased


def test_hatecheck_spell_floor(shared_data, normalizer):
    cases = load_hatecheck_spell(shared_data / "hatecheck" / "test_suite_cases.csv")
    assert len(cases) == 760
    assert hatecheck_accuracy(lambda t: t, cases)["overall"] == 0.0
    acc = hatecheck_accuracy(lambda t: normalizer.normalize(t).text, cases)
    assert acc["overall"] >= HATECHECK_FLOOR
    assert acc["spell_leet_h"] >= 0.85


def test_cli_texts_and_file(tmp_path, capsys):
    assert main(["normalize", "you are an idi0t", "democRATs"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [l["normalized"] for l in lines] == ["you are an idiot", "democrats"]
    assert lines[0]["edits"][0]["step"] == "leet" and lines[1]["edits"][0]["hidden"] == "rats"
    assert lines[0]["version"] == build_normalizer().version
    f = tmp_path / "in.txt"
    f.write_text("st*pid\n\nfine words\n", encoding="utf-8")
    assert main(["normalize", "--file", str(f)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(l["text"], l["normalized"]) for l in lines] == [("st*pid", "stupid"), ("fine words", "fine words")]


def test_cli_errors(tmp_path, capsys):
    assert main(["normalize"]) == 2
    assert main(["normalize", "--file", str(tmp_path / "missing.txt")]) == 2
    assert main(["normalize", "--steps", "leet,bogus", "x"]) == 2
    assert "bogus" in capsys.readouterr().err
