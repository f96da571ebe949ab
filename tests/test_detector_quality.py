"""A detector's measured quality is metadata shipped beside its model, written when the head is
measured (`modlens train-head`), and read only by the detector version it was measured with."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest

from modlens.cli import main
from modlens.detectors import quality, registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import DEFAULT_HEAD
from modlens.detectors.minilm6 import DEFAULT_HEAD6


def _measurement(**over):
    fields = {"metric": "ROC AUC", "value": 0.9, "dataset": "some pool", "split": "held out (20%)", "n": 10,
              "labelled_by": "people", "measured_on": "2026-12-01"}
    return quality.Measurement(**{**fields, **over})


def test_quality_is_read_only_for_the_version_it_was_measured_with(tmp_path):
    head = tmp_path / "h.json"
    head.write_text("{}")
    q = quality.Quality("v1", {"toxic": (_measurement(),)}, {"threat": "one class only"})
    path = quality.write(head, q)
    assert path.name == "h.quality.json"
    assert quality.for_head(head, "v1") == q
    assert quality.for_head(head, "v2") is None          # another version: not measured, never v1's figure
    assert quality.for_head(tmp_path / "other.json", "v1") is None  # no file beside it
    assert q.of("toxic")[0].line().startswith("ROC AUC 0.9000 on some pool, 10 rows held out (20%); labels: people")
    assert q.of("insult") == () and q.why_not("insult") == "not measured"
    assert q.why_not("threat") == "not measured (one class only)"


@pytest.mark.parametrize("text", ["{not json", '{"format": "other"}', '{"format": "modlens-quality/1", "labels": {}}',
                                  '{"format": "modlens-quality/1", "detector_version": "v", "labels": {"x": [{"value": 1}]}}'])
def test_an_unreadable_quality_file_is_refused_with_a_fix(tmp_path, text):
    head = tmp_path / "h.json"
    quality.path_beside(head).write_text(text)
    with pytest.raises(quality.QualityFileError) as err:
        quality.for_head(head, "v")
    assert "train-head" in err.value.fix and str(quality.path_beside(head)) in str(err.value)


def test_a_detector_with_an_unreadable_quality_file_does_not_load(tmp_path):
    head = shutil.copy(DEFAULT_HEAD, tmp_path / "h.json")
    quality.path_beside(tmp_path / "h.json").write_text("{not json")
    with pytest.raises(DetectorUnavailable) as err:
        registry.create("minilm-toxicity", head=str(head))
    assert err.value.status == "error" and "quality file" in str(err.value) and "train-head" in err.value.fix


@pytest.mark.slow  # trains a head, then loads the encoder four times (~15 s on 2 cores)
def test_train_head_writes_the_quality_it_measured_and_the_detector_reads_it(data_dir, tmp_path, capsys):
    out = tmp_path / "mine.json"
    assert main(["train-head", "--data", str(data_dir / "davidson" / "labeled_data.csv"), "--text-col", "tweet",
                 "--label-col", "class", "--positive", "0,1", "--sample", "80", "--seed", "3", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["quality"] == str(tmp_path / "mine.quality.json")
    det = registry.create("minilm-toxicity", head=str(out))
    [m] = det.quality.of("toxic")
    assert (m.metric, m.value, m.n) == ("ROC AUC", summary["heldout_auc"], 16)
    assert m.dataset == "labeled_data.csv" and "20% of a balanced seeded sample of 80, seed 3" in m.split
    assert m.labelled_by.startswith("people") and m.measured_on == datetime.now(timezone.utc).date().isoformat()
    assert det.quality.detector_version == det.version
    # the same head at another token width is another version: its quality was never measured
    det64 = registry.create("minilm-toxicity", head=str(out), max_length=64)
    assert det64.quality is None

    study = tmp_path / "study.toml"
    study.write_text(f'study_id = "q"\n[[detectors]]\nname = "minilm-toxicity"\noptions = {{ head = "{out}" }}\n'
                     f'[[detectors]]\nname = "minilm-toxicity"\nid = "short"\noptions = {{ head = "{out}", max_length = 64 }}\n'
                     '[perspective.attributes.INSULT]\ndetector = "short"\n')
    assert main(["perspective", "list", "--config", str(study), "--json"]) == 0
    rows = {r["attribute"]: r["answered_by"] for r in json.loads(capsys.readouterr().out)["attributes"]}
    [tox] = rows["TOXICITY"]
    assert tox["quality"] == [{"metric": "ROC AUC", "value": m.value, "dataset": "labeled_data.csv", "split": m.split,
                               "n": 16, "labelled_by": m.labelled_by, "measured_on": m.measured_on}]
    assert tox["not_measured"] is None
    [insult] = rows["INSULT"]
    assert insult["detector"] == "short" and insult["quality"] == [] and insult["not_measured"] == "not measured"


@pytest.mark.parametrize(("name", "head_path"), [("minilm-toxicity", DEFAULT_HEAD), ("minilm-toxicity-6", DEFAULT_HEAD6)])
def test_the_shipped_quality_is_the_shipped_heads_own_recorded_figures(name, head_path):
    det = registry.create(name)
    try:
        assert det.quality is not None and det.quality.detector_version == det.version
        metrics = json.loads(head_path.read_text())["metrics"]
        n_test = json.loads(head_path.read_text())["training"]["n_test"]
        if name == "minilm-toxicity":
            held, hatecheck = det.quality.of("toxic")
            assert (held.value, held.n) == (metrics["heldout_auc"], n_test) and held.labelled_by.startswith("people")
            assert (hatecheck.value, hatecheck.n) == (metrics["hatecheck"]["auc"], metrics["hatecheck"]["n"])
        else:
            [tox] = det.quality.of("toxicity")  # measured against the annotators' gold, not the teacher
            assert tox.value == metrics["heldout_auc_toxicity_vs_gold"] and tox.labelled_by.startswith("people")
            for label, auc in metrics["heldout_auc_vs_teacher"].items():
                if label == "toxicity":
                    continue
                if auc is None:  # threat: no figure, and the reason why
                    assert det.quality.of(label) == () and "undefined" in det.quality.why_not(label)
                else:
                    [m] = det.quality.of(label)
                    assert m.value == auc and m.n == n_test and m.labelled_by.startswith("a model, not people")
    finally:
        det.close()


def test_a_copied_head_brings_its_quality_only_with_the_file_beside_it(tmp_path):
    head = shutil.copy(DEFAULT_HEAD, tmp_path / "copy.json")
    det = registry.create("minilm-toxicity", head=str(head))
    try:
        assert det.quality is None  # no quality file beside the copy
        shutil.copy(quality.path_beside(DEFAULT_HEAD), quality.path_beside(tmp_path / "copy.json"))
        assert quality.for_head(tmp_path / "copy.json", det.version) is not None  # same bytes, same version
    finally:
        det.close()


def test_the_int8_twin_does_not_borrow_the_fp32_quality():
    det = registry.create("minilm-toxicity-int8")
    try:
        assert "+int8" in det.version and det.quality is None
    finally:
        det.close()
