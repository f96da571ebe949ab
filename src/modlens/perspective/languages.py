"""A small language guess for `detectedLanguages` when a request names no `languages`.

Perspective detected the language with its own model; modlens has none, so this guesses from
the script (Cyrillic, Arabic, CJK, ...) and, for Latin script, from common function words of a few
languages, English when none stands out. Good enough to refuse a Japanese comment for an
English-only detector; not a language identifier to cite.
"""
from __future__ import annotations

import re
import unicodedata

# a script's letters -> the language Perspective would most likely have reported
SCRIPTS = (("HIRAGANA", "ja"), ("KATAKANA", "ja"), ("HANGUL", "ko"), ("CJK", "zh"), ("CYRILLIC", "ru"),
           ("ARABIC", "ar"), ("HEBREW", "he"), ("GREEK", "el"), ("DEVANAGARI", "hi"), ("THAI", "th"))
FUNCTION_WORDS = {
    "en": {"the", "and", "is", "are", "you", "of", "to", "this", "that", "it", "not", "with", "for", "what"},
    "es": {"el", "la", "los", "las", "que", "y", "es", "de", "en", "por", "una", "pero", "muy", "eres"},
    "fr": {"le", "la", "les", "et", "est", "des", "une", "que", "pas", "vous", "je", "tu", "sont", "avec"},
    "de": {"der", "die", "das", "und", "ist", "nicht", "ein", "eine", "du", "ich", "sie", "mit", "zu", "bist"},
    "it": {"il", "che", "di", "non", "sono", "una", "per", "con", "gli", "sei", "questo", "anche"},
    "pt": {"o", "os", "que", "não", "uma", "com", "para", "você", "são", "mas", "muito", "isso"},
    "nl": {"de", "het", "een", "en", "is", "niet", "van", "dat", "jij", "je", "met", "zijn"},
}
WORD = re.compile(r"[^\W\d_]+")


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
        return None
    lang, n = max(counts.items(), key=lambda kv: kv[1])
    if "ja" in counts and lang == "zh":
        lang = "ja"  # Japanese mixes kanji with kana; Chinese has no kana
    return lang if n >= latin else None


def detect(text: str) -> list[str]:
    """The guessed language(s) of `text`, as Perspective's `detectedLanguages` lists them."""
    other = _script_language(text)
    if other is not None:
        return [other]
    words = [w.lower() for w in WORD.findall(text)]
    hits = {lang: sum(w in vocab for w in words) for lang, vocab in FUNCTION_WORDS.items()}
    best = max(hits.items(), key=lambda kv: (kv[1], kv[0] == "en"))
    return [best[0] if best[1] > hits["en"] else "en"]


def base(code: str) -> str:
    """`en-US` -> `en`: attributes are supported per language, not per region."""
    return code.replace("_", "-").split("-")[0].lower()
