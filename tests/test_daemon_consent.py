"""Consent is to a text: hello carries the SHA-256 of the consent text the participant agreed to,
the daemon counts it only when that is the running study's current text, and the log records
which text each consent was for (`consents`, the text itself in `consent_texts`)."""
from __future__ import annotations

import hashlib

from contextlib import asynccontextmanager

from daemon_helpers import TOKEN, Client, connect, running_daemon, serving, study
from modlens.config import StudyConfig
from modlens.daemon.app import create_app
from log_helpers import rows

AT = "2025-01-31T12:00:00Z"


def hello(rater: str, **fields) -> dict:
    return {"type": "hello", "id": "h1", "protocol": 1, "client": "test", "client_version": "0", "token": TOKEN,
            "rater_id": rater, **fields}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def shown_text(url: str) -> str:
    """What the participant reads before agreeing: hello_ok's consent text (a hello without consent)."""
    async with connect(url) as ws:
        return (await Client(ws).request(hello("reader"), "hello_ok"))["study"]["consent_text"]


async def test_a_consent_is_recorded_with_the_text_agreed_to(tmp_path):
    async with running_daemon(tmp_path, study(consent_text="You agree to rate comments.")) as (url, _app):
        text = await shown_text(url)
        async with connect(url) as ws:
            ok = await Client(ws).request(hello("rater-1", study_id="test", consent_at=AT, consent_sha256=sha(text)),
                                          "hello_ok")
            assert ok["type"] == "hello_ok"
        async with connect(url) as ws:  # the same consent again: still one row
            await Client(ws).request(hello("rater-1", study_id="test", consent_at="2025-02-01T00:00:00Z",
                                           consent_sha256=sha(text)), "hello_ok")
    db = tmp_path / "study.sqlite"
    assert "You agree to rate comments." in text
    assert rows(db, "SELECT consent_at FROM raters WHERE rater_id = 'rater-1'") == [(AT,)]
    assert rows(db, "SELECT rater_id, consent_sha256, consented_at FROM consents") == [("rater-1", sha(text), AT)]
    assert rows(db, "SELECT c.study_id, t.text FROM consents c JOIN consent_texts t USING (consent_sha256)") == [
        ("test", text)]


async def test_a_consent_to_another_text_is_not_counted(tmp_path):
    async with running_daemon(tmp_path, study(consent_text="The new text: comments go to a remote scorer.")) as (url, _):
        async with connect(url) as ws:
            c = Client(ws)
            refused = await c.request(hello("rater-1", study_id="test", consent_at=AT,
                                            consent_sha256=sha("The old text: nothing leaves this computer.")))
            assert (refused["type"], refused["code"]) == ("error", "consent_outdated")
            assert "consent text" in refused["message"]
            # the session did not open: the client asks the participant again, then says hello anew
            later = await c.request({"type": "ping", "id": "p1"})
            assert (later["type"], later["code"]) == ("error", "hello_required")
        async with connect(url) as ws:  # a hello naming a consent without saying to which text
            c = Client(ws)
            bare = await c.request(hello("rater-2", study_id="test", consent_at=AT))
            assert (bare["type"], bare["code"]) == ("error", "invalid_fields") and "consent_sha256" in bare["message"]
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT rater_id, consent_at FROM raters WHERE consent_at IS NOT NULL") == []
    assert rows(db, "SELECT count(*) FROM consents") == [(0,)]
    assert rows(db, "SELECT count(*) FROM consent_texts") == [(0,)]


KEY_ENV = "MODLENS_TEST_PERSPECTIVE_KEY"
PERSPECTIVE = "https://commentanalyzer.googleapis.com"


def with_perspective() -> StudyConfig:
    """A local detector and Perspective, whose key the participant may or may not have set."""
    return study(detectors=[{"name": "profanity-check", "id": "local"},
                            {"name": "perspective", "id": "persp", "options": {"api_key_env": KEY_ENV}}])


@asynccontextmanager
async def loading_daemon(tmp_path, cfg: StudyConfig):
    """The real app that loads the study's detectors itself, as `modlens serve` does; yields its url."""
    app = create_app(cfg, tmp_path / "study.sqlite", TOKEN)
    async with serving(app, shutdown_timeout=2) as port:
        yield f"ws://127.0.0.1:{port}/ws"


async def test_the_consent_text_names_the_remote_detectors_that_run_and_a_new_one_asks_again(tmp_path, monkeypatch):
    """Detectors load at serve time (`detectors=None`: the real loader). Perspective without its key
    does not load, and sends nothing: the text must not tell the participant their comments go to
    Google, and must say that detector is off. A later run where it loads must name it, and a
    consent to the first text must not count for it: no comment goes there unasked."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    async with loading_daemon(tmp_path, with_perspective()) as url:
        without = await shown_text(url)
        async with connect(url) as ws:
            ok = await Client(ws).request(hello("rater-1", study_id="test", consent_at=AT,
                                                consent_sha256=sha(without)), "hello_ok")
            assert [d["key"] for d in ok["detectors"]] == ["local"]  # what runs
    assert "sent, to be scored" not in without and PERSPECTIVE in without, without
    assert "persp did not load on this computer and is off" in without, without
    assert "The study's other detectors run on this computer (local); no comment is sent anywhere else." in without

    monkeypatch.setenv(KEY_ENV, "a-key-that-is-never-used")
    async with loading_daemon(tmp_path, with_perspective()) as url:
        loaded = await shown_text(url)
        assert f"sent, to be scored, to: {PERSPECTIVE} (detector persp)" in loaded, loaded
        assert "did not load" not in loaded
        async with connect(url) as ws:  # the consent given while it was off: not a consent to send there
            refused = await Client(ws).request(hello("rater-1", study_id="test", consent_at="2025-02-01T00:00:00Z",
                                                     consent_sha256=sha(without)))
            assert (refused["type"], refused["code"]) == ("error", "consent_outdated")
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT consent_sha256 FROM consents WHERE rater_id = 'rater-1'") == [(sha(without),)]


def test_a_local_detector_that_does_not_load_leaves_the_consent_text_as_it_was():
    """Where comments go is what a consent is to: a local detector sends nothing whether it loaded or
    not, so its failing to load on one start must not change the text (and ask every participant again)."""
    cfg = study(detectors=[{"name": "profanity-check", "id": "local"}, {"name": "profanity-check", "id": "other"}])
    assert cfg.data_flow_notice(running=["local"]) == cfg.data_flow_notice(running=["local", "other"]) \
        == cfg.data_flow_notice()
    with_remote = with_perspective()
    assert with_remote.data_flow_notice(running=["persp"]) == with_remote.data_flow_notice(running=["local", "persp"])
    assert with_remote.data_flow_notice(running=["local"]) != with_remote.data_flow_notice(running=["local", "persp"])
