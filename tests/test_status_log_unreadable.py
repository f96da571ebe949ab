"""`modlens status` without a daemon: "no study log yet" only where there is no file. A file that is
there but cannot be read as this modlens's log (an older or newer schema, not a study log) is named
with the reason, never reported as missing."""
from __future__ import annotations

import json
import sqlite3

from modlens.cli import main
from modlens.studylog.schema import SCHEMA_VERSION
from modlens.studylog.store import StudyLog


def _status(db, capsys, *flags):
    code = main(["status", "--db", str(db), *flags])
    return code, capsys.readouterr()


def test_no_file_is_no_study_log_yet(tmp_path, capsys):
    code, out = _status(tmp_path / "none.sqlite", capsys)
    assert code == 1 and "(no study log yet)" in out.out
    assert not (tmp_path / "none.sqlite").exists()  # status never creates one


def test_a_log_of_an_older_schema_is_named_not_missing(tmp_path, capsys):
    db = tmp_path / "old.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("s", "t", {})
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")  # as an older modlens left it
    con.close()
    code, out = _status(db, capsys)
    assert code == 1
    assert "no study log yet" not in out.out
    assert f"schema version {SCHEMA_VERSION - 1}" in out.out and "migrate" in out.out
    code, out = _status(db, capsys, "--json")
    report = json.loads(out.out)
    assert report["counts"] is None and f"schema version {SCHEMA_VERSION - 1}" in report["log_error"]


def test_a_file_that_is_no_study_log_is_named_not_missing(tmp_path, capsys):
    db = tmp_path / "notes.sqlite"
    db.write_text("these are my notes, not a database\n")
    code, out = _status(db, capsys)
    assert code == 1 and "no study log yet" not in out.out and "not a modlens study log" in out.out
    assert db.read_text() == "these are my notes, not a database\n"  # read-only: untouched


def test_a_readable_log_has_its_counts_and_no_error(tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("s", "t", {})
    code, out = _status(db, capsys, "--json")
    report = json.loads(out.out)
    assert code == 1 and report["counts"]["studies"] == 1 and report["log_error"] is None
