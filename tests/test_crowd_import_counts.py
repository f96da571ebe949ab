"""What `modlens rate FILE` left out of a crowd export (a Prolific or Qualtrics row with no valid work,
a cancelled Label Studio annotation, a row naming no worker) is kept with the import in the study
log (`crowd_imports`), and the report's item-set section says it per import, the same counts the
import printed. Real exports in the shapes the tools write (tests/test_cli_rate.py builds them)."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from modlens.study import assignment
from modlens.study.folder import load

from crowd_real import answers
from test_cli_rate import _levels, _qualtrics, _statuses, _survey_cells, _write_csv, run, study_with_set


def report(capsys: pytest.CaptureFixture[str], db: Path) -> dict:
    code, out = run(capsys, "report", "--db", db, "--format", "json")
    assert code == 0, out
    return json.loads(out)["sections"]["itemset"]


def printed_skips(out: str) -> dict[str, int]:
    """The import's 'skipped N records that carry no valid work: n why, ...' line, as kind -> count."""
    line = _statuses(out)
    listed = line.split(": ", 1)[1] if line else ""
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"(\d+) ([^,]+)(?:, |$)", listed)}


def _approved_task(tmp_path: Path, plan: assignment.Plan) -> Path:
    """A Prolific export of one approved worker who answered task t01-r1."""
    return _write_csv(tmp_path / "good.csv", [["Participant id", "Status", "assignment", *_survey_cells(plan, "t01-r1")],
                                              ["60aa", "APPROVED", "t01-r1", *_survey_cells(plan, "t01-r1").values()]])


def _disk_full(*args: object, **kwargs: object) -> None:
    """A write meeting a full disk, as SQLite raises it (SQLITE_FULL)."""
    import sqlite3

    err = sqlite3.OperationalError("database or disk is full")
    err.sqlite_errorcode = 13
    raise err


def test_the_records_an_import_skipped_are_stored_and_reported(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"

    # Prolific: approved and awaiting review imported; rejected, returned, timed out and no worker id skipped
    head = ["Submission id", "Participant id", "Status", "assignment", *_survey_cells(plan, "t01-r1")]
    prolific = _write_csv(tmp_path / "prolific_export.csv", [
        head, ["s1", "60aa", "APPROVED", "t01-r1", *_survey_cells(plan, "t01-r1").values()],
        ["s2", "60bb", "REJECTED", "t01-r2", *_survey_cells(plan, "t01-r2").values()],
        ["s3", "60cc", "RETURNED", "", *[""] * len(head[4:])],
        ["s4", "60dd", "TIMED-OUT", "", *[""] * len(head[4:])],
        ["s5", "60ee", "AWAITING REVIEW", "t02-r1", *_survey_cells(plan, "t02-r1").values()]])
    code, out = run(capsys, "rate", prolific, "--db", db, "--study", folder)
    assert code == 0 and "2 workers, 12 ratings imported" in out, out
    first = printed_skips(out)
    assert first == {"Prolific Status REJECTED": 1, "Prolific Status RETURNED": 1, "Prolific Status TIMED-OUT": 1}

    # Label Studio: task t03's units, worker 5 annotated each, worker 7 pressed Skip on each
    from modlens.study.units import unit_map

    assert run(capsys, "study", "export-tasks", folder, "--format", "labelstudio", "--out", tmp_path / "ls")[0] == 0
    units = unit_map(plan)
    export = []
    for n, task in enumerate(t for t in json.loads((tmp_path / "ls" / "tasks.json").read_text())
                             if t["data"]["task"] == "t03"):
        result = [{"from_name": q, "to_name": "text", "type": "choices", "value": {"choices": [c]}}
                  for q, c in answers(plan, units[task["data"]["unit"]][1], _levels(plan)).items()]
        export.append({"id": n, "data": task["data"], "annotations": [
            {"id": 10 * n, "completed_by": 5, "result": result, "was_cancelled": False},
            {"id": 10 * n + 1, "completed_by": 7, "result": [], "was_cancelled": True}]})
    ls_file = tmp_path / "ls-export.json"
    ls_file.write_text(json.dumps(export))
    code, out = run(capsys, "rate", ls_file, "--db", db, "--study", folder)
    assert code == 0 and "1 workers, 6 ratings imported" in out, out
    second = printed_skips(out)
    assert second == {"Label Studio was_cancelled (skipped)": 6}

    # Qualtrics: a preview and a test response, nothing imported, the import kept all the same
    qualtrics = _qualtrics(tmp_path / "qualtrics.csv", plan, [
        {"Status": "Survey Preview", "DistributionChannel": "preview", "PROLIFIC_PID": "p1", "assignment": "t01-r1"},
        {"Status": "Survey Test", "DistributionChannel": "test", "PROLIFIC_PID": "p2", "assignment": "t01-r2"}])
    code, out = run(capsys, "rate", qualtrics, "--db", db, "--study", folder)
    assert code == 0 and "0 workers, 0 ratings imported" in out, out
    third = printed_skips(out)
    assert sum(third.values()) == 2, out

    section = report(capsys, db)
    got = section["imports"]
    assert [(i["source"], i["format"], i["records"]) for i in got] == [
        ("prolific_export.csv", "survey", "rows"), ("ls-export.json", "labelstudio", "annotations"),
        ("qualtrics.csv", "survey", "rows")]
    assert [i["skipped"] for i in got] == [first, second, third]
    assert [i["n_skipped"] for i in got] == [3, 6, 2]
    assert [(i["workers"], i["ratings_new"], i["ratings_known"]) for i in got] == [(2, 12, 0), (1, 6, 0), (0, 0, 0)]
    assert got[0]["source_sha256"] == hashlib.sha256(prolific.read_bytes()).hexdigest()

    # the same file again: another import, as it ran (nothing new, the same rows skipped)
    code, out = run(capsys, "rate", prolific, "--db", db, "--study", folder)
    assert code == 0, out
    again = report(capsys, db)["imports"][-1]
    assert (again["ratings_new"], again["ratings_known"], again["skipped"]) == (0, 12, first)

    code, out = run(capsys, "report", "--db", db, "--format", "html", "--out", tmp_path / "report.html")
    assert code == 0, out
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "6 annotations: 6 Label Studio was_cancelled (skipped)" in page


def test_a_refused_file_stores_no_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One refused answer imports nothing: no ratings, and no import row claiming counts."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    cells = _survey_cells(plan, "t01-r1")
    cells["item1_vs_hard"] = "much more"   # not an anchor answer
    bad = _write_csv(tmp_path / "bad.csv", [["Participant id", "Status", "assignment", *cells],
                                            ["60aa", "APPROVED", "t01-r1", *cells.values()],
                                            ["60bb", "RETURNED", "", *[""] * len(cells)]])
    code, out = run(capsys, "rate", bad, "--db", db, "--study", folder)
    assert code != 0 and "nothing imported" in out, out
    import sqlite3

    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM crowd_imports").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM ratings").fetchone()[0] == 0
    finally:
        con.close()


def test_an_import_that_fails_once_the_log_is_open_stores_no_import(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused after the log was opened (a log without the item set's comments), or failing inside the
    import's transaction after its ratings were written (the import's row could not be stored): the
    import says nothing was stored, and the log is as it was, every table row for row (not the study's
    row nor its gold comments, which the import registers for a study no `modlens serve` logged)."""
    import sqlite3

    from modlens.study.rate_import import import_ratings
    from modlens.studylog.store import StudyLog

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    good = _approved_task(tmp_path, plan)

    def stored(db: Path) -> tuple[int, int]:
        con = sqlite3.connect(db)
        try:
            return (con.execute("SELECT count(*) FROM crowd_imports").fetchone()[0],
                    con.execute("SELECT count(*) FROM ratings").fetchone()[0])
        finally:
            con.close()

    def whole(db: Path) -> tuple[bytes, dict[str, int], list[str]]:
        """The log's file, each table's row count, and every row of every table (with the schema)."""
        con = sqlite3.connect(db)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return (db.read_bytes(), {t: con.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in tables},
                    list(con.iterdump()))
        finally:
            con.close()

    other = tmp_path / "other.sqlite"
    StudyLog(other).close()
    before = whole(other)
    code, out = run(capsys, "rate", good, "--db", other, "--study", folder)
    assert code != 0 and "is not in this log, nothing imported" in out, out
    assert stored(other) == (0, 0)
    after = whole(other)
    assert after[1] == before[1] and after[2] == before[2] and after[0] == before[0]

    def no_room(*args: object, **kwargs: object) -> int:
        raise sqlite3.OperationalError("database or disk is full")

    db = tmp_path / "log.sqlite"
    before = whole(db)
    assert before[1]["studies"] == 0   # sampled, never served: the import would register the study and its gold
    monkeypatch.setattr(StudyLog, "add_crowd_import", no_room)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        import_ratings(good, folder, db)
    assert stored(db) == (0, 0)
    after = whole(db)
    assert after[1] == before[1] and after[2] == before[2] and after[0] == before[0]
    monkeypatch.undo()
    # the same file, the row stored: its ratings were there to lose
    assert import_ratings(good, folder, db).ratings_new == 6 and stored(db) == (1, 6)


def test_an_answer_changed_since_the_last_import_is_counted_apart_from_those_in_the_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An annotation edited in the tool since the last import: kept as stored (`--on-change keep`) its new
    answer is not in the log, so it is not 'already in the log'; the import's row keeps the changed count
    `modlens rate` prints and what was done with them. A worker whose answers were all blank was read too."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    first = _survey_cells(plan, "t01-r1")
    levels = next(a.levels for a in plan.study.attributes if a.name == "formality")
    edited = {**first, "item1_formality": next(lv for lv in levels if lv != first["item1_formality"])}
    head = ["worker_id", "assignment", *first]
    before = _write_csv(tmp_path / "survey.csv", [head, ["W1", "t01-r1", *first.values()]])
    after = _write_csv(tmp_path / "survey-edited.csv", [
        head, ["W1", "t01-r1", *edited.values()],
        ["W9", "t02-r1", *_survey_cells(plan, "t02-r1", blank=(1, 2, 3, 4, 5, 6)).values()]])
    assert run(capsys, "rate", before, "--db", db, "--study", folder)[0] == 0

    code, out = run(capsys, "rate", after, "--db", db, "--study", folder)
    assert code == 0 and "2 workers, 0 ratings imported, 5 already in the log, 6 empty answers" in out, out
    assert "1 annotations changed since the last import, kept the stored answers" in out, out
    code, out = run(capsys, "rate", after, "--db", db, "--study", folder, "--on-change", "replace")
    assert code == 0 and "1 ratings imported, 5 already in the log" in out, out
    code, out = run(capsys, "rate", after, "--db", db, "--study", folder, "--on-change", "replace")
    assert code == 0 and "0 ratings imported, 6 already in the log" in out and "changed since" not in out, out

    got = report(capsys, db)["imports"]
    assert [(i["workers"], i["ratings_new"], i["ratings_known"], i["changed"], i["on_change"], i["empty"])
            for i in got] == [(1, 6, 0, 0, "keep", 0), (2, 0, 5, 1, "keep", 6), (2, 1, 5, 1, "replace", 6),
                              (2, 0, 6, 0, "replace", 6)]
    code, out = run(capsys, "report", "--db", db, "--format", "html", "--out", tmp_path / "report.html")
    assert code == 0, out
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "changed since the last import" in page and "1: stored answers kept" in page and "1: new answers stored" in page


def test_a_review_that_fails_after_the_import_says_the_ratings_were_imported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The review runs after the import committed: a full disk met by the review's write leaves the
    ratings stored, so the command prints what it imported before the review and its error says the
    ratings are in the log and the review is not; the same command again adds no rating and reviews."""
    import sqlite3

    from modlens.studylog.store import StudyLog

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    good = _approved_task(tmp_path, plan)

    def stored(table: str) -> int:
        con = sqlite3.connect(db)
        try:
            return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        finally:
            con.close()

    monkeypatch.setattr(StudyLog, "put_rater_reviews", _disk_full)
    code, out = run(capsys, "rate", good, "--db", db, "--study", folder)
    assert code == 1 and "Traceback" not in out, out
    assert "1 workers, 6 ratings imported, 0 already in the log" in out, out
    assert "database or disk is full" in out and "ratings are in the log (6 imported, 0 already there), the review of its raters is not" in out, out
    assert "run the same command again: it adds no rating twice and reviews them (the log keeps that run as " \
           "another import of the file, with no rating imported)" in out, out
    assert "reviewed" not in out, out
    assert (stored("ratings"), stored("crowd_imports"), stored("rater_reviews")) == (6, 1, 0)
    monkeypatch.undo()
    code, out = run(capsys, "rate", good, "--db", db, "--study", folder)
    assert code == 0 and "1 workers, 0 ratings imported, 6 already in the log" in out, out
    assert "reviewed 1 rater tasks" in out, out
    assert (stored("ratings"), stored("rater_reviews")) == (6, 1)
    # the rerun is a row of its own, and the report says what it is: the same export again, nothing new
    first, rerun = report(capsys, db)["imports"]
    assert (first["ratings_new"], first["again_of"]) == (6, None)
    assert (rerun["ratings_new"], rerun["ratings_known"], rerun["again_of"]) == (0, 6, first["import_id"])
    code, out = run(capsys, "report", "--db", db, "--format", "html", "--out", tmp_path / "report.html")
    assert code == 0, out
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert f"the same export again (import {first['import_id']}): no rating stored" in page


def test_an_import_that_meets_a_full_disk_says_so_in_one_line_and_stores_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk met inside the import's own transaction: a one-line error saying nothing of the
    import is stored and to run the same command again, not a traceback. Not that the log is as it
    was: opening a log an older modlens wrote migrates it first, and that stays."""
    import sqlite3

    from modlens.studylog.store import StudyLog

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    good = _approved_task(tmp_path, plan)

    def rows() -> list[str]:
        con = sqlite3.connect(db)
        try:
            return list(con.iterdump())
        finally:
            con.close()

    before = rows()
    monkeypatch.setattr(StudyLog, "add_crowd_import", _disk_full)
    code, out = run(capsys, "rate", good, "--db", db, "--study", folder)
    assert code == 1 and "Traceback" not in out, out
    assert "database or disk is full" in out and "nothing of this import is stored" in out, out
    assert "run the same command again: it imports the file" in out, out
    assert "ratings imported" not in out, out
    assert rows() == before

    # a log an older modlens wrote: opening it migrates it (committed on its own), so the import that
    # then meets the full disk stored nothing of itself, but the log is not as it was
    from modlens.studylog import migrate, schema

    monkeypatch.setattr(migrate, "MIGRATIONS", [*schema.MIGRATIONS, "CREATE TABLE later_step (x INTEGER);"])
    monkeypatch.setattr(migrate, "SCHEMA_VERSION", schema.SCHEMA_VERSION + 1)
    code, out = run(capsys, "rate", good, "--db", db, "--study", folder)
    assert code == 1 and "nothing of this import is stored" in out, out
    assert "the log is as it was" not in out, out
    migrated = rows()
    assert migrated != before and any("later_step" in r for r in migrated)
    assert not any("INSERT INTO \"ratings\"" in r or "INSERT INTO \"crowd_imports\"" in r for r in migrated)
