"""Languages as Perspective treated them: with no `languages`, the comment's language is detected,
but English stays the answer unless the evidence for another language is strong (slang and AAVE
are not refused as Spanish or Dutch); with `languages` given, the request is trusted. Measured on
every Davidson tweet, and on genuine sentences of other languages written for this test."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from daemon_helpers import TOKEN, WordListDetector, study
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.datasets import davidson
from modlens.perspective import languages

pytestmark = pytest.mark.timeout(120)
DAVIDSON = Path(davidson.__file__).with_name("data") / "davidson" / "labeled_data.csv"

# English comments the first guesser refused (one function word of another language beat English)
ENGLISH_SLANG = ["Y'all bitches FAKE", "Y'all bitches FAKE &#128514;&#128557;", "die in a fire",
                 "I eat dat chicken out your love box baby. Lovin a white woman while eatin chicken. A colored mans dream",
                 "hoe hoe hoe, merry Christmas", "Ho ho ho bitches", "are these hoes loyal? N O O o o o o",
                 "Y se acabó!! Mexico wins 3-0! That's my team bitches", "Arroz con pollo", "Café at José with Beyoncé"]
# written for this test: ordinary comments a moderator of another language would see
OTHER_LANGUAGES = [
    ("es", "No me gusta nada lo que dices, eres una persona muy mala y todos lo saben."),
    ("es", "¿Por qué no te callas? Nadie quiere escuchar tus tonterías."),
    ("de", "Ich glaube nicht, dass du das verstehst, aber es ist mir auch egal."),
    ("de", "Du bist wirklich der dümmste Mensch, den ich je getroffen habe."),
    ("fr", "Je ne sais pas pourquoi tu es toujours aussi méchant avec les autres."),
    ("fr", "C'est vraiment n'importe quoi, vous êtes tous des idiots."),
    ("nl", "Ik weet niet waarom je dat zegt, maar het is echt niet aardig."),
    ("nl", "Jij bent een sukkel en dat weet iedereen hier in de buurt."),
    ("it", "Non capisco perché sei sempre così arrabbiato con tutti."),
    ("pt", "Eu não acredito que você disse isso, é muito feio da sua parte."),
    ("ru", "Ты полный идиот, и все это знают."),
    ("ja", "お前は本当にバカだな。"),
]
# Davidson's tweets that are not English, each read by hand (the collection's search for "hoe"
# also found Dutch tweets, where "hoe" means "how"); everything else in the file is English
DAVIDSON_NOT_ENGLISH = {
    "tweet-1089": "es",   # "¿Como se llama el niño más delgado de Japón? ..."
    "tweet-8756": "es",   # "Conocí tus ojos negros  Y ahora si que no puedo vivir sin ellos"
    "tweet-12578": "es",  # "LA MÁQUINA  Una vez en Japón 5 japoneses crearon una máquina ..."
    "tweet-14082": "es",  # "POLLOS A L'AST  Dos pollos estaban dando vueltas en una pollería ..."
    "tweet-22856": "es",  # "Un pollito cruzaba la frontera, un zorro se tropieza con el pollo ..."
    "tweet-2750": "nl", "tweet-2850": "nl", "tweet-3407": "nl", "tweet-3432": "nl", "tweet-4152": "nl",
    "tweet-5164": "nl", "tweet-8255": "nl", "tweet-8430": "nl", "tweet-12494": "nl", "tweet-13855": "nl",
    "tweet-16303": "nl", "tweet-20648": "nl",  # "Brrr hoe dichter bij het Sint gebeuren hoe ...", ...
}
DAVIDSON_ARABIC = "tweet-16918"  # Arabic script, written as HTML entities in the file


@pytest.mark.parametrize("text", ENGLISH_SLANG)
def test_english_slang_is_english(text):
    assert languages.detect(text) == ["en"]


@pytest.mark.parametrize("lang, text", OTHER_LANGUAGES)
def test_genuine_other_languages_are_detected(lang, text):
    assert languages.detect(text) == [lang]


@pytest.mark.parametrize("unescape", [True, False], ids=["entities-decoded", "as-in-the-file"])
def test_every_davidson_tweet_english_but_the_foreign_ones(unescape):
    """All 24,783 tweets, as a client would send them (with or without the HTML entities decoded)."""
    expected = dict(DAVIDSON_NOT_ENGLISH, **({DAVIDSON_ARABIC: "ar"} if unescape else {}))
    seen, not_english = 0, {}
    for item in davidson.read(DAVIDSON, html_unescape=unescape).iter_items():
        seen += 1
        detected = languages.detect(item.text)
        if detected != ["en"]:
            not_english[item.key] = detected[0]
    assert seen == 24_783
    assert not_english == expected


# --- through the endpoint -----------------------------------------------------------------
@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("languages") / "study.sqlite"
    srv = ThreadedServer(create_app(study(), db, TOKEN, detectors={"wordlist": WordListDetector()}))
    yield srv.base
    srv.stop()


def _analyze(base: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{base}/v1alpha1/comments:analyze?key={TOKEN}", method="POST",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


@pytest.mark.parametrize("text", ENGLISH_SLANG[:4])
def test_slang_scored_without_languages(base, text):
    status, got = _analyze(base, {"comment": {"text": text}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200, got
    assert got["detectedLanguages"] == ["en"] and got["languages"] == ["en"]
    assert 0 <= got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] <= 1


def test_strong_evidence_of_another_language_is_refused_as_perspective_did(base):
    status, got = _analyze(base, {"comment": {"text": OTHER_LANGUAGES[6][1]}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
    assert got["error"]["message"] == "Attribute TOXICITY does not support request languages: nl"
    detail = got["error"]["details"][0]
    assert detail["errorType"] == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"
    assert detail["languageNotSupportedByAttributeError"] == {"detectedLanguages": ["nl"], "attribute": "TOXICITY"}


def test_languages_given_are_trusted(base):
    """A client that says the comment is English gets it scored, and still sees what was detected."""
    status, got = _analyze(base, {"comment": {"text": OTHER_LANGUAGES[6][1]}, "languages": ["en-US"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["languages"] == ["en-US"] and got["detectedLanguages"] == ["nl"]
    status, got = _analyze(base, {"comment": {"text": "you idiot"}, "languages": ["de"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and "does not support request languages: de" in got["error"]["message"]


# --- no language to detect ----------------------------------------------------------------
# Comments with no letters, or letters of no script the detector can name: Perspective found no
# language in them and refused them as `und` (BCP 47's "undetermined"): "Attribute INSULT does
# not support request languages: und" for a comment that was an image (atom/biohazard-alert, 2019),
# as its discovery document says ("The server returns an error if no language was specified and
# language detection fails").
NO_LANGUAGE = ["😂😂😂", "🔥🔥 💯", "12345", "!!! ??? ...", "3-0 !!! 🇲🇽", "ქართული ენა ლამაზია"]


@pytest.mark.parametrize("text", NO_LANGUAGE)
def test_no_letters_detect_no_language(text):
    assert languages.detect(text) == ["und"]


@pytest.mark.parametrize("text", ["𝐲𝐨𝐮 𝐚𝐫𝐞 𝐚𝐧 𝐢𝐝𝐢𝐨𝐭", "ｙｏｕ ａｒｅ ａｎ ｉｄｉｏｔ", "lol 😂😂"])
def test_styled_latin_letters_are_latin(text):
    """Mathematical and full-width letters are Latin letters written in another style."""
    assert languages.detect(text) == ["en"]


def test_no_language_is_refused_as_perspective_refused_it(base):
    status, got = _analyze(base, {"comment": {"text": "😂😂😂"}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
    assert got["error"]["message"] == "Attribute TOXICITY does not support request languages: und"
    detail = got["error"]["details"][0]
    assert detail["errorType"] == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"
    assert detail["languageNotSupportedByAttributeError"] == {"detectedLanguages": ["und"], "attribute": "TOXICITY"}
    assert "no language" in got["error"]["details"][1]["message"]
    # dropped, nothing answered; given `languages`, it is scored and still says nothing was detected
    status, got = _analyze(base, {"comment": {"text": "😂😂😂"}, "dropUnsupportedAttributes": True,
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"] == {}
    assert got["languages"] == ["und"] and got["detectedLanguages"] == ["und"]
    status, got = _analyze(base, {"comment": {"text": "😂😂😂"}, "languages": ["en"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["languages"] == ["en"] and got["detectedLanguages"] == ["und"]
    assert 0 <= got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] <= 1


def test_suggestscore_says_no_language_was_detected(base):
    request = urllib.request.Request(
        f"{base}/v1alpha1/comments:suggestscore?key={TOKEN}", method="POST", headers={"Content-Type": "application/json"},
        data=json.dumps({"comment": {"text": "🤬🤬"}, "attributeScores": {"TOXICITY": {"summaryScore": {"value": 1}}}}).encode())
    with urllib.request.urlopen(request, timeout=30) as r:
        assert json.load(r) == {"requestedLanguages": [], "detectedLanguages": ["und"]}
