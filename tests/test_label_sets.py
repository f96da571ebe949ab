"""Gold labels as versioned label sets. Each (source, definition) is its own set; a new
`--label` adds a set and never rewrites one; the report names the set it used, `--label-set`
chooses one (the report made right after each audit can be made again), and the run records it."""
import json
import sqlite3

import pytest

from modlens.analysis.report import report_from_db
from modlens.audit import run_audit
from modlens.cli import main
from modlens.detectors.base import Detector


class LengthDetector(Detector):
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 60)} for t in texts]


def _file(tmp_path):
    """60 comments with a toxicity score: > 0.5 and > 0.8 split them differently."""
    f = tmp_path / "civil.csv"
    f.write_text("text,toxicity,target\n" + "".join(
        f"comment {i} {'x' * (i % 50)},{(i * 37 % 100) / 100:.2f},{'women' if i % 3 else 'muslim'}\n" for i in range(60)))
    return f


def _audit(f, db, label):
    return run_audit(str(f), db=db, detector_objects={"length": LengthDetector()}, progress=False,
                     reader_options={"label": label})


def _stable(report):
    """What must reproduce: everything but when it was made and the list of runs since."""
    return {k: v for k, v in json.loads(json.dumps(report, default=str)).items()
            if k not in ("generated_at", "audit_runs", "label_sets")}


def test_two_label_definitions_of_one_file_coexist_and_each_report_reproduces(tmp_path, capsys):
    f, db = _file(tmp_path), tmp_path / "log.sqlite"
    first = _audit(f, db, "toxicity>=0.5")
    after_first = report_from_db(db)
    second = _audit(f, db, "toxicity>=0.8")
    after_second = report_from_db(db)
    con = sqlite3.connect(db)
    sets = con.execute("SELECT label_set_id, source, definition FROM label_sets ORDER BY label_set_id").fetchall()
    civil = f"dataset:{first.dataset}"  # civil.csv, named by its content
    assert sets == [(1, civil, "toxicity >= 0.5"), (2, civil, "toxicity >= 0.8")]
    assert con.execute("SELECT label_set_id, count(*), sum(value = '1') FROM gold_labels GROUP BY label_set_id "
                       "ORDER BY label_set_id").fetchall() == [(1, 60, 30), (2, 60, 13)]
    assert con.execute("SELECT count(*) FROM labels WHERE name = 'toxic'").fetchone() == (0,)
    assert con.execute("SELECT run_id, label_set_id FROM audit_runs ORDER BY run_id").fetchall() == [
        (first.run_id, 1), (second.run_id, 2)]
    assert con.execute("SELECT count(*) FROM comments").fetchone() == (60,)  # one file: the same comments
    # the reports differ, and each names its set
    (src1,), (src2,) = after_first["sections"]["labelled"]["sources"], after_second["sections"]["labelled"]["sources"]
    assert (src1["positives"], src2["positives"]) == (30, 13)
    assert src1["label_set"] == {"label_set_id": 1, "definition": "toxicity >= 0.5"}
    (used,) = after_second["label_sets"]
    assert used.pop("created_at") and used == {
        "source": civil, "label_set_id": 2, "definition": "toxicity >= 0.8", "n": 60, "positives": 13,
        "chosen": "newest", "others": [{"label_set_id": 1, "definition": "toxicity >= 0.5", "n": 60}],
        "newer_empty": []}
    # either set, by id or by definition, gives the report made right after its audit
    assert _stable(report_from_db(db, ["1"])) == _stable(after_first)
    assert _stable(report_from_db(db, ["toxicity >= 0.5"])) == _stable(after_first)
    assert _stable(report_from_db(db, ["2"])) == _stable(after_second)
    assert report_from_db(db, ["1"])["label_sets"][0]["chosen"] == "asked"
    # auditing with the first definition again adds no set, rewrites nothing, and makes it the newest
    third = _audit(f, db, "toxicity>=0.5")
    assert third.n_scored == 0 and con.execute("SELECT count(*) FROM label_sets").fetchone() == (2,)
    assert _stable(report_from_db(db)) == _stable(after_first)
    # the CLI: --label-set chooses, an unknown one is a clear error naming the sets
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "json", "--label-set", "toxicity >= 0.8"]) == 0
    assert _stable(json.loads(capsys.readouterr().out)) == _stable(after_second)
    assert main(["report", "--db", str(db), "--format", "json", "--label-set", "7"]) != 0
    err = capsys.readouterr().err
    assert "no such label set" in err and f"2 ({civil}: toxicity >= 0.8)" in err
    html_out = tmp_path / "r.html"
    assert main(["report", "--db", str(db), "--out", str(html_out)]) == 0
    assert "Gold labels" in html_out.read_text() and "toxicity &gt;= 0.8" in html_out.read_text()


def test_a_set_is_never_rewritten(tmp_path):
    from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
    from modlens.studylog.store import StudyLog

    with StudyLog(tmp_path / "l.sqlite") as log:
        page = log.ensure_page("dataset:x", "f", None, None)
        cid = log.add_comment("dataset:x", "k", page, "hello")
        set_id = ensure_label_set(log, "dataset:x", "label (1/0)")
        assert ensure_label_set(log, "dataset:x", "label (1/0)") == set_id
        add_gold_labels(log, set_id, [(cid, "1")])
        add_gold_labels(log, set_id, [(cid, "0")])
        assert log.query("SELECT value FROM gold_labels") == [{"value": "1"}]


@pytest.mark.parametrize("reader,definition", [
    ("davidson", "class in {hate_speech, offensive_language}"), ("hatecheck", "label_gold in {hateful}"),
    ("noisyhate", "every sentence toxic (Civil Comments toxicity >= 0.5)")])
def test_each_dataset_states_its_gold_definition(data_dir, reader, definition):
    from modlens.datasets import registry

    assert registry.load(reader).gold == definition


def test_bundles_carry_gold_label_sets_and_merge_maps_them(tmp_path, monkeypatch):
    from modlens.exchange.bundle import read_bundle, write_bundle_file
    from modlens.exchange.merge import merge_files
    from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
    from modlens.studylog.store import StudyLog

    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    db = tmp_path / "participant.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("s1", "pilot", {})
        log.ensure_rater("s1", "r1", "2025-05-01T10:00:00Z")
        log.start_session("sess", "s1", "r1", "modlens-extension", "0.1", 1)
        page = log.ensure_page("dataset:x", "f", None, None)
        other = ensure_label_set(log, "dataset:y", "unrelated")  # no bundled comment has it: stays behind
        ids = []
        for i in range(3):
            cid = log.add_comment("dataset:x", f"k{i}", page, f"text {i}")
            log.add_sighting(cid, "sess")
            ids.append(cid)
        add_gold_labels(log, ensure_label_set(log, "dataset:x", "toxicity >= 0.5"), [(ids[0], "1"), (ids[1], "0")])
        add_gold_labels(log, ensure_label_set(log, "dataset:x", "toxicity >= 0.8"), [(ids[0], "0")])
        assert other
    path = tmp_path / "p.bundle"
    write_bundle_file(db, path, "s1")
    b = read_bundle(path)
    assert b.table("label_sets").column("definition").to_pylist() == ["toxicity >= 0.5", "toxicity >= 0.8"]
    merged = tmp_path / "merged.sqlite"
    with StudyLog(merged) as log:  # a set already there under another id: merged by (source, definition)
        ensure_label_set(log, "dataset:x", "toxicity >= 0.8")
    (result,) = merge_files(merged, [path])
    assert result["status"] == "merged"
    con = sqlite3.connect(merged)
    got = con.execute("SELECT s.definition, c.comment_key, g.value FROM gold_labels g JOIN label_sets s "
                      "USING (label_set_id) JOIN comments c USING (comment_id) ORDER BY 1, 2").fetchall()
    assert got == [("toxicity >= 0.5", "k0", "1"), ("toxicity >= 0.5", "k1", "0"), ("toxicity >= 0.8", "k0", "0")]
