"""docs/NORMALIZE.md: every step but spaced_letters and word_split keeps the token count and all
whitespace as it was, and the edits account for every change of the text. The unicode step's NFKC
turned a spacing accent into a space plus a combining mark, and the mark was then stripped: a typed
acute accent used as an apostrophe ("don´t") became "don t", one token two, the contraction read as
two words and every later token's position shifted (NoisyHate's rule reads the token at the
perturbed word's position)."""
from __future__ import annotations

import pytest

from modlens.normalize.pipeline import build_normalizer


def applied(text, edits):
    """The text with each recorded edit applied (spans in the original)."""
    out, last = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        assert text[e.start:e.end] == e.original
        out += [text[last:e.start], e.normalized]
        last = e.end
    return "".join(out) + text[last:]


@pytest.fixture(scope="module")
def normalizer():
    return build_normalizer()


# spacing accents (acute, diaeresis, macron, cedilla, Greek tonos, overline, dashed overline, fullwidth
# macron) and Arabic ligatures of whole phrases: NFKC gives each a space
@pytest.mark.parametrize("mark", ["\u00b4", "\u00a8", "\u00af", "\u00b8", "\u0384", "\u203e", "\ufe49", "\uffe3",
                                  "\ufdfa"])
def test_the_unicode_step_never_makes_whitespace(normalizer, mark):
    for text in [f"don{mark}t be an idi0t", f"you {mark}idiot", f"st*pid{mark}s are here"]:
        r = normalizer.normalize(text)
        assert len(r.text.split()) == len(text.split()), (text, r.text)
        assert applied(text, r.edits) == r.text


def test_a_typed_acute_accent_apostrophe_keeps_the_word_whole(normalizer):
    r = normalizer.normalize("don\u00b4t be an idi0t, it\u00b4s st*pid")
    assert r.text == "don\u00b4t be an idiot, it\u00b4s stupid"
    assert [(e.original, e.normalized) for e in r.edits] == [("idi0t,", "idiot,"), ("st*pid", "stupid")]
    # a look-alike in the same token is still folded; the accent stays as typed
    assert normalizer.normalize("іdіоt\u00b4s").text == "idiot\u00b4s"
