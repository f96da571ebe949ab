"""Accuracy floors on NoisyHate dev (the paper's rule) and HateCheck spell_* cases, and the
`modlens normalize` command. Floors sit just under the measured values (docs/NORMALIZE.md);
the NoisyHate ones also stay above the best baseline per type."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.datasets.noisyhate import read_pairs as load_noisyhate
from normalize_eval import (hatecheck_accuracy, load_hatecheck_spell,
                                        noisyhate_accuracy, noisyhate_accuracy_aligned, restored)
from modlens.normalize.pipeline import build_normalizer

# measured: overall 0.947, RepeatChar 0.965, Abbr 0.737, SpecialChar 0.966, MixedCase 0.976,
# MixedCase+ 0.963 (token at `position` followed through split/merged tokens, as before
# word_split); best baselines 0.748 / 0.62 / 0.711 / 0.82 / 0.924 / 0.954
NOISYHATE_FLOORS = {"overall": 0.94, "RepeatChar": 0.96, "Abbr": 0.72, "SpecialChar": 0.95,
                    "MixedCase": 0.97, "MixedCase+": 0.955}
HATECHECK_FLOOR = 0.77  # measured 0.786 over all 760 spell_* cases
HATECHECK_TYPE_FLOORS = {"spell_leet_h": 0.88, "spell_space_del_h": 0.77,  # measured 0.902, 0.787
                         "spell_char_del_h": 0.63, "spell_char_swap_h": 0.77,  # 0.643, 0.789
                         "spell_space_add_h": 0.76}                            # 0.780


@pytest.fixture(scope="module")
def normalizer():
    return build_normalizer()


def test_noisyhate_dev_floor(data_dir, normalizer):
    pairs = load_noisyhate(data_dir / "noisyhate" / "dev.csv")
    acc = noisyhate_accuracy_aligned(normalizer.normalize, pairs)
    for key, floor in NOISYHATE_FLOORS.items():
        assert acc[key] >= floor, f"{key}: {acc[key]:.3f} < {floor}"
    # word_split changes the token count of only a few dev sentences (measured 3 of 588);
    # the literal rule (no alignment) loses just those
    literal = noisyhate_accuracy(lambda t: normalizer.normalize(t).text, pairs)
    assert acc["overall"] - 0.01 <= literal["overall"] <= acc["overall"]


def test_noisyhate_rule_counts_the_token_at_position(data_dir):
    pair = load_noisyhate(data_dir / "noisyhate" / "dev.csv")[0]
    assert not restored(pair.perturbed, pair)                     # the perturbed text itself fails
    tokens = pair.perturbed.split()
    tokens[pair.position] = pair.clean_word.upper()
    assert restored(" ".join(tokens), pair)                       # compared lowercased


def test_hatecheck_spell_floor(data_dir, normalizer):
    cases = load_hatecheck_spell(data_dir / "hatecheck" / "test_suite_cases.csv")
    assert len(cases) == 760
    assert hatecheck_accuracy(lambda t: t, cases)["overall"] == 0.0
    acc = hatecheck_accuracy(lambda t: normalizer.normalize(t).text, cases)
    assert acc["overall"] >= HATECHECK_FLOOR
    for key, floor in HATECHECK_TYPE_FLOORS.items():
        assert acc[key] >= floor, f"{key}: {acc[key]:.3f} < {floor}"
    # without word_split no joined words are restored
    no_split = build_normalizer([s for s in normalizer.step_names if s != "word_split"])
    del_cases = [c for c in cases if c.functionality == "spell_space_del_h"]
    assert hatecheck_accuracy(lambda t: no_split.normalize(t).text, del_cases)["overall"] == 0.0


def test_word_split_rarely_fires_on_clean_hatecheck_cases(data_dir, normalizer):
    """HateCheck's 2,968 non-spell cases are clean text: a split there is a false positive
    (measured: 12 cases, all "shemale(s)", a slur the lexicon lacks)."""
    import csv
    with (data_dir / "hatecheck" / "test_suite_cases.csv").open(newline="", encoding="utf-8") as f:
        clean = [r["test_case"] for r in csv.DictReader(f) if not r["functionality"].startswith("spell_")]
    assert len(clean) > 2500
    split = [t for t in clean if any(e.step == "word_split" for e in normalizer.normalize(t).edits)]
    assert len(split) <= 20, split[:20]


def test_cli_texts_and_file(tmp_path, capsys):
    assert main(["normalize", "you are an idi0t", "democRATs"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["normalized"] for line in lines] == ["you are an idiot", "democrats"]
    assert lines[0]["edits"][0]["step"] == "leet" and lines[1]["edits"][0]["hidden"] == "rats"
    assert lines[0]["version"] == build_normalizer().version
    f = tmp_path / "in.txt"
    f.write_text("st*pid\n\nfine words\n", encoding="utf-8")
    assert main(["normalize", "--file", str(f)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["text"], line["normalized"]) for line in lines] == [("st*pid", "stupid"), ("fine words", "fine words")]


def test_cli_errors(tmp_path, capsys):
    assert main(["normalize"]) == 2
    assert main(["normalize", "--file", str(tmp_path / "missing.txt")]) == 3
    assert main(["normalize", "--steps", "leet,bogus", "x"]) == 2
    assert "bogus" in capsys.readouterr().err
