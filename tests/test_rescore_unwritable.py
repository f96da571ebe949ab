"""A rescore whose study log fills its disk mid-run ends as the README's error table says: one line
with the cause, how many of the scores it made are in the log, and how to resume; exit 1, no
traceback. The full disk is real to SQLite (`PRAGMA max_page_count` on the rescore's own
connection, as tests/test_studylog_full.py does); the rerun scores only what is still missing."""
from __future__ import annotations

import json
import sqlite3

import modlens.audit.rescore as rescore
from modlens.cli import main
from modlens.studylog.store import StudyLog

CHUNK = 100


def _scores(db, detector: str) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM scores JOIN detectors USING (detector_id) WHERE name = ?",
                           (detector,)).fetchone()[0]
    finally:
        con.close()


class FillsAfterFirstChunk(StudyLog):
    """No new page once the first chunk's scores are written (in its transaction, committed after)."""
    filled = False

    def add_scores_many(self, rows):  # type: ignore[no-untyped-def]
        n = super().add_scores_many(rows)
        if not FillsAfterFirstChunk.filled:
            FillsAfterFirstChunk.filled = True
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            self.conn.execute(f"PRAGMA max_page_count = {pages}")
        return n


def test_a_full_disk_ends_a_rescore_with_what_is_logged(data_dir, tmp_path, monkeypatch, capsys):
    nh, db = data_dir / "noisyhate" / "dev.csv", tmp_path / "log.sqlite"
    assert main(["audit", str(nh), "--db", str(db), "--detectors", "recorded", "--quiet"]) == 0
    argv = ["rescore", str(db), "--detectors", "profanity-check", "--chunk", str(CHUNK), "--quiet"]
    capsys.readouterr()
    monkeypatch.setattr(rescore, "StudyLog", FillsAfterFirstChunk)
    code = main(argv)
    out = capsys.readouterr()
    assert FillsAfterFirstChunk.filled
    assert code == 1, out.err
    assert "Traceback" not in out.err and out.out == ""
    logged = _scores(db, "profanity-check")
    assert logged == CHUNK
    assert f"{logged} scores of this rescore are in the log" in out.err
    assert "cannot be written" in out.err and "run the same command again" in out.err and "daemon" not in out.err

    monkeypatch.setattr(rescore, "StudyLog", StudyLog)
    assert main(argv) == 0
    (tally,) = json.loads(capsys.readouterr().out)["detectors"].values()
    assert tally["already"] == CHUNK and tally["scored"] == tally["texts"] - CHUNK
    assert _scores(db, "profanity-check") == tally["texts"]
