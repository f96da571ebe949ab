"""`modlens import DIR` into a study log that stops taking writes (a full disk, a log made read-only)
ends as the README's error table says: one line with the cause, what the log holds of the folder
(the import is one transaction: none of the stopped attempt) and how to resume, exit 1, no
traceback; the same command then imports the rest. The conditions are real to SQLite, on the
import's own connection: `PRAGMA max_page_count` (every write needing a new page fails with
SQLITE_FULL, as on a full filesystem; tests/test_studylog_full.py) and `PRAGMA query_only` (every
write fails with SQLITE_READONLY), as tests/test_audit_unwritable.py does for the audit."""
from __future__ import annotations

import json

import pytest
from bench_hostile_files import clean_shards, log_state, one_line

import modlens.chunks.parquet as parquet
from modlens.cli import main
from modlens.studylog.store import StudyLog

from log_helpers import FULL, READ_ONLY, log_that_stops, table_counts


def _tables(db):
    return table_counts(db, ("comments", "texts", "scores", "variants", "gold_labels", "run_items", "audit_runs"))


@pytest.mark.parametrize("pragma", [FULL, READ_ONLY], ids=["disk-full", "read-only"])
def test_a_log_that_stops_taking_writes_ends_the_import_with_what_is_logged(pragma, tmp_path, monkeypatch, capsys):
    """The log already holds 40 of the folder's items (an import of it before it grew): the stopped
    import says so, leaves the log as it was, and the rerun imports the other 60 into the same run."""
    # no new page once the import's first chunk's scores are written (in its transaction); read-only at once
    stopping = log_that_stops("add_scores_many" if pragma != READ_ONLY else None, pragma)
    db = tmp_path / "log.sqlite"
    assert main(["import", str(clean_shards(tmp_path / "first", items=40)), "--db", str(db)]) == 0
    folder = clean_shards(tmp_path / "grown", items=100)
    capsys.readouterr()
    before = log_state(db)[1]
    monkeypatch.setattr(parquet, "StudyLog", stopping)
    code = main(["import", str(folder), "--db", str(db)])
    out = capsys.readouterr()
    assert stopping.stopped
    assert code == 1, out.err
    assert "Traceback" not in out.err and out.out == ""
    assert one_line(out.err, "import", "cannot be written"), out.err
    assert log_state(db)[1] == before  # the attempt undone whole
    assert _tables(db)["run_items"] == 40
    assert "40 of the folder's items are in the log (run 1)" in out.err
    assert "run the same command again" in out.err and "daemon" not in out.err  # the import's fix, not the daemon's

    monkeypatch.setattr(parquet, "StudyLog", StudyLog)  # the disk has room again
    assert main(["import", str(folder), "--db", str(db)]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert (counts["items"], counts["skipped"], counts["run_id"]) == (60, 40, 1)
    straight = tmp_path / "straight.sqlite"
    assert main(["import", str(folder), "--db", str(straight)]) == 0
    assert _tables(db) == _tables(straight)


def test_a_log_that_takes_no_write_holds_none_of_a_new_folder(tmp_path, monkeypatch, capsys):
    db = tmp_path / "log.sqlite"
    StudyLog(db).close()  # an empty log
    monkeypatch.setattr(parquet, "StudyLog", log_that_stops(None, READ_ONLY))
    code = main(["import", str(clean_shards(tmp_path / "shards")), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert "the log holds none of the folder's items" in err and "run the same command again" in err
    assert _tables(db)["run_items"] == 0 and _tables(db)["audit_runs"] == 0
