"""The language of a comment, for `detectedLanguages` when a request names no `languages`.

Perspective detected the language with its own model and refused a comment whose language the
attribute did not support. modlens has no such model, and its default detectors are trusted for
English only, so a wrong guess costs a score: a bot silently loses the comment. The guess is
therefore biased towards English on purpose, as clients that send no `languages` expect:

- a script other than Latin (Cyrillic, Arabic, CJK, ...) that makes up at least half the letters
  names its language;
- for Latin script, another language wins only on strong evidence: at least `MIN_EVIDENCE` words
  that are its own (common function words of that language that are not also English or English
  slang, or words written with its letters, such as `ñ` or `ß`), and at least `EVIDENCE_RATIO`
  times as many as the English function words in the text. One `que`, `die` or `dat` is not
  evidence: "Y'all bitches FAKE", "I eat dat chicken" and "die in a fire" stay English.

Latin-script text written in a language not named here (Polish, Czech, Turkish, Swedish, Romanian,
Vietnamese, ...) is not English either: at least `MIN_EVIDENCE` words written with a Latin letter
that neither the named languages nor English loanwords use (ł, ř, ş, å, ă, đ, ...), and at least
`EVIDENCE_RATIO` times the English function words, make it `und`, not a named language whose
letters some of its words share ("härifrån" is not German). A name or two ("Łukasz", "Erdoğan")
in English stays English, and so does English disguised with such letters ("ŷou ǎre ǎ jǒke"):
folded by the normalizer's unicode step, its words are English by the same rule (`_disguised_english`). Languages written in plain ASCII letters (or in letters German writes
too) give no such letter away: their common function words (`UNNAMED_WORDS`: Indonesian and Malay,
Swahili, Hungarian, Finnish) are that evidence, the same `MIN_EVIDENCE` and `EVIDENCE_RATIO`
apply; one an English dictionary also lists does not count where the text capitalises it inside a
sentence and never writes it in lowercase ("Sen. Murray (WA) and Sen. Kelly (AZ)" is English), but
counts at a sentence start and in a text with no lowercase letter ("Az volt meg van", "AZ VOLT MEG
VAN" are not). A Latin-script language with neither its letters nor its words listed
here (Tagalog, Somali, ...) is still answered English: the guess is English unless the text says otherwise.

A comment with no letters (emoji, digits, punctuation), or whose letters are all of a script named
neither here nor Latin, has no language to detect: it is `und` (BCP 47's "undetermined"), the
language Perspective reported for such comments when it refused them ("Attribute INSULT does not
support request languages: und"), never English by default. Styled letters (mathematical bold,
full width) are read as the Latin letters they are (NFKC).

Measured on all 24,783 Davidson tweets (`tests/test_perspective_languages.py`). Not a language
identifier to cite; a request that names its `languages` is trusted as it is.
"""
from __future__ import annotations

import re
import unicodedata
from functools import cache

from modlens.normalize.lexicon import load_lexicon
from modlens.normalize.steps.unicode_fold import UnicodeFold

ENGLISH = "en"
UNDETERMINED = "und"  # BCP 47: no language could be determined
# a script's letters -> the language Perspective would most likely have reported
SCRIPTS = (("HIRAGANA", "ja"), ("KATAKANA", "ja"), ("HANGUL", "ko"), ("CJK", "zh"), ("CYRILLIC", "ru"),
           ("ARABIC", "ar"), ("HEBREW", "he"), ("GREEK", "el"), ("DEVANAGARI", "hi"), ("THAI", "th"))

# English function words and their informal spellings (tweets, AAVE): what makes a text English
ENGLISH_WORDS = frozenset("""
a about after again all also am an and any are as at be because been before being but by can could
did do does doing don't down for from get got had has have he her here him his how i i'm if in into
is it it's its just like me more my no not now of off on one only or our out over she so some than
that the their them then there these they this those to too up us very was we were what when where
which who why will with would you your you're yours y'all ain't im u ur ya yo yall dat da dis dem dey
den dose der wit wid gon gonna finna tryna wanna gotta lol lmao rt nah naw bout cuz cause
that's what's there's let's he's she's they're we're who's i'll i've i'd you'll you've can't won't didn't
doesn't isn't wasn't aren't couldn't wouldn't shouldn't imma ima lemme gimme
""".split())
# words of each language that English does not also write: the evidence for it. Left out on
# purpose: die, hoe, ho, ha, son, con, van, wat, ben, plus, ma, em, um (English words or slang)
OWN_WORDS = {
    "es": """el la los las del que y es por para una uno unos pero muy como más mas porque cuando
             eres está esta estoy tengo tiene hay nada todo todos yo tú tu usted ella ellos nosotros
             su sus mi mis se lo le les al sobre también tambien sí aquí aqui ese eso esa este esto
             te tus qué cómo dónde quién nadie nunca siempre algo""",
    "fr": """le la les et est des une un du que qui pas vous je tu nous ils elle elles sont avec pour
             dans sur mais ou très tres c'est j'ai n'est qu'il ce cette ces mes tes ses leur
             suis es être etre avoir ai fait aussi ne bien""",
    "de": """der das und ist nicht ein eine einen du ich sie wir ihr mit zu bist sind auch auf für
             fur von dem den des sich aber oder wenn noch schon nur mir mich dich dir sein haben
             wird werden kein keine ganz""",
    "it": """il lo gli che di non sono una uno per della delle degli sei questo questa quello anche
             come più piu perché perche io tu lui lei noi voi loro mio mia suo sua hai
             siamo molto tutto""",
    "pt": """o os que não nao uma com para você voce são sao mas muito isso isto eu ele ela nós
             nos eles elas meu minha seu sua dos das por tem está esta também tambem""",
    "nl": """de het een en niet dat jij je met zijn ik wij zij hij ze maar ook als bij naar om uit
             wel nog geen deze dit kan heb hebt heeft bent wordt worden zich waar
             moet kunnen kunt mij""",
}
OWN_WORDS_SETS = {lang: frozenset(words.split()) - ENGLISH_WORDS for lang, words in OWN_WORDS.items()}
# words the named languages write that their lists leave out (English writes them too, or they
# are too rare to count for the language): no evidence of a language modlens cannot name either.
# Not "ole": Finnish "be" (ole hyvä, en ole); a Spanish "¡ole!" is one word, no `und` alone
NAMED_ALSO = frozenset("van ben die hoe wat dan kun sem dia ti ni ami".split())
# everyday English words the lists below share (Hungarian "mint", Swahili "pale"): "Jo, Meg and Dan,
# van pale mint" was `und`. Not every word some English dictionary lists: that took yang, akan, kami,
# wa, kama, sana, az, volt, meg, vain, sen away, and those languages were answered `en` again.
# Those the normalizer's English lexicon lists are English names and abbreviations too (Sen., WA, AZ,
# Sana, Jo, Meg): three made "Sen. Murray (WA) and Sen. Kelly (AZ)" `und`, the 3-word/2x rule does
# not hold them. Such a word is no evidence where the text capitalises it inside a sentence and never
# writes it in lowercase; at a sentence start or in an all-capitals text it is (`_capitalised_only`)
ENGLISH_ALSO = frozenset("pale mint".split())
# common words of Latin-script languages modlens does not name, written without a letter that gives
# them away (`_unplaced`): evidence for `und`. Those English writes (its function words,
# `ENGLISH_ALSO`) or a named language writes (its list, `NAMED_ALSO`) are left out: evidence for neither
UNNAMED_WORDS = frozenset("""
yang dan tidak tak ini itu saya aku kamu kau anda dia mereka kami kita dengan untuk akan sudah
belum bisa boleh karena kerana juga lagi sangat semua orang apa siapa mengapa kenapa bagaimana
jangan sama dari pada atau tapi tetapi hanya saja kalau jadi banyak sekali memang begitu sini
ni wa kwa za katika hii huyo huu wewe mimi yeye sisi nyinyi wao sana kila mtu watu hapana ndiyo
lakini kama hata sijui hujui nini gani wote kabisa bado kweli hapa pale kuwa kwamba hakuna nina
wako wangu yako yangu
nem hogy egy az és ez meg csak már vagy mert mint van volt nincs ezt azt itt ott én ti ők nagyon
mindenki semmi miért hol mikor aki ami amit lesz kell lehet sem még akkor pedig neked nekem
vagyok tudom tudja így úgy olyan ilyen soha mindig
olet ei se sen että mutta kun minä sinä hän tämä tuo kaikki mitä miksi ole oli ovat niin vain
jo vielä ihan todella aina koska
""".split()) - ENGLISH_WORDS - ENGLISH_ALSO - NAMED_ALSO.union(*OWN_WORDS_SETS.values())
# letters that only some Latin-script languages write: a word with one is evidence for them
OWN_LETTERS = {"es": "ñáíóú", "de": "ßäöü", "fr": "çœèêëîïûù", "it": "ìò", "pt": "ãõâôáíóúç", "nl": "ĳ"}
# Latin letters placed: those of the languages named here and of English loanwords (café, à la,
# naïve). A word with any other (ł, ř, ş, å, ă, đ, ...) is written in a language modlens cannot name
PLACED_LETTERS = frozenset("".join(OWN_LETTERS.values()) + "éàâèêëîïôûùüçñœæ")
OTHER_LETTERS = frozenset("łđøı")  # letters of such languages that are no accented ASCII letter
OPENING_MARKS = "¿¡"  # Spanish opens questions and exclamations: one piece of evidence
MIN_EVIDENCE = 3      # words of the other language, at least
EVIDENCE_RATIO = 2.0  # ... and this many times the English function words
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# where a sentence starts after another: . ! ? (closing quotes, brackets), a space, opening quotes, brackets
SENTENCE_START = re.compile(r"[.!?…][\"'”’)\]]*\s+[\"'“‘(\[¿¡]*")
# ... but not after a title's period: "Mrs. Meg Brooke, Sen. Sana Kelly" is one sentence of names
TITLE_BEFORE = re.compile(r"(?<![^\W\d_])(?:Mr|Mrs|Ms|Dr|Prof|Sen|Rep|Gov|Pres|Gen|Col|Capt|Lt|Sgt|St|Rev|Hon|Jr|Sr)$")


def _script_language(text: str) -> str | None:
    counts: dict[str, int] = {}
    latin = 0
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("LATIN"):
            latin += 1
            continue
        for script, lang in SCRIPTS:
            if script in name:
                counts[lang] = counts.get(lang, 0) + 1
                break
    if not counts:
        return None if latin else UNDETERMINED  # no letter of a script it can name
    lang, n = max(counts.items(), key=lambda kv: kv[1])
    if "ja" in counts and lang == "zh":
        lang = "ja"  # Japanese mixes kanji with kana; Chinese has no kana
    return lang if n >= latin else None


def _unplaced(word: str) -> bool:
    """Is `word` written with a letter of a language modlens cannot name: an accented ASCII letter
    (ř, ş, å, ă, ő, ộ) or a stroked or dotless one (ł, đ, ø, ı) that is not `PLACED_LETTERS`? Small
    capitals, IPA and upside-down letters (ʏᴏᴜ, ɐ, ʇ), a styling of English, are no language."""
    return any(c not in PLACED_LETTERS and (c in OTHER_LETTERS or _accented_ascii(c)) for c in word)


def _accented_ascii(ch: str) -> bool:
    decomposed = unicodedata.normalize("NFD", ch)
    return len(decomposed) > 1 and decomposed[0].isascii() and decomposed[0].isalpha()


@cache
def _shared_with_english() -> frozenset[str]:
    """The words of `UNNAMED_WORDS` the normalizer's English lexicon also lists (yang, wa, az, sen,
    jo, meg, ...), read on the first detection, not at import: `load_lexicon` caches the lexicon,
    so the normalizer and this share one."""
    lexicon = load_lexicon()
    return frozenset(w for w in UNNAMED_WORDS if w in lexicon)


def _capitalised_only(text: str, words: set[str]) -> frozenset[str]:
    """Those of `words` shared with English that `text` capitalises and never writes in lowercase:
    "Sen.", "WA", "Jo" inside a sentence are an English comment's names and abbreviations, "sen",
    "wa", "jo" Finnish, Swahili and Finnish words. Where a sentence starts (the text's first word, or
    after `.`, `!` or `?` and a space, not after a title's period such as "Sen.") a capital is also a
    name ("Nina lied. Sana knew. Meg too.") unless the same sentence writes a word of `UNNAMED_WORDS`
    in lowercase or a word with an unusual letter (`_unplaced`): "Yang dan akan dia kami", "Dia
    pergi. Yang bayar dan akan kami", Turkish "Sen tam bir aptalsın" keep their evidence. A text with
    no lowercase letter says nothing by its capitals: "AZ VOLT MEG VAN" keeps its evidence too."""
    shared = words & _shared_with_english()
    if not shared or not any(c.islower() for c in text):
        return frozenset()
    starts = {match.end() for match in SENTENCE_START.finditer(text)
              if text[match.start()] != "." or not TITLE_BEFORE.search(text[max(0, match.start() - 5):match.start()])}
    lowercase, names, opening = set(), set(), []
    sentence, foreign = 0, set()  # sentences with a lowercase unnamed word or an unusual letter
    for i, match in enumerate(WORD.finditer(text)):
        word = match.group().replace("’", "'")
        starts_sentence = i == 0 or match.start() in starts  # the first word starts the first sentence
        sentence += i > 0 and starts_sentence
        if (word == word.lower() and word in UNNAMED_WORDS) or _unplaced(word):
            foreign.add(sentence)
        if word == word.lower():
            lowercase.add(word)
        elif starts_sentence:
            opening.append((sentence, word.lower()))
        else:
            names.add(word.lower())
    names.update(word for n, word in opening if n not in foreign)
    counted = lowercase | {word for n, word in opening if n in foreign}
    return frozenset((shared & names) - counted)


def _evidence(words: set[str], capitalised: frozenset[str] = frozenset()) -> dict[str, int]:
    """language -> how many of the distinct `words` are its own ("ho ho ho" is one word); `und` ->
    how many are written with letters of a language it cannot name, or are common words of one
    (`UNNAMED_WORDS`, less those English also writes that the text only `capitalised`); such a word
    ("härifrån", "tyhmä") is evidence for none of the named ones, though it has their letters too."""
    unplaced = {w for w in words if _unplaced(w) or (w in UNNAMED_WORDS and w not in capitalised)}
    found: dict[str, int] = {}
    for lang, own in OWN_WORDS_SETS.items():
        letters = OWN_LETTERS.get(lang, "")
        found[lang] = sum(w in own or any(c in letters for c in w) for w in words - unplaced)
    found[UNDETERMINED] = len(unplaced)  # last: a tie goes to the language it can name
    return found


def detect(text: str) -> list[str]:
    """The language of `text` as Perspective's `detectedLanguages` lists it: English unless another
    script dominates or the evidence for another language is strong, `und` when it has no letter of
    a script it can name or strong evidence of a language it cannot name (see the module's docstring)."""
    text = unicodedata.normalize("NFKC", text)
    other = _script_language(text)
    if other is not None:
        return [other]
    words = {w.replace("’", "'") for w in WORD.findall(text.lower())}
    english = len(words & ENGLISH_WORDS)
    evidence = _evidence(words, _capitalised_only(text, words))
    evidence["es"] += any(mark in text for mark in OPENING_MARKS)
    lang, n = max(evidence.items(), key=lambda kv: kv[1])
    strong = n >= MIN_EVIDENCE and n >= EVIDENCE_RATIO * english
    if strong and lang == UNDETERMINED and _disguised_english(words):
        return [ENGLISH]
    return [lang if strong else ENGLISH]


def _disguised_english(words: set[str]) -> bool:
    """Are the unusual letters of `words` English in disguise ("ŷou ǎre ǎ jǒke", Cyrillic look-alikes
    mixed in), as NoisyHate's human writers disguise it? Folded by the normalizer's own unicode step
    (NFKC, its look-alike map, marks stripped), English must win by the rule another language must:
    at least `MIN_EVIDENCE` English function words, and `EVIDENCE_RATIO` times as many as the words
    the English lexicon does not list. Czech, Polish, Romanian or Vietnamese fold to words no English
    lexicon lists (jsem, wiem, stiu, khong); their few that fold to an English word (mě, în, đó) do
    not outweigh them. Only called when the unusual-letter rule would answer `und`: folding is the cost."""
    lexicon = load_lexicon()
    step = UnicodeFold()
    folded = {step.fold(w, lexicon).lower() for w in words}
    english = len(folded & ENGLISH_WORDS)
    foreign = sum(w not in lexicon for w in folded - ENGLISH_WORDS)
    return english >= MIN_EVIDENCE and english >= EVIDENCE_RATIO * foreign


def base(code: str) -> str:
    """`en-US` -> `en`: attributes are supported per language, not per region."""
    return code.replace("_", "-").split("-")[0].lower()
