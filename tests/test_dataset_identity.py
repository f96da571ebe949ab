"""A dataset item's key includes its source's identity (a stable id column where the
file has one, else the file's content hash), so two files never share a comment and the same
file audited again resumes."""
import csv
import sqlite3

from modlens.audit import run_audit
from modlens.datasets import registry
from modlens.detectors.base import Detector
from sass_release import as_released

# the released SASS files' column names (datasets/sass.py)
SASS_COLUMNS = ["text", "category", "tag", "human_toxicity", "perspective_avg_toxicity"]
CATEGORIES = ["Blackmail", "Classism", "Exclusionary", "Gaslighting", "Misogyny", "Sarcasm", "Sexual Harassment",
              "Stereotyping", "False Positive", "Neutral"]


class LengthDetector(Detector):
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


def _sass_file(path, part: int, n: int) -> list[dict[str, str]]:
    rows = [{"text": f"part {part} comment {i}: " + "words " * (i % 13), "category": CATEGORIES[i % 10],
             "tag": "Filtered" if i % 2 else "Unfiltered", "human_toxicity": f"{(i * 7 + part) % 100 / 100:.2f}",
             "perspective_avg_toxicity": f"{(i * 3 + part) % 100 / 100:.2f}"} for i in range(n)]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=SASS_COLUMNS, delimiter="\t")
        w.writeheader()
        w.writerows(rows)
    return rows


def _audit(path, db):
    return run_audit(str(path), db=db, detector_objects={"length": LengthDetector()}, progress=False)


def _run_comments(db, run_id: int) -> dict[str, dict[str, str]]:
    """text -> {label name: value} of every comment the run completed."""
    con = sqlite3.connect(db)
    try:
        out: dict[str, dict[str, str]] = {}
        for text, name, value in con.execute(
                "SELECT t.text, l.name, l.value FROM run_items ri JOIN comments c USING (comment_id) "
                "JOIN texts t USING (text_id) LEFT JOIN labels l ON l.comment_id = c.comment_id WHERE ri.run_id = ?",
                (run_id,)):
            out.setdefault(text, {})[name] = value
        return out
    finally:
        con.close()


def test_four_sass_files_into_one_log_give_875_comments_each_linked_to_its_own_file(tmp_path):
    db = tmp_path / "log.sqlite"
    files = {}
    for part, n in enumerate((250, 250, 250, 125), 1):
        path = tmp_path / f"sass_part{part}.tsv"
        files[path] = _sass_file(path, part, n)
    with as_released(*files):  # they stand in for the four released files (SASS's name is for its bytes)
        results = {path: _audit(path, db) for path in files}
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM comments").fetchone()[0] == 875
    assert con.execute("SELECT count(DISTINCT platform) FROM comments").fetchone()[0] == 1  # one source: dataset:sass
    for path, rows in files.items():
        got = _run_comments(db, results[path].run_id)
        assert len(got) == len(rows) and set(got) == {r["text"] for r in rows}
        for r in rows:  # each comment carries its own row's labels, not another file's
            assert got[r["text"]]["category"] == r["category"]
            assert got[r["text"]]["human_score"] == f"{float(r['human_toxicity']):.6g}"
    # the same file again: resumed from the log, nothing new
    with as_released(*files):
        again = _audit(next(iter(files)), db)
    assert again.n_scored == 0
    assert con.execute("SELECT count(*) FROM comments").fetchone()[0] == 875
    assert con.execute("SELECT count(*) FROM texts").fetchone()[0] == 875


def test_two_files_of_one_name_in_different_folders_do_not_share_comments(tmp_path):
    db = tmp_path / "log.sqlite"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "data.csv").write_text("text,toxic\n" + "".join(f"{folder} text {i},{i % 2}\n" for i in range(5)))
        _audit(tmp_path / folder / "data.csv", db)
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), count(DISTINCT comment_key) FROM comments").fetchone() == (10, 10)


def test_keys_carry_the_content_hash_unless_the_file_has_an_id_column(tmp_path):
    from modlens.datasets.base import file_digest

    plain = tmp_path / "plain.csv"
    plain.write_text("text,label\nhello,0\nyou idiot,1\n")
    digest = file_digest(plain)
    assert len(digest) == 16 and digest == file_digest(plain)  # a prefix of sha256, stable
    assert [it.key for it in registry.load(str(plain)).iter_items()] == [f"{digest}:row-0", f"{digest}:row-1"]
    copy = tmp_path / "copy.csv"
    copy.write_bytes(plain.read_bytes())
    assert [it.key for it in registry.load(str(copy)).iter_items()] == [f"{digest}:row-0", f"{digest}:row-1"]
    with_ids = tmp_path / "ids.csv"
    with_ids.write_text("comment_id,text,label\nc7,hello,0\nc9,you idiot,1\n")
    assert [it.key for it in registry.load(str(with_ids), id_col="comment_id").iter_items()] == ["c7", "c9"]


def test_two_files_of_one_ordinary_stem_with_different_contents_are_two_sources(tmp_path):
    """Two different `data.csv` (an ordinary stem, no known data set's) were one data set `data`:
    pooled under one platform, reported as one source, and with an id column the second file's rows
    took the first file's comments. Different bytes are two sources; the same bytes under another
    name and folder are the first one's."""
    from modlens.analysis import labelled
    from modlens.analysis.data import load

    db = tmp_path / "log.sqlite"
    names = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "data.csv"
        path.write_text("id,text,toxic\n" + "".join(f"{i},{folder} text {i},{i % 2}\n" for i in range(5)))
        names.append(run_audit(str(path), db=db, detector_objects={"length": LengthDetector()}, progress=False,
                               reader_options={"id_col": "id"}).dataset)
    assert names[0] != names[1] and "data" not in names
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), count(DISTINCT platform) FROM comments").fetchone() == (10, 2)
    texts = {r[0] for r in con.execute("SELECT text FROM texts")}
    assert {f"{f} text {i}" for f in "ab" for i in range(5)} <= texts  # b's rows are b's comments, not a's
    by = {s["source"]: s["n"] for s in labelled.analyze(load(db))["sources"]}
    assert by == {f"dataset:{names[0]}": 5, f"dataset:{names[1]}": 5}
    # the same bytes under another name in another folder: the same source, and the audit resumes
    copy = tmp_path / "elsewhere" / "copy.csv"
    copy.parent.mkdir()
    copy.write_bytes((tmp_path / "a" / "data.csv").read_bytes())
    assert registry.load(str(copy), id_col="id").name == names[0]
    assert registry.load(str(copy)).name == registry.load(str(tmp_path / "a" / "data.csv")).name


def test_two_folders_of_one_name_with_different_files_are_two_sources(tmp_path):
    """A folder of data files was named by the folder: two different `shards/` folders were one data set,
    and with an id column the second folder's rows took the first folder's comments. A folder is named
    by its content (its files' relative paths and content hashes); the same files elsewhere are the same
    data set."""
    from modlens.scale.sources import load_dataset

    db = tmp_path / "log.sqlite"
    names = []
    for run in ("a", "b"):
        folder = tmp_path / run / "shards"
        folder.mkdir(parents=True)
        for part in range(2):
            (folder / f"part-{part}.csv").write_text(
                "id,text,toxic\n" + "".join(f"{i},{run} part {part} text {i},{i % 2}\n" for i in range(3)))
        names.append(run_audit(str(folder), db=db, detector_objects={"length": LengthDetector()}, progress=False,
                               reader_options={"id_col": "id"}).dataset)
    assert names[0] != names[1] and "shards" not in names
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), count(DISTINCT platform) FROM comments").fetchone() == (12, 2)
    copy = tmp_path / "c" / "elsewhere"
    copy.mkdir(parents=True)
    for f in (tmp_path / "a" / "shards").iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert load_dataset(str(copy), id_col="id").name == load_dataset(str(copy)).name == names[0]
