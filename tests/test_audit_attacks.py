"""`modlens audit --attack`: real attacks logged with every outcome, transfer scores from every
detector, the report's numbers recounted from the rows with SQL, reruns and resumption."""
import json

import pytest

from modlens.analysis.report import report_from_db
from modlens.audit import AttackSpec, AuditError, plan_attacks, run_audit
from modlens.cli import main
from modlens.detectors import registry
from modlens.detectors.base import Detector
from log_helpers import sql

DETECTORS = ["minilm-toxicity", "profanity-check"]
N_ROWS = 10


class LengthJudge(Detector):
    """A deterministic judge: 40 characters or more is toxic."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 80)} for t in texts]


def table_counts(db):
    return {t: sql(db, f"SELECT count(*) AS n FROM {t}")[0]["n"] for t in ("texts", "scores", "variants", "labels", "comments")}


ATTACKS = """SELECT v.variant_id, v.comment_id, v.target_detector, v.text_id, v.source_text_id, v.params_json, v.run_id,
                    json_extract(v.attack_json, '$.status') AS status, json_extract(v.attack_json, '$.queries') AS queries
             FROM variants v WHERE v.attack_json IS NOT NULL"""


def score_of(db, text_id, name):
    rows = sql(db, "SELECT s.toxicity, d.threshold FROM scores s JOIN detectors d USING (detector_id) "
                   "WHERE s.text_id = ? AND d.name = ? AND s.error IS NULL", (text_id, name))
    return (rows[0]["toxicity"], rows[0]["threshold"]) if rows else (None, None)


@pytest.fixture(scope="module")
def attacked(data_dir, tmp_path_factory):
    """One real audit (NoisyHate, both local detectors, no judges so transfer is informative),
    then the same command again."""
    tmp = tmp_path_factory.mktemp("attack")
    db = tmp / "log.sqlite"
    args = ["audit", str(data_dir / "noisyhate" / "dev.csv"), "--db", str(db), "--quiet", "--limit", str(N_ROWS),
            "--detectors", *DETECTORS, "--attack", "tae", "--no-ensemble", "--query-budget", "80"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MODLENS_HOME", str(tmp / "home"))
        assert main(args) == 0
        assert sql(db, "SELECT 1 FROM detectors WHERE name = 'minilm-toxicity'"), "minilm-toxicity did not load"
        first = table_counts(db)
        report = json.loads(json.dumps(report_from_db(db), default=str))["sections"]["attacks"]
        assert main(args) == 0
    return db, first, report


def test_every_seed_attacked_once_per_target_with_its_record(attacked):
    db, _, _ = attacked
    rows = sql(db, ATTACKS)
    # every NoisyHate comment is gold-toxic, so every one is a TAE seed for both targets
    assert len(rows) == N_ROWS * len(DETECTORS)
    assert {(r["target_detector"]) for r in rows} == set(DETECTORS)
    assert len({(r["comment_id"], r["target_detector"]) for r in rows}) == len(rows)
    for r in rows:
        params = json.loads(r["params_json"])
        assert r["status"] in ("success", "failed", "skipped") and r["run_id"] is not None
        assert params["target"] == r["target_detector"] and params["goal"] == "tae" and params["max_queries"] == 80
        assert params["judges"] == [] and params["target_version"]
        assert 1 <= r["queries"] <= 80
        if r["status"] == "skipped":  # the seed itself, already below the target's threshold
            assert r["text_id"] == r["source_text_id"]
            tox, thr = score_of(db, r["source_text_id"], r["target_detector"])
            assert tox < thr
        else:  # transfer: every attacked text has a score from every detector
            for name in DETECTORS:
                assert score_of(db, r["text_id"], name)[0] is not None
    statuses = {r["status"] for r in rows}
    assert "success" in statuses


def test_report_success_rates_and_queries_match_the_rows(attacked):
    db, _, section = attacked
    by_target = {r["target"]: r for r in section["rows"]}
    assert set(by_target) == set(DETECTORS)
    for target, row in by_target.items():
        rows = sql(db, ATTACKS + " AND v.target_detector = ?", (target,))
        tried = [r for r in rows if r["status"] != "skipped"]
        wins = [r for r in tried if r["status"] == "success"]
        assert row["attempts"] == len(tried) and row["skipped"] == len(rows) - len(tried)
        assert 0 <= row["success_recorded"] <= 1
        assert row["success_recorded"] == pytest.approx(len(wins) / len(tried))
        # verified independently: the target's logged score of each attempted text
        fooled = [score_of(db, r["text_id"], target) for r in tried]
        assert row["success_verified"] == pytest.approx(sum(t < thr for t, thr in fooled) / len(fooled))
        assert row["queries_per_success"] == pytest.approx(sum(r["queries"] for r in wins) / len(wins))


def test_transfer_matrix_has_both_directions_and_recounts(attacked):
    db, _, section = attacked
    (m,) = section["matrices"]
    assert m["goal"] == "tae" and set(m["sources"]) == set(DETECTORS)
    for source in DETECTORS:
        assert m["rate"][source][source] == 1.0  # successes fool their own target
        other = next(d for d in DETECTORS if d != source)
        # recount: successes against `source` whose seed `other` called toxic; share it calls benign
        n = hits = 0
        for r in sql(db, ATTACKS + " AND v.target_detector = ? AND status = 'success'", (source,)):
            seed, thr = score_of(db, r["source_text_id"], other)
            if seed is not None and seed < thr:
                continue
            n += 1
            hits += score_of(db, r["text_id"], other)[0] < thr
        assert n > 0 and m["n"][source][other] == n
        assert m["rate"][source][other] == pytest.approx(hits / n)
        assert section["transfer"][f"{source} (TAE)"][other]["rate"] == m["rate"][source][other]


def test_rerun_adds_no_rows_and_redoes_no_attack(attacked):
    db, first, _ = attacked
    assert table_counts(db) == first
    runs = sql(db, "SELECT status, n_items FROM audit_runs ORDER BY run_id")
    assert [r["status"] for r in runs] == ["finished", "finished"] and runs[1]["n_items"] == N_ROWS


def test_judges_interrupt_and_resume(data_dir, tmp_path):
    """The AND ensemble with a deterministic judge; an audit interrupted after its first chunk
    resumes into the same rows as a straight run."""
    def detectors():
        return {"profanity-check": registry.create("profanity-check"), "length": LengthJudge()}

    spec = AttackSpec("tae", targets=["profanity-check"], max_queries=60)
    nh = str(data_dir / "noisyhate" / "dev.csv")
    straight = tmp_path / "straight.sqlite"
    run_audit(nh, db=straight, limit=6, chunk_size=3, progress=False, detector_objects=detectors(), attack=spec)

    def stop(n_done):
        raise KeyboardInterrupt

    resumed = tmp_path / "resumed.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run_audit(nh, db=resumed, limit=6, chunk_size=3, progress=False, detector_objects=detectors(), attack=spec,
                  on_chunk=stop)
    assert sql(resumed, "SELECT status FROM audit_runs")[0]["status"] == "interrupted"
    assert len(sql(resumed, ATTACKS)) == 3
    result = run_audit(nh, db=resumed, limit=6, chunk_size=3, progress=False, detector_objects=detectors(), attack=spec)
    assert result.resumed and result.attacks["profanity-check"]["reused"] == 0
    assert sum(result.attacks["profanity-check"].values()) == 3

    query = ATTACKS + " ORDER BY comment_id"
    a, b = sql(straight, query), sql(resumed, query)
    assert [(r["status"], r["queries"], r["params_json"]) for r in a] == [(r["status"], r["queries"], r["params_json"]) for r in b]
    assert table_counts(straight) == table_counts(resumed)
    for r in a:
        params = json.loads(r["params_json"])
        assert params["judges"] == ["length"] and params["judge_versions"] == {"length": "test-1"}
        if r["status"] == "success":  # the judge still calls every success toxic
            assert score_of(straight, r["text_id"], "length")[0] >= 0.5
    notes = report_from_db(straight)["sections"]["attacks"]["matrices"][0]["notes"]
    assert any("length judged the attacks on profanity-check" in n for n in notes)


def test_seeds_from_the_target_verdict_without_gold_labels(tmp_path):
    """No `toxic` column: a BAE attacks exactly the texts the target calls benign."""
    f = tmp_path / "c.csv"
    texts = ["have a lovely day", "you are a stupid idiot", "thanks for sharing this", "shut up you moron"]
    f.write_text("text\n" + "".join(f"{t}\n" for t in texts))
    prof = registry.create("profanity-check")
    benign = {t for t in texts if prof.toxicity(prof.score([t])[0]) < prof.threshold}
    db = tmp_path / "log.sqlite"
    result = run_audit(str(f), db=db, progress=False, detector_objects={"profanity-check": prof},
                       attack=AttackSpec("bae", max_queries=30))
    attacked = {r["text"] for r in sql(db, "SELECT t.text FROM variants v JOIN texts t ON t.text_id = v.source_text_id "
                                           "WHERE v.attack_json IS NOT NULL")}
    assert attacked == benign and 0 < len(benign) < len(texts)
    assert sum(result.attacks["profanity-check"][k] for k in ("success", "failed", "skipped")) == len(benign)


def test_bad_attack_options_fail_before_writing(tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    f = tmp_path / "c.csv"
    f.write_text("text,toxic\nyou idiot,1\n")
    base = ["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check"]
    assert main([*base, "--attack", "tae", "--attack-targets", "nope"]) == 2
    assert "nope not loaded" in capsys.readouterr().err
    assert main([*base, "--attack", "tae", "--query-budget", "0"]) == 2
    assert "max_queries" in capsys.readouterr().err
    assert main([*base, "--ensemble", "profanity-check"]) == 2
    assert "need --attack" in capsys.readouterr().err
    assert not db.exists()


def test_plan_defaults_exclude_tables_that_cannot_score_new_text(data_dir):
    cached = registry.create("cached", path=str(data_dir / "noisyhate" / "dev.csv"),
                             mappings=[["clean", "perspective_clean"]], name="perspective")
    dets = {"perspective": cached, "profanity-check": registry.create("profanity-check"), "length": LengthJudge()}
    assert plan_attacks(AttackSpec("tae"), dets) == {"profanity-check": ["length"], "length": ["profanity-check"]}
    assert plan_attacks(AttackSpec("tae", targets=["length"], ensemble=[]), dets) == {"length": []}
    with pytest.raises(AuditError, match="no loaded local detector"):
        plan_attacks(AttackSpec("tae"), {"perspective": cached})
