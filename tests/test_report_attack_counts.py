"""The attacks section counts what happened: one attack per seed, recipe and target version (a
rerun that redid an attack logged before its configuration gained a field leaves two rows)."""
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
    # as a log written before the character attack recorded its lookup table's hash
    with sqlite3.connect(db) as con:
        con.execute("UPDATE variants SET params_json = json_remove(params_json, '$.transformation_data') "
                    "WHERE attack_json IS NOT NULL")
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
    assert f"{n_before} older rows of attacks redone by a rerun set aside" in render_html(report)
    # the transfer matrix counts each success once too
    (matrix,) = report["sections"]["attacks"]["matrices"]
    assert matrix["n"]["profanity-check"]["profanity-check"] <= row["successes"]
