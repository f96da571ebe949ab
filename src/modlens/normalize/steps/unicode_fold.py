"""Unicode folding: compatibility forms (full-width, ligatures, styled letters), invisible
characters (zero-width, soft hyphen), combining marks, and Cyrillic/Greek look-alikes.

Look-alikes are mapped only inside tokens that already contain Latin letters (a Russian or
Greek word stays itself) or when the mapped token is a known English word."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Step

INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u034f"))

# Cyrillic and Greek letters that render like Latin ones (lower and upper case).
CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ɡ": "g", "һ": "h",
    "ԛ": "q", "ԝ": "w", "ո": "n", "ս": "u",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S",
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w", "γ": "y", "η": "n",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin letters from other alphabets that people use as look-alikes
    "þ": "p", "Þ": "P", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ł": "l", "Ł": "L", "ı": "i",
    "¡": "i", "ɑ": "a", "ɩ": "i", "ʀ": "r", "ᴀ": "a",
})


_SPACE = re.compile(r"\s")


@lru_cache(maxsize=4096)
def _spaces(char: str) -> bool:
    """Whether NFKC spells `char` with whitespace: a spacing accent ("´" is a space and a combining
    acute, often typed for an apostrophe: "don´t") or a ligature of a whole phrase."""
    return _SPACE.search(unicodedata.normalize("NFKC", char)) is not None


def nfkc(token: str) -> str:
    """NFKC of the token, but a character NFKC would spell with whitespace stays as written: a step
    inside one token never makes whitespace (the token count is the text steps' to change)."""
    text = unicodedata.normalize("NFKC", token)
    if _SPACE.search(text) is None:
        return text
    kept = "".join(c for c in set(token) if _spaces(c))
    if not kept:
        return text
    pieces = re.split(f"([{re.escape(kept)}])", token)
    return "".join(p if i % 2 else unicodedata.normalize("NFKC", p) for i, p in enumerate(pieces))


def strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def has_latin(text: str) -> bool:
    return any("a" <= c <= "z" or "A" <= c <= "Z" for c in text)


class UnicodeFold(Step):
    name = "unicode"
    kind = "char"

    def model(self) -> str:
        return f"unicodedata {unicodedata.unidata_version}"  # NFKC's and the marks' tables

    def fold(self, token: str, lexicon: Lexicon) -> str:
        if token.isascii():
            return token
        text = nfkc(token.translate(INVISIBLE))
        mapped = strip_marks(text.translate(CONFUSABLES))
        if has_latin(text) or mapped.lower().strip(".,!?;:\"'()") in lexicon:
            return mapped
        return text
