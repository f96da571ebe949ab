"""The attacks section counts what happened: one attack per seed, recipe and target version (a
rerun that redid an attack logged under another configuration leaves two rows)."""
from __future__ import annotations

import json
import sqlite3

from modlens.analysis.report import render_html, report_from_db
from modlens.cli import main

from log_helpers import sql

AUDIT = ["--quiet", "--limit", "4", "--detectors", "profanity-check", "--attack", "tae", "--targets",
         "profanity-check", "--no-ensemble", "--max-queries", "30"]


def test_an_attack_redone_by_a_rerun_on_an_older_log_counts_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    db = tmp_path / "log.sqlite"
    assert main(["audit", "noisyhate", "--db", str(db), *AUDIT]) == 0
    first = report_from_db(db)["sections"]["attacks"]["rows"][0]
    # as a log written with another lookup table: the rerun's configuration differs, so it attacks
    # every seed again (an older row the rerun can show to be this attack is reused instead:
    # tests/test_attack_reuse_older_rows.py)
    other = json.dumps({"char:human_lookup": {"lexicon": "perturbations.json", "lexicon_sha": "0123456789ab"}})
    with sqlite3.connect(db) as con:
        con.execute("UPDATE variants SET params_json = json_set(params_json, '$.transformation_data', json(?)) "
                    "WHERE attack_json IS NOT NULL", (other,))
    n_before = len(sql(db, "SELECT 1 FROM variants WHERE attack_json IS NOT NULL"))
    assert main(["audit", "noisyhate", "--db", str(db), *AUDIT]) == 0
    rows = sql(db, "SELECT variant_id, attack_json FROM variants WHERE attack_json IS NOT NULL ORDER BY variant_id")
    assert len(rows) == 2 * n_before  # the rerun redid every attack beside the old rows
    report = report_from_db(db)
    (row,) = report["sections"]["attacks"]["rows"]
    newest = [json.loads(r["attack_json"]) for r in rows[n_before:]]
    assert row["attempts"] == first["attempts"] == sum(a["status"] != "skipped" for a in newest)
    assert row["successes"] == first["successes"] and row["skipped"] == first["skipped"]
    assert row["success_recorded"] == first["success_recorded"]
    assert row["set_aside"] == n_before and first["set_aside"] == 0
    assert row["kept"] == first["kept"]  # the old rows' texts do not make the new ones duplicates
    assert f"{n_before} other rows of attacks redone by a rerun set aside" in render_html(report)
    # the transfer matrix counts each success once too
    (matrix,) = report["sections"]["attacks"]["matrices"]
    assert matrix["n"]["profanity-check"]["profanity-check"] <= row["successes"]


def test_an_attack_run_again_with_another_random_seed_is_another_attack(tmp_path, monkeypatch):
    """`--seed` is part of an attack's identity (the audit resumes by it): two runs with two seeds
    are two attacks of each seed comment, both counted, none set aside."""
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    db = tmp_path / "log.sqlite"
    assert main(["audit", "noisyhate", "--db", str(db), *AUDIT, "--seed", "1"]) == 0
    first = report_from_db(db)["sections"]["attacks"]["rows"][0]
    assert main(["audit", "noisyhate", "--db", str(db), *AUDIT, "--seed", "2"]) == 0
    assert {r["seed"] for r in sql(db, "SELECT DISTINCT seed FROM variants WHERE attack_json IS NOT NULL")} == {1, 2}
    (row,) = report_from_db(db)["sections"]["attacks"]["rows"]
    assert row["set_aside"] == 0
    assert row["attempts"] + row["skipped"] == 2 * (first["attempts"] + first["skipped"])


def _hand_attack(lg, key: str, seed: str, text: str, *, goal_labels: list[str] | None = None,
                 status: str = "success") -> int:
    """An attack result as a recipe logs it: against tgt@1 (threshold 0.5), a success unless told."""
    from modlens.perturb.base import Variant

    cid = lg.add_comment("dataset:x", key, None, seed)
    attack = {"goal": "tae", "status": status, "search": "hand", "queries": 1, "max_queries": 1, "target": "tgt",
              "target_name": "tgt", "target_version": "1", "threshold": 0.5, "n_words": 4, "words_edited": 1}
    params: dict = {"recipe": "hand", "edits": []}
    if goal_labels:
        attack["goal_labels"] = goal_labels
        params.update(labels=goal_labels, thresholds={lb: 0.5 for lb in goal_labels})
    return lg.add_variant(cid, Variant(text=text, strategy="recipe:hand", params=params, seed=0, source_text=seed,
                                       target_detector="tgt", attack=attack))


def test_success_after_filters_counts_only_successes_every_filter_checked_and_passed(tmp_path):
    """A success whose meaning and fluency were never measured failed no filter, but did not pass
    them either: 'success after filters' must not count it."""
    from modlens.audit.attack_checks import check_attacks
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        tgt, other = lg.ensure_detector("tgt", "1", "toxic", 0.5, {}), lg.ensure_detector("b", "1", "toxic", 0.5, {})
        pairs = [("you are a stupid idiot", "you are a stup1d idiot"), ("what a dumb loser you are", "what a dumb l0ser you are")]
        for i, (seed, text) in enumerate(pairs):
            if i == 1:
                check_attacks(lg)  # the first success's meaning and fluency measured (MiniLM, the normalizer)
            _hand_attack(lg, f"k{i}", seed, text)
            for t, s_tgt, s_b in ((seed, 0.9, 0.9), (text, 0.1, 0.9)):  # b still calls the text toxic
                lg.add_score(t, tgt, {"toxic": s_tgt}, s_tgt, 1.0, None)
                lg.add_score(t, other, {"toxic": s_b}, s_b, 1.0, None)
    report = report_from_db(db)
    (row,) = report["sections"]["attacks"]["rows"]
    assert row["successes"] == 2 and row["not_checked"] == {"fluency": 1, "meaning": 1}
    assert row["filtered_out"] == {}  # the first passed all four; the second failed none
    assert row["kept"] == 1 and row["success_after_filters"] == 0.5 and row["kept_not_checked"] == 1
    assert "0.500 (1 more failed no filter, not every filter checked)" in render_html(report)


def test_the_attacked_targets_own_transfer_column_is_the_version_attacked(tmp_path):
    """tgt@1 was attacked (fooled by the text); a newer tgt@2 scored the same texts later and is not
    fooled. The row's own column says how often the attacked model is fooled: tgt@1's scores."""
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        v1, v2 = lg.ensure_detector("tgt", "1", "toxic", 0.5, {}), lg.ensure_detector("tgt", "2", "toxic", 0.5, {})
        _hand_attack(lg, "k", "you are a stupid idiot", "you are a stup1d idiot")
        for det, seed_score, text_score in ((v1, 0.9, 0.1), (v2, 0.9, 0.8)):
            lg.add_score("you are a stupid idiot", det, {"toxic": seed_score}, seed_score, 1.0, None)
            lg.add_score("you are a stup1d idiot", det, {"toxic": text_score}, text_score, 1.0, None)
    section = report_from_db(db)["sections"]["attacks"]
    (row,) = section["rows"]
    assert row["success_verified"] == 1.0  # tgt@1's score of the text: fooled
    (matrix,) = section["matrices"]
    assert matrix["rate"]["tgt"]["tgt"] == 1.0 and matrix["n"]["tgt"]["tgt"] == 1
    assert section["transfer"]["tgt (TAE)"]["tgt"]["rate"] == 1.0


def test_attacks_on_two_versions_of_a_target_are_two_rows(tmp_path):
    """The same seed attacked at tgt@1 and, after a model update, at tgt@2: two attacks, one per
    row, each verified against the version it attacked (a pooled row named one version for both)."""
    from modlens.perturb.base import Variant
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    seed, text = "you are a stupid idiot", "you are a stup1d idiot"
    with StudyLog(db) as lg:
        dets = {"1": lg.ensure_detector("tgt", "1", "toxic", 0.5, {}), "2": lg.ensure_detector("tgt", "2", "toxic", 0.5, {})}
        cid = lg.add_comment("dataset:x", "k", None, seed)
        for ver, text_score in (("1", 0.1), ("2", 0.8)):  # fooled at 1, not at 2 (recorded so)
            status = "success" if text_score < 0.5 else "failed"
            lg.add_variant(cid, Variant(
                text=text, strategy="recipe:hand", params={"recipe": "hand", "edits": [], "target_version": ver}, seed=0,
                source_text=seed, target_detector="tgt",
                attack={"goal": "tae", "status": status, "search": "hand", "queries": 1, "max_queries": 1, "target": "tgt",
                        "target_name": "tgt", "target_version": ver, "threshold": 0.5, "n_words": 4, "words_edited": 1}))
            lg.add_score(seed, dets[ver], {"toxic": 0.9}, 0.9, 1.0, None)
            lg.add_score(text, dets[ver], {"toxic": text_score}, text_score, 1.0, None)
    rows = {r["target_version"]: r for r in report_from_db(db)["sections"]["attacks"]["rows"]}
    assert set(rows) == {"1", "2"} and all(r["attempts"] == 1 and r["set_aside"] == 0 for r in rows.values())
    assert rows["1"]["success_recorded"] == rows["1"]["success_verified"] == 1.0
    assert rows["2"]["success_recorded"] == rows["2"]["success_verified"] == 0.0
    assert rows["2"]["config"].endswith("version 2")


def test_a_multi_label_goal_is_verified_on_its_labels_not_the_toxicity_score(tmp_path):
    """A TAE with a multi-label goal (toxic and insult) must bring every label below its threshold.
    The attack brought 'toxic' down but not 'insult' and recorded a failure; the toxicity score
    alone would 'verify' it as a success."""
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    seed, texts = "you are a stupid idiot", ["you are a stup1d idiot", "you are a stup1d id1ot"]
    with StudyLog(db) as lg:
        tgt = lg.ensure_detector("tgt", "1", "toxic", 0.5, {})
        lg.add_score(seed, tgt, {"toxic": 0.9, "insult": 0.9}, 0.9, 1.0, None)
        for i, (text, insult) in enumerate(zip(texts, (0.8, 0.2))):  # insult still 0.8: failed; 0.2: success
            _hand_attack(lg, f"k{i}", seed, text, goal_labels=["toxic", "insult"],
                         status="failed" if insult >= 0.5 else "success")
            lg.add_score(text, tgt, {"toxic": 0.1, "insult": insult}, 0.1, 1.0, None)
    section = report_from_db(db)["sections"]["attacks"]
    (row,) = section["rows"]
    assert row["success_recorded"] == 0.5
    assert row["success_verified"] == 0.5 and row["n_verified"] == 2
    # what still reads the toxicity score says so
    (matrix,) = section["matrices"]
    assert any("multi-label goal (toxic, insult)" in n for n in matrix["notes"])
    assert any("multi-label goal" in n for n in section["recovery_notes"])
