"""`modlens rescore --variants` scores the variants it makes with the study's detectors that load
here: one that cannot (Perspective without an API key) is named on stderr and in the summary, as
`modlens rescore` and `modlens audit` name it, never left out silently; with none that loads, it
refuses before making anything."""
from __future__ import annotations

import json
import sqlite3

from modlens.cli import main
from modlens.studylog.records.deferred import defer_variants
from modlens.studylog.store import StudyLog

STUDY = """study_id = "deferred"
detectors = [{{ name = "profanity-check" }}{more}]
[normalizer]
enabled = false
[perturbation]
enabled = true
importance_threshold = 0
"""


def _deferred_log(db) -> None:
    with StudyLog(db) as log:
        page = log.ensure_page("youtube", "v1", None, None)
        cid = log.add_comment("youtube", "c1", page, "you are a stupid idiot and a fool")
        defer_variants(log, [(cid, "live variant budget reached")])


def _scored_by(db) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT d.name, count(*) FROM variants v JOIN scores s ON s.text_id = v.text_id "
                                "JOIN detectors d USING (detector_id) GROUP BY d.name").fetchall())
    finally:
        con.close()


def test_a_study_detector_that_cannot_load_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    db, study = tmp_path / "log.sqlite", tmp_path / "study.toml"
    study.write_text(STUDY.format(more=', { name = "perspective" }'))
    _deferred_log(db)
    assert main(["rescore", "--variants", "--db", str(db), "--config", str(study)]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["variants"] > 0 and _scored_by(db) == {"profanity-check": result["variants"]}
    assert list(result["unavailable"]) == ["perspective"] and "PERSPECTIVE_API_KEY" in result["unavailable"]["perspective"]
    assert "modlens rescore: detector perspective not used: " in out.err


def test_no_detector_that_loads_makes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    db, study = tmp_path / "log.sqlite", tmp_path / "study.toml"
    study.write_text(STUDY.replace('{{ name = "profanity-check" }}{more}', '{ name = "perspective" }'))
    _deferred_log(db)
    assert main(["rescore", "--variants", "--db", str(db), "--config", str(study)]) == 1
    err = capsys.readouterr().err
    assert "perspective" in err and "Traceback" not in err
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM variants").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM deferred_variants WHERE done_at IS NULL").fetchone()[0] == 1


def _closed_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_detector_that_answers_the_variants_with_errors_is_said_and_fails_the_command(tmp_path, capsys):
    """A remote detector whose server is gone: every variant made gets an error row from it. The
    summary counts them (`score_errors`, as the audit's), stderr says so, and the command exits 1
    after the summary: exit 0 would say every variant was scored."""
    db, study = tmp_path / "log.sqlite", tmp_path / "study.toml"
    study.write_text(STUDY.format(more=f', {{ name = "http", options = {{ url = "http://127.0.0.1:{_closed_port()}/score", '
                                       'score_path = "score", retries = 0 } }'))
    _deferred_log(db)
    assert main(["rescore", "--variants", "--db", str(db), "--config", str(study)]) == 1
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["variants"] > 0
    con = sqlite3.connect(db)
    try:
        errors = con.execute("SELECT count(*) FROM scores s JOIN detectors d USING (detector_id) "
                             "WHERE d.name = 'http' AND s.error IS NOT NULL").fetchone()[0]
    finally:
        con.close()
    assert result["score_errors"]["http"]["errors"] == result["score_errors"]["http"]["scores"] == errors > 0
    assert f"modlens rescore: detector http: {errors} of the {errors} texts it scored have an error" in out.err
    assert f"modlens rescore: detector http gave no score for {errors} of the {errors} texts it scored" in out.err
