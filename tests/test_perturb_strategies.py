"""Each perturbation strategy on its own: what it does to a word, that the recorded spans are
the only characters changed, and that a seed reproduces it."""
from __future__ import annotations

import json
import random
import re

import pytest

from modlens.config import PerturbationConfig
from modlens.perturb import registry
from modlens.perturb.strategies.char_attack import OPERATIONS
from modlens.perturb.strategies.homoglyph import HOMOGLYPHS
from modlens.perturb.strategies.key_substitute import NEIGHBOURS
from modlens.perturb.strategies.mixed_case_plus import english_words
from modlens.perturb.strategies.zero_width import ZERO_WIDTH

WORDS = ["stupid", "idiot", "democrats", "republicans", "garbage", "pathetic", "moron", "disgusting", "loser", "hypocrite"]
SEEDS = range(12)


def edits(key: str, word: str, **options):
    s = registry.create(key, **options)
    return [e for e in (s.perturb(word, random.Random(seed)) for seed in SEEDS) if e is not None]


def only_spans_changed(old: str, new: str, spans) -> bool:
    """`new` is `old` with each span replaced by something (insertions: start == end)."""
    pattern, cursor = "", 0
    for s, e in sorted(spans):
        pattern += re.escape(old[cursor:s]) + "(.*?)"
        cursor = e
    pattern += re.escape(old[cursor:])
    return re.fullmatch(pattern, new, re.S) is not None


def squeeze(w: str) -> str:
    return re.sub(r"(.)\1+", r"\1", w)


def test_default_study_keys_are_registered():
    for key in PerturbationConfig().strategies:
        assert key in registry.available()
        assert registry.describe(key)
    with pytest.raises(KeyError, match="known: repeat_char"):
        registry.create("no_such_strategy")


@pytest.mark.parametrize("key", [k for k in registry.available() if k != "human_lookup"])
def test_reproducible_by_seed_and_spans_are_exact(key):
    for word in WORDS:
        s = registry.create(key)
        for seed in SEEDS:
            a, b = s.perturb(word, random.Random(seed)), s.perturb(word, random.Random(seed))
            assert a == b
            if a is not None:
                assert a.text != word and a.spans
                assert only_spans_changed(word, a.text, a.spans), (key, word, a)
                json.dumps(a.params)  # parameters must be loggable as JSON
    # different seeds give different forms for long words (the RNG is actually used)
    assert len({e.text for e in edits(key, "disgusting")}) > 1


def test_repeat_char_stretches_letters():
    for word in WORDS:
        for e in edits("repeat_char", word):
            assert squeeze(e.text) == squeeze(word)
            assert re.search(r"(.)\1\1", e.text), e.text
            assert len(e.text) - len(word) == sum(n for _, n in e.params["repeats"])


def is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(c in it for c in short)


def test_abbr_drops_inner_letters():
    for word in WORDS:
        for e in edits("abbr", word):
            assert e.text[0] == word[0] and is_subsequence(e.text, word)
            assert 1 <= len(word) - len(e.text) <= 2
    assert registry.create("abbr").perturb("cat", random.Random(0)) is None


def test_special_char_uses_symbols():
    for word in WORDS:
        for e in edits("special_char", word):
            assert len(e.text) == len(word)
            changed = [(a, b) for a, b in zip(word, e.text) if a != b]
            assert 1 <= len(changed) <= 2
            assert all(not b.isalpha() for _, b in changed), e.text


def test_mixed_case_is_not_an_ordinary_casing():
    for word in WORDS:
        for e in edits("mixed_case", word):
            assert e.text.lower() == word
            assert e.text not in (word, word.upper(), word.capitalize())


def test_mixed_case_plus_spells_a_dictionary_word():
    from spellchecker import SpellChecker

    spell = SpellChecker()
    seen = set()
    for word in WORDS:
        for e in edits("mixed_case_plus", word):
            assert e.text.lower() == word
            caps = "".join(re.findall(r"[A-Z]+", e.text)).lower()
            assert caps == e.params["hidden"] and len(caps) >= 3 and len(caps) <= len(word) - 2
            assert spell.known([caps]) == {caps}
            seen.add(e.text)
    assert any(s.startswith("democRAT") for s in seen)  # the paper's example
    # no common English word hides inside "idiot": the strategy declines
    assert registry.create("mixed_case_plus").perturb("idiot", random.Random(0)) is None
    assert "rat" in english_words() and "crat" not in english_words()


def test_machine_character_edits():
    for word in WORDS:
        for e in edits("char_swap", word):
            i = e.params["index"]
            assert sorted(e.text) == sorted(word) and e.text[i] == word[i + 1] and e.text[i + 1] == word[i]
        for e in edits("char_delete", word):
            i = e.params["index"]
            assert e.text == word[:i] + word[i + 1:] and 0 < i < len(word) - 1
        for e in edits("char_insert", word):
            assert len(e.text) == len(word) + 1 and is_subsequence(word, e.text)
        for e in edits("key_substitute", word):
            i = e.params["index"]
            assert e.text[i] in NEIGHBOURS[word[i]] and e.text[:i] + word[i] + e.text[i + 1:] == word
        for e in edits("homoglyph", word):
            (i, c), = [(i, c) for i, c in enumerate(e.text) if c != word[i]]
            assert HOMOGLYPHS[word[i]] == c and not c.isascii()
        for e in edits("zero_width", word):
            assert "".join(c for c in e.text if c not in ZERO_WIDTH) == word and len(e.text) == len(word) + 1
        for e in edits("space_insert", word):
            assert e.text.replace(" ", "") == word and not e.text.startswith(" ") and not e.text.endswith(" ")
    assert set(NEIGHBOURS["s"]) == set("adwezx")


def test_char_attack_records_the_operation():
    ops = {e.params["op"] for w in WORDS for e in edits("char_attack", w)}
    assert ops <= set(OPERATIONS) and len(ops) >= 4
    only = registry.create("char_attack", operations=["char_swap"])
    assert {only.perturb(w, random.Random(1)).params["op"] for w in WORDS} == {"char_swap"}
    with pytest.raises(ValueError, match="unknown operations"):
        registry.create("char_attack", operations=["teleport"])


def test_human_lookup_uses_the_table(data_dir):
    path = data_dir / "noisyhate" / "perturbations.json"
    table = json.loads(path.read_text())
    s = registry.create("human_lookup", path=path)
    assert s.availability() is None
    word = next(w for w, forms in table.items() if len([f for f in forms if f.lower() != w]) >= 3)
    results = edits("human_lookup", word, path=path)
    assert results and all(e.text in table[word] and e.text.lower() != word for e in results)
    assert all(only_spans_changed(word, e.text, e.spans) for e in results)
    assert results[0].params["lexicon_sha"] and results[0].params["replacement"] == results[0].text
    assert s.perturb("zzzznotaword", random.Random(0)) is None


def test_human_lookup_env_and_missing_file(tmp_path, monkeypatch):
    table = tmp_path / "p.json"
    table.write_text(json.dumps({"idiot": ["idi0t", "IDIOT"]}))
    monkeypatch.setenv("MODLENS_PERTURBATIONS", str(table))
    s = registry.create("human_lookup")
    assert s.perturb("idiot", random.Random(0)).text == "idi0t"  # case-only copies are not perturbations

    missing = registry.create("human_lookup", path=tmp_path / "nope.json")
    assert "cannot read" in missing.availability() and "MODLENS_PERTURBATIONS" in missing.availability()
    assert missing.perturb("idiot", random.Random(0)) is None
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert "must map each word" in registry.create("human_lookup", path=bad).availability()
