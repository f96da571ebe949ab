"""A call naming several languages is scored by one detector's label per attribute, so it is answered
where the same detector and label answer in each of them (one detector the study maps several
languages to, or the attribute's own source and a language's detector that agree), and refused
where they differ; its refusal keeps Google's message, and modlens's explanation
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


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """es and fr mapped to one detector; INSULT mapped to that detector for en too, and TOXICITY to
    its `insult` label for en (so en and es read two different labels of one detector)."""
    db = tmp_path_factory.mktemp("shared-detector") / "study.sqlite"
    cfg = study(detectors=[{"name": "profanity-check", "id": "wordlist"}, {"name": "profanity-check", "id": "xl"}],
                perspective={"languages": {"es": "xl", "fr": "xl"},
                             "attributes": {"INSULT": {"detector": "xl", "label": "insult", "languages": ["en"]},
                                            "TOXICITY": {"detector": "xl", "label": "insult", "languages": ["en"]}}})
    srv = ThreadedServer(create_app(cfg, db, TOKEN, detectors={"wordlist": EnglishWithThreat(), "xl": Multilingual()}))
    yield srv.base
    srv.stop()


@pytest.mark.parametrize("langs", [["es", "fr"], ["es"], ["fr", "es"]])
def test_languages_one_detector_answers_are_answered_together(shared, langs):
    status, got = _analyze(shared, {"comment": {"text": SPANISH}, "languages": langs,
                                    "requestedAttributes": {"INSULT": {}}})
    assert status == 200, got
    assert got["languages"] == langs
    score = got["attributeScores"]["INSULT"]
    assert score["detector"]["key"] == "xl" and score["detector"]["label"] == "insult"
    assert score["summaryScore"]["value"] == 0.5


def test_an_attributes_own_source_and_a_languages_detector_that_agree_answer_together(shared):
    status, got = _analyze(shared, {"comment": {"text": SPANISH}, "languages": ["en", "es"],
                                    "requestedAttributes": {"INSULT": {}}})
    assert status == 200, got
    assert got["attributeScores"]["INSULT"]["detector"]["key"] == "xl"


def test_one_detectors_two_labels_are_two_sources_and_said_so(shared):
    """en reads xl's `insult` (study.toml), es xl's `toxic` (its alias): one call cannot be both."""
    status, got = _analyze(shared, {"comment": {"text": SPANISH}, "languages": ["en", "es"],
                                    "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"] == "Attribute TOXICITY does not support request languages: en, es"
    assert "en by detector xl (label insult)" in _why(got) and "es by detector xl (label toxic)" in _why(got)
    assert "one language per call" in _why(got)
