"""A submission the crowd platform rejected after `modlens rate` imported it is flagged in its own
column, `rater_reviews.platform_status`, set from the platform's export (a Mechanical Turk batch
results file here, its `AssignmentStatus` going from Submitted to Rejected and then to Approved), not
parsed back out of the review's free-text reason: rewording a reason changes no decision, and the
report leaves the rejected ratings out by the column. A log an older modlens wrote (schema 6, the flag
only in the reason) gets the column filled once, by the schema-7 step."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from modlens.study import assignment
from modlens.study.folder import load
from modlens.studylog.store import StudyLog

from test_cli_rate import _survey_cells, _write_csv, run, study_with_set
from log_helpers import as_schema

HEAD = ["HITId", "HITTypeId", "AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds", "Input.assignment"]
REJECTED = "Mechanical Turk AssignmentStatus Rejected"


def batch_results(tmp_path: Path, plan: assignment.Plan, status: str) -> Path:
    """Mechanical Turk's batch results: A1 Submitted in slot t01-r1, A2 in t01-r2 with `status`."""
    cells = {u: _survey_cells(plan, u) for u in ("t01-r1", "t01-r2")}
    return _write_csv(tmp_path / f"Batch_1_{status}.csv", [
        [*HEAD, *[f"Answer.{k}" for k in cells["t01-r1"]]],
        ["3H1", "3T", "3A1", "A1WORKER", "Submitted", "300", "t01-r1", *cells["t01-r1"].values()],
        ["3H1", "3T", "3A2", "A2WORKER", status, "280", "t01-r2", *cells["t01-r2"].values()]])


def statuses(db: Path) -> dict[str, tuple[str, str | None]]:
    con = sqlite3.connect(db)
    try:
        return {r: (d, s) for r, d, s in con.execute("SELECT rater_id, decision, platform_status FROM rater_reviews")}
    finally:
        con.close()


def excluded_by_platform(db: Path) -> int:
    from modlens.analysis import data as analysis_data
    from modlens.analysis.human import usable_ratings

    return usable_ratings(analysis_data.load(db)).excluded["submission rejected on the crowd platform"]


def test_the_platforms_rejection_is_a_column_set_from_its_export(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    code, out = run(capsys, "rate", batch_results(tmp_path, plan, "Submitted"), "--db", db, "--study", folder)
    assert code == 0 and "2 workers, 12 ratings imported" in out, out
    assert statuses(db) == {"survey:A1WORKER": ("accept", None), "survey:A2WORKER": ("accept", None)}

    code, out = run(capsys, "rate", batch_results(tmp_path, plan, "Rejected"), "--db", db, "--study", folder)
    assert code == 0 and "survey:A2WORKER task t01 (Mechanical Turk AssignmentStatus Rejected)" in out, out
    assert statuses(db) == {"survey:A1WORKER": ("accept", None), "survey:A2WORKER": ("reject", REJECTED)}
    assert excluded_by_platform(db) == 4   # its 4 items; gold apart

    # the reason is words for people: another wording (a later modlens, a translation) changes no decision
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE rater_reviews SET reason = 'Mechanical Turk rejected this assignment' "
                    "WHERE rater_id = 'survey:A2WORKER'")
    con.close()
    assert excluded_by_platform(db) == 4
    code, out = run(capsys, "rate", "--db", db, "--study", folder)   # the review without a file keeps it
    assert code == 0 and statuses(db)["survey:A2WORKER"] == ("reject", REJECTED), out
    assert "reject  survey:A2WORKER  task t01 (survey): rejected on the platform (" + REJECTED in out, out

    # approved after all: judged by Table 11 again, the flag gone
    code, out = run(capsys, "rate", batch_results(tmp_path, plan, "Approved"), "--db", db, "--study", folder)
    assert code == 0 and statuses(db)["survey:A2WORKER"] == ("accept", None), out
    assert excluded_by_platform(db) == 0


def test_a_schema_6_logs_platform_rejection_is_read_out_of_its_reason_once(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    for status in ("Submitted", "Rejected"):
        code, out = run(capsys, "rate", batch_results(tmp_path, plan, status), "--db", db, "--study", folder)
        assert code == 0, out
    con = sqlite3.connect(db)
    reasons = dict(con.execute("SELECT rater_id, reason FROM rater_reviews"))
    con.close()
    assert reasons["survey:A2WORKER"].startswith(f"rejected on the platform ({REJECTED}); Table 11 alone: accept")
    as_schema(db, 6)   # as a modlens of schema 6 left it: no platform_status, no consent or import tables
    StudyLog(db).close()   # opened for writing: upgraded to the current schema
    assert statuses(db) == {"survey:A1WORKER": ("accept", None), "survey:A2WORKER": ("reject", REJECTED)}
    assert excluded_by_platform(db) == 4
    code, out = run(capsys, "rate", "--db", db, "--study", folder)
    assert code == 0 and statuses(db)["survey:A2WORKER"] == ("reject", REJECTED), out
