"""`modlens import DIR` says what it did with the folder's scores, counted from the write itself: the
score rows it read from the shards, the rows it added to the log, the log's errors a good score
replaced, and the rows the log already held (its own good score, or an error scored again as an
error). A log that already holds some of the folder's texts (another audit, another import) is
where "read" and "added" differ."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from modlens.audit import run_audit
from modlens.cli import main
from modlens.studylog.store import StudyLog


def _csv(path: Path, texts: list[str]) -> Path:
    path.write_text("text\n" + "".join(f"{t}\n" for t in texts), encoding="utf-8")
    return path


def _scores(db: Path) -> dict[str, str | None]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT t.text, s.error FROM scores s JOIN texts t USING (text_id)").fetchall())
    finally:
        con.close()


def test_import_counts_scores_read_added_replacing_an_error_and_already_in_the_log(tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    opts = {"detectors": ["profanity-check"], "progress": False, "chunk_size": 2}
    # the log already holds a good score of "have a nice day" (another audit of the same detector version)
    run_audit(str(_csv(tmp_path / "first.csv", ["have a nice day"])), db=db, **opts)
    # ... and an error for "what a stupid idea" (a detector call that failed there)
    log = StudyLog(db)
    try:
        (det,) = [d for (d,) in log.conn.execute("SELECT detector_id FROM detectors")]
        log.add_score("what a stupid idea", det, None, None, 1.0, "timeout")
    finally:
        log.close()
    folder = tmp_path / "shards"
    run_audit(str(_csv(tmp_path / "second.csv", ["have a nice day", "what a stupid idea", "see you at noon"])),
              db=tmp_path / "unused.sqlite", out_parquet=folder, **opts)
    before = _scores(db)
    capsys.readouterr()
    assert main(["import", str(folder), "--db", str(db)]) == 0
    said = json.loads(capsys.readouterr().out)
    after = _scores(db)
    assert (before["what a stupid idea"], after["what a stupid idea"]) == ("timeout", None)
    assert len(after) - len(before) == 1  # "see you at noon"
    assert said["items"] == 3
    assert (said["scores_read"], said["scores_added"], said["scores_replacing_errors"],
            said["scores_already_in_log"]) == (3, 1, 1, 1)
    assert "scores" not in said  # the old count: the rows read, under a name that said they were written

    # importing the folder again reads none of its rows (its items are in the log's run) and adds nothing
    assert main(["import", str(folder), "--db", str(db)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["items"], again["skipped"], again["scores_read"], again["scores_added"]) == (0, 3, 0, 0)
    assert _scores(db) == after
