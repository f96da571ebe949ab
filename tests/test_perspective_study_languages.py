"""A study maps languages to detectors (study.toml `[perspective.languages]`, e.g. a multilingual
Hugging Face model for users who are online): a request without `languages`, as 4CAT's processor
sends it, is then answered for every language some detector covers; a mapped detector that did
not load (offline) is named in the refusal, whose message stays Google's text (perspective.py
parses it) and whose explanation is a second detail (clients read `details[0]`)."""
from __future__ import annotations


import pytest
from modlens.config import StudyConfigError

from daemon_helpers import TOKEN, WordListDetector, study
from test_perspective_languages import _analyze
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app

pytestmark = pytest.mark.timeout(120)
SPANISH = "eres un idiota y no sabes nada de esto, que vergüenza"
GERMAN = "du bist ein idiot und das ist nicht gut, ich bin sauer"
FRENCH = "tu es un idiot et ce n'est pas bien du tout, je suis fâché"


class Multilingual(WordListDetector):
    """A multilingual model's stand-in: its own labels, its own version."""
    name, version = "multilingual", "test-xl-1"
    labels = ("toxic", "insult")
    toxicity_label = "toxic"

    def score(self, texts):
        return [{"toxic": 0.75, "insult": 0.5} for _ in texts]


class EnglishWithThreat(WordListDetector):
    """English only (the study's default trust): TOXICITY and THREAT."""
    labels = ("toxic", "threat")

    def score(self, texts):
        return [{"toxic": s["toxic"], "threat": 0.0} for s in super().score(texts)]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("study-languages") / "study.sqlite"
    cfg = study(detectors=[{"name": "profanity-check", "id": "wordlist"}, {"name": "profanity-check", "id": "xl"},
                           {"name": "profanity-check", "id": "offline-xl"}],
                perspective={"languages": {"es": "xl", "de": "offline-xl"}})
    srv = ThreadedServer(create_app(cfg, db, TOKEN, detectors={"wordlist": EnglishWithThreat(), "xl": Multilingual()}))
    yield srv.base
    srv.stop()


def test_a_request_without_languages_is_answered_in_a_mapped_language(base):
    status, got = _analyze(base, {"comment": {"text": SPANISH}, "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}})
    assert status == 200, got
    assert got["detectedLanguages"] == ["es"]
    assert got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 0.75
    assert got["attributeScores"]["TOXICITY"]["detector"]["version"] == "test-xl-1"
    assert got["attributeScores"]["INSULT"]["detector"]["label"] == "insult"
    # English keeps its own detector
    status, got = _analyze(base, {"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"]["TOXICITY"]["detector"]["key"] == "wordlist"


def test_the_offline_refusal_names_the_detector_that_would_answer(base):
    status, got = _analyze(base, {"comment": {"text": GERMAN}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400
    assert got["error"]["message"] == "Attribute TOXICITY does not support request languages: de"
    assert got["error"]["details"][0]["errorType"] == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"
    why = got["error"]["details"][1]
    assert why["@type"] == "type.googleapis.com/google.rpc.LocalizedMessage"
    assert "detector offline-xl" in why["message"] and "not loaded" in why["message"]


def test_unmapped_language_and_missing_label_say_so(base):
    status, got = _analyze(base, {"comment": {"text": FRENCH}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"] == "Attribute TOXICITY does not support request languages: fr"
    assert "[perspective.languages]" in got["error"]["details"][1]["message"]
    assert "covered: en, es" in got["error"]["details"][1]["message"]
    status, got = _analyze(base, {"comment": {"text": SPANISH}, "languages": ["es"],
                                  "requestedAttributes": {"THREAT": {}}})
    assert status == 400 and "has no label for THREAT" in got["error"]["details"][1]["message"]
    status, got = _analyze(base, {"comment": {"text": SPANISH}, "requestedAttributes": {"PROFANITY": {}}})
    assert status == 400 and got["error"]["details"][0]["errorType"] == "ATTRIBUTE_NOT_AVAILABLE"
    # dropUnsupportedAttributes keeps what can be answered
    status, got = _analyze(base, {"comment": {"text": SPANISH}, "dropUnsupportedAttributes": True,
                                  "requestedAttributes": {"TOXICITY": {}, "THREAT": {}}})
    assert status == 200 and set(got["attributeScores"]) == {"TOXICITY"}


def test_language_codes_are_checked():
    with pytest.raises(StudyConfigError, match="ISO 639-1"):
        study(perspective={"languages": {"Spanish": "xl"}})
