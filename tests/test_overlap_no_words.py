"""A text with no words (emoji, punctuation) has no key to look up in a hash set of fit texts (the
set leaves such texts out too): whether a detector was fit on it is unknown, not "not found". The
report's out-of-sample figures leave those rows out, and the export marks them neither way."""
from modlens import paths
from modlens.analysis import labelled, wide
from modlens.analysis.data import load
from modlens.audit import run_audit
from modlens.trainingdata import Training, contains, overlap, write_hashes
from csv_files import labelled_csv as _csv
from test_report_training_overlap import Fake

NO_WORDS = ["😂😂😂", "!!! ???", "🙄 …", "&#128514;&#128514;"]


def test_a_text_with_no_words_is_unknown_not_not_found(tmp_path):
    hashes = write_hashes(tmp_path / "h.bin", ["you fool", "😂😂😂"])
    t = Training(("pool",), "test pool", rows=2, hashes_path=hashes)
    assert contains(t.hashes(), ["You FOOL!", "a kind word", *NO_WORDS]) == [True, False, None, None, None, None]
    assert overlap(t, ["a kind word", "😂😂😂"]) == {"level": "none", "in_sample": 0, "checked": "hash", "no_words": 1}


def test_rows_with_no_words_are_left_out_of_the_out_of_sample_figures(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    rows = [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(40)]
    rows += [(t, i % 2) for i, t in enumerate(NO_WORDS)]
    hashes = write_hashes(tmp_path / "head.train-hashes.bin", [t for t, _ in rows[:10]])
    run_audit(str(_csv(tmp_path / "mine.csv", rows)), db=tmp_path / "log.sqlite", progress=False,
              detector_objects={"hashed": Fake("hashed", Training(("pool",), "test pool", rows=10, hashes_path=hashes))})
    data = load(tmp_path / "log.sqlite")
    (d,) = labelled.analyze(data)["sources"][0]["detectors"]
    assert d["n"] == 44 and d["training"]["in_sample"] == 10 and d["training"]["no_words"] == 4
    assert "4 rows have no words" in d["training"]["note"]
    assert d["out_of_sample"]["n"] == 30  # the rows looked up and not found, not the 4 no one can say of
    marks = wide._in_sample(data)
    texts = {cid: data.texts[c["text_id"]] for cid, c in data.comments.items()}
    assert sorted(f for (cid, _), f in marks.items() if texts[cid] not in NO_WORDS) == [False] * 30 + [True] * 10
    assert not [cid for (cid, _) in marks if texts[cid] in NO_WORDS]  # no mark: not known


def test_with_no_row_found_the_rows_looked_up_still_have_figures_of_their_own(tmp_path, monkeypatch):
    """None found, some rows with no words: the note says those are left out of the figures on rows
    not found, so those figures are given (the detector's own are over every row, the 4 included)."""
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    rows = [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(40)]
    rows += [(t, i % 2) for i, t in enumerate(NO_WORDS)]
    hashes = write_hashes(tmp_path / "head.train-hashes.bin", ["a text no row holds"])
    run_audit(str(_csv(tmp_path / "mine.csv", rows)), db=tmp_path / "log.sqlite", progress=False,
              detector_objects={"hashed": Fake("hashed", Training(("pool",), "test pool", rows=1, hashes_path=hashes))})
    (d,) = labelled.analyze(load(tmp_path / "log.sqlite"))["sources"][0]["detectors"]
    assert d["n"] == 44 and d["training"]["in_sample"] == 0 and d["training"]["no_words"] == 4
    assert "left out of the figures on rows not found" in d["training"]["note"]
    assert d["out_of_sample"] is not None and d["out_of_sample"]["n"] == 40
