"""Batch audits: dataset readers, the NoisyHate Table 4 number end to end, resumption, bad input."""
import json
import sqlite3

import pytest

from modlens.audit import AuditError, parse_detector_spec, run_audit
from modlens.cli import main
from modlens.datasets import registry as datasets
from modlens.datasets.base import DatasetError
from modlens.detectors.base import Detector

from log_helpers import table_counts

PERSPECTIVE = "cached:{path}:clean=perspective_clean,perturbed=perspective_perturbed:perspective"


class LengthDetector(Detector):
    """A tiny deterministic test detector: longer texts look more toxic."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def __init__(self):
        self.calls = []

    def score(self, texts):
        self.calls.append(len(texts))
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


def counts(db):
    return table_counts(db, ("comments", "texts", "scores", "variants", "labels", "run_items", "audit_runs"))


def test_noisyhate_table4_perspective_end_to_end(data_dir, tmp_path, capsys):
    """NoisyHate Table 4, Perspective, dev half: accuracy at 0.5 is 0.816 clean, 0.639 perturbed."""
    db, nh = tmp_path / "log.sqlite", data_dir / "noisyhate" / "dev.csv"
    assert main(["audit", str(nh), "--db", str(db), "--quiet", "--detectors", PERSPECTIVE.format(path=nh)]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (det,) = report["sections"]["robustness"]["detectors"]
    row = next(r for r in det["rows"] if r["type"] == "all")
    assert det["detector"] == "perspective" and row["n_pairs"] == 588
    assert round(row["acc_clean"], 3) == 0.816
    assert round(row["acc_perturbed"], 3) == 0.639
    assert row["delta_acc"] == pytest.approx(0.639 - 0.816, abs=1e-3)
    assert row["delta_auc"] > 0  # perturbed curve lies below the clean one
    assert {r["type"] for r in det["rows"]} >= {"RepeatChar", "Abbr", "SpecialChar", "MixedCase", "MixedCase+"}
    assert report["detectors"][0]["version"] in det["version"] and "perspective" not in report["sections"].get("human", {})


def test_resume_after_interruption_has_no_duplicates(data_dir, tmp_path):
    nh = data_dir / "noisyhate" / "dev.csv"
    spec = [PERSPECTIVE.format(path=nh)]

    def interrupt(n_done):
        raise KeyboardInterrupt

    db = tmp_path / "log.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(nh), db=db, detectors=spec, limit=120, chunk_size=50, progress=False, on_chunk=interrupt)
    partial = counts(db)
    assert partial["run_items"] == 50
    again = run_audit(str(nh), db=db, detectors=spec, limit=120, chunk_size=50, progress=False)
    assert again.resumed and again.n_skipped == 50 and again.run_id == 1
    straight = tmp_path / "straight.sqlite"
    run_audit(str(nh), db=straight, detectors=spec, limit=120, chunk_size=50, progress=False)
    assert counts(db) == counts(straight)
    con = sqlite3.connect(db)
    assert con.execute("SELECT status, n_done, n_items FROM audit_runs").fetchall() == [("finished", 120, 120)]
    # a later run with the same settings adds a run but no rows, and re-scores nothing
    third = run_audit(str(nh), db=db, detectors=spec, limit=120, chunk_size=50, progress=False)
    assert third.n_scored == 0 and counts(db)["comments"] == 120 and counts(db)["audit_runs"] == 2


def test_hatecheck_spell_cases_become_variants_and_use_the_batcher(data_dir, tmp_path):
    det = LengthDetector()
    res = run_audit("hatecheck", db=tmp_path / "l.sqlite", detector_objects={"length": det}, progress=False)
    con = sqlite3.connect(tmp_path / "l.sqlite")
    assert res.n_items == 3728 and con.execute("SELECT count(*) FROM comments").fetchone()[0] == 3728
    assert con.execute("SELECT count(*) FROM variants WHERE strategy = 'human:hatecheck'").fetchone()[0] == 760
    assert con.execute("SELECT DISTINCT platform FROM comments").fetchall() == [("dataset:hatecheck",)]
    n_texts = con.execute("SELECT count(*) FROM texts").fetchone()[0]
    assert max(det.calls) > 1 and sum(det.calls) == n_texts  # batched; every distinct text scored once
    assert con.execute("SELECT value FROM labels l JOIN comments c USING (comment_id) "
                       "WHERE c.comment_key = 'case-1' AND name = 'functionality'").fetchone() == ("derog_neg_emote_h",)


def test_readers_for_generic_sass_and_davidson(tmp_path, data_dir):
    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "text": "hello", "toxic": 0}\n{"id": "b", "text": "you idiot", "toxic": 1}\n')
    d = datasets.load(str(f), id_col="id")
    assert [(i.key, i.text, i.labels) for i in d.items] == [("a", "hello", {"toxic": 0}), ("b", "you idiot", {"toxic": 1})]
    s = tmp_path / "sass.tsv"
    s.write_text("Text\tCategory\tType\tToxicity Score\tHuman\nYou look too pretty for this job.\tSex. Harass.\t"
                 "Filtered\t23.5%\t0.8\nTheir hair is long.\tNeutral\tUnfiltered\t16.7%\t0.01\n")
    d = datasets.load(str(s))
    assert d.format == "sass" and d.name.startswith("file-")  # SASS's layout, not the released bytes
    assert d.items[0].labels["toxic"] == "1" and d.items[1].labels["toxic"] == "0"
    assert d.items[0].labels["filtered"] == "filtered" and d.items[0].labels["perspective_recorded"] == "0.235"
    r = tmp_path / "raw.csv"
    r.write_text("text,category,rater_1,rater_2\na,X,0,2\nb,X,10,8\nc,Y,5,5\n")
    d = datasets.load(str(r), "sass")
    assert [i.labels["human_score"] for i in d.items] == ["0", "1", "0.5"]
    dv = datasets.load("davidson")
    assert len(dv.items) == 24783 and dv.items[0].labels["class"] == "neither"


def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("comment,x\nhello,1\n")
    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditError, match="missing column"):
        run_audit(str(bad), db=db, fmt="csv", detector_objects={"l": LengthDetector()}, progress=False)
    assert not db.exists()
    with pytest.raises(AuditError, match="not one of the shorthands"):
        run_audit("no-such-thing", db=db, detector_objects={"l": LengthDetector()})
    with pytest.raises(AuditError, match="TEXT=SCORE"):
        parse_detector_spec("cached:x.csv:nonsense")
    with pytest.raises(AuditError, match="unknown detector"):
        parse_detector_spec("gpt-7")
    with pytest.raises(DatasetError, match="not valid JSON"):
        (tmp_path / "b.jsonl").write_text("{oops\n")
        datasets.load(str(tmp_path / "b.jsonl"))
    assert main(["audit", str(bad), "--db", str(db), "--quiet", "--detectors", "gpt-7"]) == 2


def test_audit_with_normalization_scores_normalized_variants(data_dir, tmp_path):
    nh = data_dir / "noisyhate" / "dev.csv"
    res = run_audit(str(nh), db=tmp_path / "n.sqlite", detectors=[PERSPECTIVE.format(path=nh)],
                    detector_objects=None, normalize=True, limit=30, progress=False)
    con = sqlite3.connect(tmp_path / "n.sqlite")
    assert con.execute("SELECT count(*) FROM normalizations").fetchone()[0] >= 30
    from modlens.analysis.report import report_from_db
    rep = report_from_db(tmp_path / "n.sqlite")
    (block,) = rep["sections"]["normalization"]["sources"]
    assert block["source"] == "dataset:noisyhate" and block["release"]
    norm = block["systems"]
    assert any(not k.endswith("(recorded)") for k in norm) and "Google (recorded)" in norm
    assert res.n_missing > 0  # normalized texts Perspective never saw are missing, not guessed


@pytest.mark.slow
def test_audit_through_the_embedded_minilm_detector(data_dir, tmp_path):
    res = run_audit("noisyhate", db=tmp_path / "m.sqlite", detectors=["minilm-toxicity"], limit=20, progress=False)
    con = sqlite3.connect(tmp_path / "m.sqlite")
    tox = [r[0] for r in con.execute("SELECT toxicity FROM scores WHERE error IS NULL")]
    assert res.n_missing == 0 and len(tox) == res.n_scored >= 20 and all(0.0 <= t <= 1.0 for t in tox)


def test_an_interrupted_perturb_audit_resumes_only_with_the_same_variant_settings(data_dir, tmp_path):
    from modlens.config import parse_study

    nh = data_dir / "noisyhate" / "dev.csv"
    db = tmp_path / "log.sqlite"

    def study(budget: int):
        return parse_study({"study_id": "resume", "detectors": [{"name": "profanity-check"}],
                            "perturbation": {"budget": budget, "strategies": ["repeat_char"]}})

    def interrupt(n_done):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_audit(str(nh), db=db, study=study(1), perturb=["repeat_char"], limit=20, chunk_size=10,
                  progress=False, on_chunk=interrupt)
    other = run_audit(str(nh), db=db, study=study(2), perturb=["repeat_char"], limit=20, chunk_size=10, progress=False)
    assert not other.resumed and other.run_id == 2  # two variants per text is not the interrupted one-variant run
    same = run_audit(str(nh), db=db, study=study(1), perturb=["repeat_char"], limit=20, chunk_size=10, progress=False)
    assert same.resumed and same.run_id == 1 and same.n_skipped == 10


def test_the_chunks_run_with_the_heap_frozen_and_leave_it_as_it_was(tmp_path):
    """`run_audit` keeps the objects alive before its chunks out of the collector's way while they run
    (`gc.freeze`, young collections less often) and gives them back after, threshold included, also
    when a chunk fails; a caller that froze objects of its own finds them frozen still, never unfrozen
    by the audit, and its threshold as it was."""
    import gc

    from modlens.audit.run import YOUNG_THRESHOLD

    seen: list[int] = []
    thresholds: list[int] = []
    threshold = gc.get_threshold()

    class Watching(LengthDetector):
        def score(self, texts):
            seen.append(gc.get_freeze_count())
            thresholds.append(gc.get_threshold()[0])
            if "boom" in texts:
                raise KeyboardInterrupt  # stops the audit (Ctrl-C), unlike a failed call, which is an error row
            return super().score(texts)

    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "text": "hello"}\n{"id": "b", "text": "you idiot"}\n')
    assert gc.get_freeze_count() == 0
    run_audit(str(f), db=tmp_path / "a.sqlite", detector_objects={"w": Watching()}, progress=False)
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0
    assert min(thresholds) >= YOUNG_THRESHOLD > threshold[0] and gc.get_threshold() == threshold
    f.write_text('{"id": "c", "text": "boom"}\n')
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(f), db=tmp_path / "b.sqlite", detector_objects={"w": Watching()}, progress=False)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == threshold
    f.write_text('{"id": "d", "text": "hi"}\n')
    gc.freeze()  # an embedding program's own
    try:
        seen[:], thresholds[:] = [], []
        run_audit(str(f), db=tmp_path / "c.sqlite", detector_objects={"w": Watching()}, progress=False)
        # still frozen (the audit's unfreeze would empty it; a frozen object that died leaves it, hence no
        # exact count), and the audit did not raise the threshold over the caller's head either
        assert seen and min(seen) > 0 and gc.get_freeze_count() > 0
        assert thresholds == [threshold[0]] * len(thresholds) and gc.get_threshold() == threshold
    finally:
        gc.unfreeze()
