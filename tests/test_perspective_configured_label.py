"""An attribute study.toml maps to a label its detector does not have (`[perspective.attributes.X]
label = ...`, a typo or another model's label name) is not answered by that detector: refused as
not available here (or dropped with dropUnsupportedAttributes), never a 500 "detector failed"
whose call the study log keeps as answered, with the detector's scores and no error."""
from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import aiohttp
import pytest

from daemon_helpers import TOKEN, WordListDetector, study
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.daemon.perspective_api import ANALYZER

pytestmark = pytest.mark.timeout(120)


def _study():
    return study(detectors=[{"name": "profanity-check", "id": "wordlist"}],
                 perspective={"attributes": {"INSULT": {"detector": "wordlist", "label": "insult"}}})


@pytest.fixture
def server(tmp_path):
    app = create_app(_study(), tmp_path / "study.sqlite", TOKEN, detectors={"wordlist": WordListDetector()})
    srv = ThreadedServer(app)
    yield srv, app, tmp_path / "study.sqlite"
    srv.stop()


def _post(base: str, body: Any) -> tuple[int, dict[str, Any]]:
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{base}/v1alpha1/comments:analyze", params={"key": TOKEN}, data=json.dumps(body)) as r:
                return r.status, await r.json(content_type=None)
    return asyncio.run(go())


def _answered_labels(db) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [v for (v,) in con.execute("SELECT value FROM labels WHERE name = 'api.answered'")]
    finally:
        con.close()


def test_missing_label_is_refused_as_not_available(server):
    srv, app, db = server
    status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "requestedAttributes": {"INSULT": {}}})
    assert status == 400, got
    assert got["error"]["status"] == "INVALID_ARGUMENT"
    assert got["error"]["details"][0]["errorType"] == "ATTRIBUTE_NOT_AVAILABLE"
    assert "insult" in got["error"]["message"] and "clean, toxic" in got["error"]["message"]


def test_missing_label_is_dropped_not_logged_as_answered(server):
    srv, app, db = server
    status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "dropUnsupportedAttributes": True,
                                   "requestedAttributes": {"INSULT": {}, "TOXICITY": {}}})
    assert status == 200, got
    assert set(got["attributeScores"]) == {"TOXICITY"}
    asyncio.run_coroutine_threadsafe(app[ANALYZER].drain(), srv.loop).result(10)
    assert _answered_labels(db) == ["TOXICITY"]
