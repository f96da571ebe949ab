"""What the daemon hands the extension for a multi-participant study (hello_ok.study): the task
pages, the free-browsing switch and a sampling salt that is the same on every participant's
machine (so the extension's hash sampling overlaps) but differs between studies. No browser."""
from __future__ import annotations

import pytest

from modlens.config import parse_study
from modlens.engine import Engine
from modlens.live import LiveService

STUDY = {
    "study_id": "multi", "author_salt": "s" * 24, "free_browsing": False,
    "sampling": {"mode": "deciles", "per_decile": 20},
    "tasks": [{"url": "https://www.youtube.com/watch?v=abc", "title": "Video", "target": 5},
              {"url": "https://news.example/story"}],
}


def settings(monkeypatch, tmp_path, home: str, **changes) -> dict:
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / home))  # each participant's own machine
    study = parse_study({**STUDY, **changes})
    # an engine with no detectors: what the extension is handed depends on the study alone
    return LiveService(study, Engine(study, detectors={}), None).client_settings()  # type: ignore[arg-type]


def test_tasks_free_browsing_and_a_shared_sampling_salt(monkeypatch, tmp_path):
    one = settings(monkeypatch, tmp_path, "alice")
    assert one["free_browsing"] is False
    assert [(t["url"], t["title"], t["target"]) for t in one["tasks"]] == [
        ("https://www.youtube.com/watch?v=abc", "Video", 5), ("https://news.example/story", None, None)]
    assert one["sampling"]["mode"] == "deciles" and one["sampling"]["per_decile"] == 20
    salt = one["sampling"]["salt"]
    assert len(salt) == 32 and salt != one["author_salt"]
    assert settings(monkeypatch, tmp_path, "bob")["sampling"]["salt"] == salt
    for other in ({"study_id": "other"}, {"author_salt": "t" * 24}, {"sampling": {"mode": "deciles", "seed": 1}}):
        assert settings(monkeypatch, tmp_path, "alice", **other)["sampling"]["salt"] != salt, other


@pytest.mark.parametrize("home", ["carol", "dave"])
def test_without_a_study_author_salt_sampling_still_agrees_across_machines(monkeypatch, tmp_path, home):
    # the author salt falls back to one per machine; the sampling salt must not follow it
    s = settings(monkeypatch, tmp_path, home, author_salt=None)
    base = settings(monkeypatch, tmp_path, "erin", author_salt=None)
    assert s["author_salt"] != base["author_salt"]
    assert s["sampling"]["salt"] == base["sampling"]["salt"]
