"""A Latin-script comment written in a language modlens cannot name (Polish, Czech, Turkish, Swedish,
Romanian, Vietnamese, ...) is not English: it was answered `detectedLanguages: ["en"]`
and scored by the English-only detectors, a detection that never happened. Strong evidence of a
language it cannot name (words written with letters none of the languages it names, nor English
loanwords, use) makes it `und`, undetermined, refused as Perspective refused a comment whose
language it could not detect; English with a name such as "Łukasz" in it stays English (and every
Davidson tweet stays as it was: tests/test_perspective_languages.py)."""
from __future__ import annotations

import pytest

from daemon_helpers import TOKEN, WordListDetector, study
from test_perspective_languages import _analyze
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.perspective import languages

pytestmark = pytest.mark.timeout(120)

# written for this test: ordinary comments a moderator of each language would see
UNNAMED = [
    ("pl", "Jesteś głupi i wszyscy o tym wiedzą, więc się zamknij."),
    ("cs", "Jsi úplný idiot a všichni to vědí, tak už mlč."),
    ("tr", "Sen tam bir aptalsın, kimse seni sevmiyor, artık sus ve çık dışarı."),
    ("sv", "Du är en sån idiot, håll käften och gå härifrån nu."),
    ("ro", "Ești un idiot și toată lumea știe asta, așa că taci."),
    ("vi", "Mày là một thằng ngu và ai cũng biết điều đó, im đi."),
    # written in plain ASCII letters (or letters German and Spanish write too): no letter gives them
    # away, their words do. They were answered `en` (Finnish `de`)
    ("id", "Saya tidak suka dengan apa yang kamu katakan, kamu memang bodoh sekali."),
    ("id", "Kenapa kamu selalu marah sama semua orang di sini?"),
    ("ms", "Aku tak faham kenapa kau selalu cakap benda bodoh macam ni."),
    ("sw", "Wewe ni mjinga kabisa na kila mtu anajua hilo, nyamaza."),
    ("sw", "Sijui kwa nini watu wanapenda kusema mambo kama hayo hapa."),
    ("hu", "Nem tudom, miért vagy ilyen buta, de mindenki tudja ezt."),
    ("hu", "Ez a film nagyon rossz, senkinek nem ajánlom."),
    ("fi", "Sinä olet tyhmä ja kaikki tietävät sen."),
]
ENGLISH_WITH_NAMES = ["Łukasz scored twice, what a game for Poland", "Zlatan Ibrahimović is a legend, fight me",
                      "Ahmet Davutoğlu met Erdoğan today, the news said", "I had smørrebrød in Copenhagen lol",
                      # English styled with small capitals and upside-down letters: no language of its own
                      "ʏᴏᴜ ᴀʀᴇ ᴀɴ ɪᴅɪᴏᴛ ᴀɴᴅ ᴇᴠᴇʀʏᴏɴᴇ ᴋɴᴏᴡꜱ ɪᴛ", "ʇoıpı uɐ ǝɹɐ noʎ"]


@pytest.mark.parametrize("lang, text", UNNAMED)
def test_a_language_modlens_cannot_name_is_undetermined(lang, text):
    assert languages.detect(text) == ["und"], lang


@pytest.mark.parametrize("text", ENGLISH_WITH_NAMES)
def test_english_with_foreign_names_stays_english(text):
    assert languages.detect(text) == ["en"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("unnamed-languages") / "study.sqlite"
    srv = ThreadedServer(create_app(study(), db, TOKEN, detectors={"wordlist": WordListDetector()}))
    yield srv.base
    srv.stop()


def test_an_undetermined_latin_comment_is_refused_not_scored_as_english(base):
    status, got = _analyze(base, {"comment": {"text": UNNAMED[0][1]}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400, got
    assert got["error"]["message"] == "Attribute TOXICITY does not support request languages: und"
    detail = got["error"]["details"][0]
    assert detail["languageNotSupportedByAttributeError"] == {"detectedLanguages": ["und"], "attribute": "TOXICITY"}
    assert "cannot name" in got["error"]["details"][1]["message"]
    status, got = _analyze(base, {"comment": {"text": UNNAMED[0][1]}, "languages": ["pl"],
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"].endswith("languages: pl")


@pytest.mark.parametrize("lang, text", [(lang, text) for lang, text in UNNAMED if lang in ("id", "sw", "hu", "fi")])
def test_the_response_does_not_say_english_for_a_plain_ascii_language(base, lang, text):
    """`detectedLanguages` is what was detected: an Indonesian, Swahili, Hungarian or Finnish comment
    is not reported as English (nor German) and scored by English-only detectors."""
    status, got = _analyze(base, {"comment": {"text": text}, "dropUnsupportedAttributes": True,
                                  "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["detectedLanguages"] == ["und"] and got["attributeScores"] == {}, lang


# words English or a named language writes are no evidence of a language modlens cannot name:
# Dutch "van dan kun", Portuguese "sem dia", English "mint pale" once made these `und`. Nor are names and
# abbreviations an English comment capitalises inside a sentence that are also such words (Sen., WA, AZ,
# Sana, Jo, Meg): three of them made the last four `und` and refused, not scored. A name after a title's
# period ("Sen. Sana") is inside the sentence: taken for a sentence start, the last was `und`. Nor are
# such names opening English sentences, where no lowercase word of those languages (nor a word with an
# unusual letter) stands beside them in the sentence: counted at every sentence start, the last five were `und`
WORDS_OTHERS_WRITE = ["Ik ben van hem, dan kun je gaan", "Nem sei, sem dia bom", "Jo, Meg and Dan, van pale mint",
                      "Sen. Murray (WA) and Sen. Kelly (AZ)", "Sana, Jo and Meg went home",
                      "Sen. Cantwell, WA; Sen. Kelly, AZ", "Dr. Jo March, Mrs. Meg Brooke, Sen. Sana Kelly",
                      "Yang Gang! Nina Turner! Jo Jorgensen! Vote third party", "Yang won. Nina lost. Mimi cried.",
                      "Meg Ryan. Nina Simone. Sana Khan. Total legends",
                      "Ole Miss wins. Nina Simone plays. Meg Ryan smiles.", "Nina lied. Sana knew. Meg too."]


@pytest.mark.parametrize("text", WORDS_OTHERS_WRITE)
def test_words_english_or_a_named_language_writes_are_not_evidence_of_und(text):
    assert languages.detect(text) == ["en"]


# common Indonesian, Swahili, Hungarian and Finnish words that some English dictionary also lists
# (yang, akan, kami, mimi, wa, kama, sana, az, volt, meg, vain, sen) are still their evidence: subtracting
# every word of the normalizer's 45,478-word English lexicon made these `en`
SHARED_WITH_AN_ENGLISH_LEXICON = [("id", "Dia akan pergi dan kami yang bayar"), ("id", "yang dan akan dia kami"),
                                  ("sw", "mimi ni mwalimu wa kama sana"), ("hu", "az volt meg van"),
                                  ("fi", "ole hyvä se on vain sen")]


# ... and so they are where a sentence starts with one, or the whole comment is in capitals: a shared
# word counted only where written in lowercase made all of these but the Swahili one in sentence case
# (and the Turkish one, whose third unusual word is its opening "Sen") `en`, scored as English, not refused
SHARED_CAPITALISED = ([(lang, text[0].upper() + text[1:]) for lang, text in SHARED_WITH_AN_ENGLISH_LEXICON
                       if text[0].islower()]
                      + [(lang, text.upper()) for lang, text in SHARED_WITH_AN_ENGLISH_LEXICON]
                      + [("id", "Dia pergi. Yang bayar dan akan kami"),
                         ("tr", "Sen tam bir aptalsın, kimse seni sevmiyor, artık sus")])


@pytest.mark.parametrize("lang, text", SHARED_WITH_AN_ENGLISH_LEXICON + SHARED_CAPITALISED)
def test_unnamed_words_an_english_lexicon_also_lists_are_evidence_of_und(lang, text):
    assert languages.detect(text) == ["und"], lang


# English disguised as NoisyHate's human writers disguise it: accents, Cyrillic look-alikes, both
# (written for this test). Its letters are no language's: the words they spell are English. Every
# one was `und`, and the drop-in refused the very comment it exists to audit
DISGUISED_ENGLISH = ["Ŷou ǎre ţhe ẁorșt ṗerșon I hǎve ever ṃet, ģo ǎwǎy",
                     "I wįll fįnd ẏou ǎnd ẏour fǎmįlẏ ǒne dǎẏ",
                     "Yоu аrе ţhе ẃоrśt, gо kіll yоurśеlf nоẃ",
                     "ţhiș iș ŵhy ňobody likeș ŷou, ŷou ǎre ǎ jǒke"]
# words of the languages modlens cannot name that fold to an English function word (Czech `mě`, `ať`,
# Polish `się` is no such word but `do` is plain, Romanian `în`, Vietnamese `đó`, `ăn`, `mẹ`, Turkish
# `şu`): still no English. Russian in its own letters is read by its script, not folded
FOLD_TO_ENGLISH_WORDS = [("cs", "Já vím, že mě nenávidíš, ať si myslíš cokoliv."),
                         ("pl", "Już wiem, że mnie nienawidzisz, więc się do mnie nie odzywaj."),
                         ("ro", "Ești în casă cu mama ta și nu știi nimic."),
                         ("vi", "Tôi đi ăn, mẹ ở nhà, đó là tất cả."),
                         ("tr", "Şu adam da bu işi bilir, ne yapalım, böyle işte."),
                         ("ru", "Я не знаю, что ты от меня хочешь, иди домой.")]


@pytest.mark.parametrize("text", DISGUISED_ENGLISH)
def test_english_disguised_with_accents_and_look_alikes_is_english(text):
    assert languages.detect(text) == ["en"]


@pytest.mark.parametrize("lang, text", FOLD_TO_ENGLISH_WORDS)
def test_a_real_language_whose_words_fold_to_english_keeps_its_detection(lang, text):
    assert languages.detect(text) == (["ru"] if lang == "ru" else ["und"]), lang


def test_disguised_english_is_scored_and_said_to_be_english(base):
    status, got = _analyze(base, {"comment": {"text": DISGUISED_ENGLISH[0]}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200, got
    assert got["detectedLanguages"] == ["en"] and "TOXICITY" in got["attributeScores"]
