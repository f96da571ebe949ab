"""A variant records what it was made from, so it can be made again (docs/PERTURB.md): mixed_case_plus
draws the hidden word from pyspellchecker's English list (a table beside its code, unpinned: another
release lists other words), yet its variants recorded only the hidden word and span, and
`Strategy.data()` said it read no table: a variant made again under another list was another text
with nothing in its record (nor in an attack's transformation_data) to say the list had changed."""
from __future__ import annotations

import hashlib

import pytest

from modlens.perturb import registry
from modlens.perturb.generate import VariantGenerator, reproduce
from modlens.perturb.strategies import mixed_case_plus as mcp

TEXT = "the democrats and the republicans"


def digest(words):
    return hashlib.sha256("\n".join(sorted(words)).encode()).hexdigest()[:12]


@pytest.fixture
def variant():
    gen = VariantGenerator(["mixed_case_plus"], budget=1, seed=3, importance_threshold=0.1)
    [v] = gen.generate(TEXT)
    return v


def test_a_mixed_case_plus_variant_names_its_word_list_by_content(variant):
    words = mcp.english_words(1000, 3)
    edit = variant.params["edit"]
    assert edit["words_sha"] == digest(words)
    assert registry.create("mixed_case_plus").data() == {"words": edit["words"], "words_sha": digest(words)}
    # its own options (a floor, a length) are another list, under another digest
    assert registry.create("mixed_case_plus", min_frequency=5000).data()["words_sha"] == \
        digest(mcp.english_words(5000, 3))


def test_made_again_under_another_word_list_the_record_says_so(variant, monkeypatch):
    assert reproduce(variant).text == variant.text  # same list: the same text and record
    assert reproduce(variant).params == variant.params
    real = mcp.english_words(1000, 3)
    other = frozenset(real - {variant.params["edit"]["hidden"]})  # another release, without that word

    def english_words(min_frequency=1000, min_length=3):
        return other

    monkeypatch.setattr(mcp, "english_words", english_words)
    mcp.words_sha.cache_clear()
    try:
        again = reproduce(variant)
        assert again is None or again.text != variant.text
        assert registry.create("mixed_case_plus").data()["words_sha"] == digest(other) != variant.params["edit"]["words_sha"]
        if again is not None:
            assert again.params["edit"]["words_sha"] == digest(other)
    finally:
        mcp.words_sha.cache_clear()
