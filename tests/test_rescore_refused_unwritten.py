"""`modlens rescore` refuses a detector it was named that cannot load before it writes anything
(README, "Exit codes"): an older log is left at its schema, byte for byte, not migrated and then
refused."""
from __future__ import annotations

from modlens.cli import main
from modlens.studylog.schema import SCHEMA_VERSION
from modlens.studylog.store import StudyLog
from log_helpers import as_schema, rows


def test_an_older_log_is_left_as_it_was_when_a_named_detector_cannot_load(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)  # Perspective then cannot load
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        page = log.ensure_page("youtube", "v1", None, None)
        log.add_comment("youtube", "c1", page, "you are a stupid idiot")
    as_schema(db, SCHEMA_VERSION - 1)
    before = db.read_bytes()
    assert main(["rescore", "--db", str(db), "--detectors", "perspective"]) == 1
    assert "detector perspective cannot load" in capsys.readouterr().err
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION - 1,)]
    assert db.read_bytes() == before
