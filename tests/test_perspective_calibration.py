"""Perspective-scale calibrations, recorded-score readers, attribute mapping and `modlens pair --api-key`."""
from __future__ import annotations

import json

import pytest

from daemon_helpers import WordListDetector, study
from modlens.cli import main
from modlens.perspective import calibration, keys, languages
from modlens.perspective.attributes import resolve


def test_noisyhate_ships_recorded_perspective_scores():
    pairs = calibration.recorded_pairs("noisyhate")
    assert len(pairs) > 1000 and all(0 <= s <= 1 for _, s in pairs)
    assert len({t for t, _ in pairs}) == len(pairs)  # clean and perturbed sentences, each once


def test_cached_responses_as_perspective_returned_them(tmp_path):
    path = tmp_path / "cache.jsonl"
    rows = [{"text": "a", "response": {"attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.25}}}}},
            {"text": "b", "response": {"error": {"code": 400}}}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert calibration.recorded_pairs(str(path)) == [("a", 0.25)]
    with pytest.raises(calibration.CalibrationError, match="no such file"):
        calibration.recorded_pairs(str(tmp_path / "missing.csv"))


def test_isotonic_map_is_monotone_and_measured_on_held_out_pairs():
    ours = [i / 99 for i in range(100)]
    theirs = [x ** 3 for x in ours]
    cal = calibration.fit("TOXICITY", "d", "v1", ours, theirs, source="synthetic", label="toxic", holdout=0.3,
                          seed=1)
    assert cal.raw.pairs == cal.calibrated.pairs == 30
    assert cal.calibrated.mean_abs_diff < cal.raw.mean_abs_diff / 5
    assert set(cal.calibrated.at) == {"0.5", "0.7", "0.8", "0.9"}
    assert all(a <= b for a, b in zip(cal.y, cal.y[1:]))
    calibration.save(cal)
    assert calibration.load("TOXICITY", "d", "v1", "toxic").to_dict() == cal.to_dict()
    assert calibration.load("TOXICITY", "d", "v2", "toxic") is None  # another detector version gets no map
    assert calibration.load("TOXICITY", "d", "v1", "insult") is None  # nor another label of it
    assert calibration.load("TOXICITY", "e", "v1", "toxic") is None  # nor another detector of that version


def test_fit_recorded_scores_with_the_mapped_detector(tmp_path):
    path = tmp_path / "sass.csv"
    path.write_text("text,perspective\n" + "\n".join(f"{'idiot ' * (i % 3)}word {i},{(i % 3) / 3}" for i in range(30)))
    cal = calibration.fit_recorded(study(), "TOXICITY", str(path), detectors={"wordlist": WordListDetector()})
    assert (cal.detector, cal.version, cal.source, cal.label) == ("wordlist", "test-1", "sass.csv", "toxic")
    with pytest.raises(calibration.CalibrationError, match="no detector"):
        calibration.fit_recorded(study(), "THREAT", str(path), detectors={"wordlist": WordListDetector()})


def test_attribute_mapping_from_study_toml():
    cfg = study(perspective={"attributes": {"PROFANITY": {"detector": "wordlist", "label": "clean",
                                                          "languages": ["en", "de"]}}})
    got = resolve(cfg.perspective, {"wordlist": WordListDetector()})
    assert got["PROFANITY"].label == "clean" and got["PROFANITY"].languages == ("en", "de")
    assert got["TOXICITY"].detector == "wordlist" and "INSULT" not in got


@pytest.mark.parametrize("text,lang", [("you are so dumb", "en"), ("eres muy tonto y feo", "es"),
                                       ("これはペンです", "ja"), ("Ты дурак", "ru")])
def test_language_guess(text, lang):
    assert languages.detect(text) == [lang]


def test_pair_api_key_is_separate_from_the_pairing_token(capsys):
    assert main(["pair", "--api-key", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["api_key"] == keys.KeySource()() and first["url"].endswith("/v1alpha1/comments:analyze")
    assert main(["pair", "--api-key", "--rotate", "--json"]) == 0
    rotated = json.loads(capsys.readouterr().out)["api_key"]
    assert rotated != first["api_key"] and keys.KeySource()() == rotated
    assert main(["pair", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["token"] not in (rotated, first["api_key"])


def _insult_study():
    return study(perspective={"attributes": {"INSULT": {"detector": "wordlist", "label": "toxic"}}})


def test_noisyhate_calibrates_toxicity_only():
    """NoisyHate recorded Perspective's TOXICITY (perspective_clean / perspective_perturbed); its
    `insult`, `threat`, ... columns are Civil Comments' annotator shares, not Perspective's. A map
    stored as INSULT's 'onto Perspective's scale' fitted on TOXICITY would say what it is not."""
    with pytest.raises(calibration.CalibrationError, match="TOXICITY only"):
        calibration.fit_recorded(_insult_study(), "INSULT", "noisyhate", detectors={"wordlist": WordListDetector()})
    assert len(calibration.recorded_pairs("noisyhate", "TOXICITY")) > 1000


def test_a_column_of_another_attributes_scores_is_not_taken(tmp_path):
    path = tmp_path / "sass-like.csv"
    path.write_text("text,perspective_avg_toxicity\n" + "\n".join(f"{'idiot ' * (i % 3)}word {i},{(i % 3) / 3}"
                                                                  for i in range(30)))
    with pytest.raises(calibration.CalibrationError, match="no Perspective INSULT score column"):
        calibration.fit_recorded(_insult_study(), "INSULT", str(path), detectors={"wordlist": WordListDetector()})
    assert len(calibration.recorded_pairs(str(path), "TOXICITY")) == 30  # the column says TOXICITY: taken for it


def test_a_column_named_like_the_attribute_is_not_taken_for_perspectives(tmp_path):
    """`toxicity` is what Jigsaw's and Civil Comments' files (and NoisyHate's) call their annotators'
    share: taken only when the user names it (--score-column), never guessed as Perspective's."""
    path = tmp_path / "human.csv"
    path.write_text("text,toxicity\n" + "\n".join(f"comment {i},{i / 30}" for i in range(30)))
    with pytest.raises(calibration.CalibrationError, match="--score-column"):
        calibration.recorded_pairs(str(path), "TOXICITY")
    assert len(calibration.recorded_pairs(str(path), "TOXICITY", score_column="toxicity")) == 30


def test_column_options_are_honoured_on_noisyhate():
    """--text-column/--score-column on NoisyHate's layout read those columns, not both pairs silently."""
    both = calibration.recorded_pairs("noisyhate")
    perturbed = calibration.recorded_pairs("noisyhate", text_column="perturbed", score_column="perspective_perturbed")
    assert 0 < len(perturbed) < len(both)
    assert {t for t, _ in perturbed} <= {t for t, _ in both}


def test_the_table_says_how_many_pairs_were_fit_and_held_out(tmp_path, capsys):
    """`calibrate`'s table: its pair count was the held-out pairs alone under the header "pairs"."""
    from modlens.cli.perspective import _table

    cal = calibration.fit("TOXICITY", "d", "v1", [i / 99 for i in range(100)], [(i / 99) ** 2 for i in range(100)],
                          source="synthetic", label="toxic", holdout=0.3)
    head, row = _table([cal]).splitlines()
    assert "pairs fit/held out" in head and " 70/30 " in row


def test_a_map_stored_without_its_label_is_listed_and_never_applied():
    """Maps stored before the label was kept cannot say which label they map: `perspective list`
    shows them as such, and no call gets them (PERSPECTIVE.md, Calibration)."""
    from modlens.cli.perspective import _table

    cal = calibration.fit("TOXICITY", "wordlist", "test-1", [i / 20 for i in range(21)],
                          [(i / 20) ** 2 for i in range(21)], source="old", label="toxic")
    old = {k: v for k, v in cal.to_dict().items() if k != "label"}
    # where a lookup of this detector, version and label reads: only the map's own (missing) label
    # can keep it from being applied
    path = calibration._file("TOXICITY", "wordlist", "test-1", "toxic")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(old))
    [listed] = calibration.stored()
    assert listed.label is None and "label not recorded: never applied" in _table([listed])
    assert calibration.Maps().get("TOXICITY", "wordlist", "test-1", "toxic") is None
