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

from log_helpers import log_that_stops

CHUNK = 100


def _scores(db, detector: str) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM scores JOIN detectors USING (detector_id) WHERE name = ?",
                           (detector,)).fetchone()[0]
    finally:
        con.close()


def test_a_full_disk_ends_a_rescore_with_what_is_logged(data_dir, tmp_path, monkeypatch, capsys):
    nh, db = data_dir / "noisyhate" / "dev.csv", tmp_path / "log.sqlite"
    assert main(["audit", str(nh), "--db", str(db), "--detectors", "recorded", "--quiet"]) == 0
    argv = ["rescore", str(db), "--detectors", "profanity-check", "--chunk", str(CHUNK), "--quiet"]
    capsys.readouterr()
    full = log_that_stops("add_scores_many")  # no new page once the first chunk's scores are written
    monkeypatch.setattr(rescore, "StudyLog", full)
    code = main(argv)
    out = capsys.readouterr()
    assert full.stopped
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


def test_rescore_says_how_many_error_rows_its_answers_replaced(tmp_path, capsys):
    """An audit whose detector crashed on half its calls leaves error rows; a rescore with the same
    detector version, working again, replaces them (a later answer replaces an error, never the
    reverse): its summary says how many, as the log's rows changed."""
    from typing import Any, Sequence

    from modlens.audit import run_audit
    from modlens.detectors.base import Detector

    class Model(Detector):
        name, version, labels, toxicity_label = "model", "1", ("toxicity",), "toxicity"
        crash = True

        def score(self, texts: Sequence[str]) -> list[Any]:
            if Model.crash and any("idiot" in t for t in texts):
                raise RuntimeError("out of memory")
            return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]

    path, db = tmp_path / "c.csv", tmp_path / "log.sqlite"
    path.write_text("text\n" + "".join(f"nice day {i}\n" for i in range(10)) + "".join(f"idiot {i}\n" for i in range(10)),
                    encoding="utf-8")
    run_audit(str(path), db=db, detector_objects={"m": Model()}, chunk_size=10, progress=False)
    con = sqlite3.connect(db)
    errors_before = con.execute("SELECT count(*) FROM scores WHERE error IS NOT NULL").fetchone()[0]
    assert errors_before == 10
    Model.crash = False
    result = rescore.run_rescore(db, detector_objects={"m": Model()}, progress=False)
    tally = result.detectors["m"]
    assert (tally.texts, tally.already, tally.scored, tally.errors) == (20, 10, 10, 0)
    assert tally.replaced == errors_before - con.execute("SELECT count(*) FROM scores WHERE error IS NOT NULL").fetchone()[0]
    assert tally.replaced == 10
    con.close()
