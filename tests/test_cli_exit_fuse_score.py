"""`modlens fuse --score`: a case part a detector gave no score for (its call failed, a media file
missing, an OCR read that failed: an error row, retried by the next run) is said on stderr per
detector and makes the command exit 1 after the summary, as `modlens audit` does; exit 0 would
say every part was scored. A part a detector cannot read here (not scored locally) is no error."""
from __future__ import annotations

import json
import socket
import sqlite3

from modlens.cli import main

PAIRS = "content_type,a,b\nabuse_hate,women,pigs\nsexual,lick,dick\n"
FAST = ["--fusion", "T+E", "--fusion", "T+I", "--quiet", "--no-oracle"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _error_rows(db) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT d.name, count(c.error) FROM case_scores c JOIN detectors d USING (detector_id) "
                                "GROUP BY d.name").fetchall())
    finally:
        con.close()


def test_fuse_score_with_error_rows_says_so_and_exits_1(tmp_path, capsys, modlens_home):
    pairs, study, db = tmp_path / "pairs.csv", tmp_path / "study.toml", tmp_path / "log.sqlite"
    pairs.write_text(PAIRS, encoding="utf-8")
    study.write_text('study_id = "fuse-errors"\ndetectors = [{ name = "profanity-check" }, '
                     f'{{ name = "http", options = {{ url = "http://127.0.0.1:{_closed_port()}/score", '
                     'score_path = "score", retries = 0 } }]\n')
    args = ["fuse", "--pairs-file", str(pairs), "--study", str(study), "--detectors", "profanity-check", "http",
            "--db", str(db), "--media-dir", str(tmp_path / "media"), "--score", *FAST]
    assert main(args) == 1
    out, err = capsys.readouterr()
    scored = json.loads(out)["scored"]  # the summary is out before the exit code says the rest
    http, prof = scored["detectors"]["http"], scored["detectors"]["profanity-check"]
    errors = _error_rows(db)
    assert http["errors"] == http["pending"] == errors["http"] > 0
    assert prof["errors"] == errors["profanity-check"] == 0 and prof["scored"] == prof["pending"] > 0
    assert f"modlens fuse: detector http: {errors['http']} of the {http['pending']} case parts it scored have an " \
           "error" in err
    assert f"detector http gave no score for {errors['http']} of the {http['pending']} case parts it scored" in err
    assert "profanity-check gave no score" not in err

    # the server still gone: the same command scores the error rows again, and says so again
    assert main(args) == 1
    again = json.loads(capsys.readouterr().out)["scored"]["detectors"]
    assert again["http"]["pending"] == again["http"]["errors"] == errors["http"]
    assert again["profanity-check"]["pending"] == 0


def test_fuse_score_without_errors_exits_0(tmp_path, capsys, modlens_home):
    pairs, db = tmp_path / "pairs.csv", tmp_path / "log.sqlite"
    pairs.write_text(PAIRS, encoding="utf-8")
    assert main(["fuse", "--pairs-file", str(pairs), "--detectors", "profanity-check", "--db", str(db),
                 "--media-dir", str(tmp_path / "media"), "--score", *FAST]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["scored"]["n_errors"] == 0 and "gave no score" not in err


def test_the_first_error_is_said_of_a_detector_whose_version_holds_an_at_sign(tmp_path, capsys, modlens_home,
                                                                            monkeypatch):
    """A hub model's version holds its own '@' (hf_common.source_id: `unitary/toxic-bert@<sha>+cfg...`):
    the line still gives the detector's first error, as the log keeps it, not 'None'."""
    import modlens.detectors.http as http

    monkeypatch.setattr(http, "config_hash", lambda cfg: "someone/model@0123abcd+cfg.feed")
    pairs, study, db = tmp_path / "pairs.csv", tmp_path / "study.toml", tmp_path / "log.sqlite"
    pairs.write_text(PAIRS, encoding="utf-8")
    study.write_text('study_id = "fuse-errors"\ndetectors = ['
                     f'{{ name = "http", options = {{ url = "http://127.0.0.1:{_closed_port()}/score", '
                     'score_path = "score", retries = 0 } }]\n')
    assert main(["fuse", "--pairs-file", str(pairs), "--study", str(study), "--detectors", "http", "--db", str(db),
                 "--media-dir", str(tmp_path / "media"), "--score", *FAST]) == 1
    err = capsys.readouterr().err
    con = sqlite3.connect(db)
    try:
        (version,), = con.execute("SELECT version FROM detectors WHERE name = 'http'").fetchall()
        first = con.execute("SELECT error FROM case_scores WHERE error IS NOT NULL ORDER BY case_id, part").fetchone()[0]
    finally:
        con.close()
    assert "@" in version and first
    assert "(the first: None)" not in err and f"(the first: {first})" in err
