"""An audit whose study log stops taking writes mid-run (a full disk, a log made read-only) ends
as the README's error table says: one line naming the cause, how many items are in the log (as
many as `run_items` holds) and how to resume, exit 1, no traceback; the same command then resumes
after exactly those items. The conditions are real to SQLite, on the audit's own connection:
`PRAGMA max_page_count` (every write needing a new page fails with SQLITE_FULL, as on a full
filesystem; tests/test_studylog_full.py) and `PRAGMA query_only` (every write fails with
SQLITE_READONLY, the bookkeeping at the run's end included)."""
from __future__ import annotations

import sqlite3

import pytest

import modlens.audit.run as audit_run
from modlens.cli import main
from modlens.studylog.store import StudyLog

from log_helpers import FULL, READ_ONLY, log_that_stops, table_counts

CHUNK = 100


def _tables(db):
    return table_counts(db, ("comments", "texts", "scores", "run_items"))


@pytest.mark.parametrize("pragma,group", [(FULL, []), (READ_ONLY, []), (FULL, ["--group-commit", "30"])],
                         ids=["disk-full", "read-only", "disk-full-in-a-group"])
def test_a_log_that_stops_taking_writes_ends_the_audit_with_what_is_logged(pragma, group, data_dir, tmp_path,
                                                                           monkeypatch, capsys):
    """In a group (`--group-commit`), the chunks after the first share one transaction that the
    full disk ends: the count said is still what the log holds."""
    nh, db = data_dir / "noisyhate" / "dev.csv", tmp_path / "log.sqlite"
    argv = ["audit", str(nh), "--db", str(db), "--detectors", "recorded", "--chunk", str(CHUNK), "--quiet", *group]
    stopping = log_that_stops("set_run_progress", pragma)  # the run's first progress row follows its first chunk
    monkeypatch.setattr(audit_run, "StudyLog", stopping)
    code = main(argv)
    out = capsys.readouterr()
    assert stopping.stopped
    assert code == 1, out.err
    assert "Traceback" not in out.err and out.out == ""  # no summary of a run that did not finish
    done = _tables(db)["run_items"]
    assert done == CHUNK  # the first chunk, committed before the log stopped taking writes
    assert f"{done} items are in the log (run 1)" in out.err
    assert "cannot be written" in out.err and "run the same command again" in out.err
    assert "daemon" not in out.err  # the fix is the audit's, not the daemon's

    monkeypatch.setattr(audit_run, "StudyLog", StudyLog)  # the disk has room again
    assert main(argv) == 0
    resumed = capsys.readouterr().out
    assert '"resumed": true' in resumed and f'"n_skipped": {done}' in resumed
    straight = tmp_path / "straight.sqlite"
    assert main([*argv[:3], str(straight), *argv[4:]]) == 0
    capsys.readouterr()
    assert _tables(db) == _tables(straight)
    con = sqlite3.connect(db)
    assert con.execute("SELECT run_id, status, n_done FROM audit_runs").fetchall() == [(1, "finished", 588)]


def test_a_log_that_takes_no_write_at_the_start_is_one_line_too(data_dir, tmp_path, monkeypatch, capsys):
    """Read-only from the moment it is opened: the run's own rows (detectors, page, run) fail first."""

    monkeypatch.setattr(audit_run, "StudyLog", log_that_stops(None, READ_ONLY))
    db = tmp_path / "log.sqlite"
    code = main(["audit", str(data_dir / "noisyhate" / "dev.csv"), "--db", str(db), "--detectors", "recorded", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "cannot be written" in err and "stopped before its first chunk" in err and "run the same command again" in err
    assert _tables(db)["run_items"] == 0
