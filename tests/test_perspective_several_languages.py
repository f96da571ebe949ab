"""A call naming several languages is scored by one detector per attribute, so it is answered only
where one detector covers them all; its refusal keeps Google's message, and modlens's explanation
(the second detail) says of each language what is true of it: a language the attribute is answered
in is never said to be uncovered, nor its detector to lack the label."""
from __future__ import annotations

import pytest

from daemon_helpers import TOKEN, study
from test_perspective_languages import _analyze
from test_perspective_study_languages import SPANISH, EnglishWithThreat, Multilingual
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("several-languages") / "study.sqlite"
    cfg = study(detectors=[{"name": "profanity-check", "id": "wordlist"}, {"name": "profanity-check", "id": "xl"}],
                perspective={"languages": {"es": "xl"}})
    srv = ThreadedServer(create_app(cfg, db, TOKEN, detectors={"wordlist": EnglishWithThreat(), "xl": Multilingual()}))
    yield srv.base
    srv.stop()


def _why(got) -> str:
    return got["error"]["details"][1]["message"]


def test_a_covered_language_is_not_said_uncovered(base):
    status, got = _analyze(base, {"comment": {"text": "you idiot"}, "languages": ["en", "fr"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"] == "Attribute TOXICITY does not support request languages: en, fr"
    assert "fr: no detector of this study covers it" in _why(got)
    assert "en: no detector" not in _why(got)


def test_languages_answered_by_different_detectors_say_so(base):
    status, got = _analyze(base, {"comment": {"text": SPANISH}, "languages": ["en", "es"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"] == "Attribute TOXICITY does not support request languages: en, es"
    assert "has no label" not in _why(got) and "no detector" not in _why(got)
    assert "wordlist" in _why(got) and "xl" in _why(got) and "one language per call" in _why(got)
