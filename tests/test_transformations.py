"""Word-level attack transformations on their own, with known answers: WordNet 3.0 synonyms
(Debian wordnet-base), neighbours in the embedded MiniLM's word-embedding space, word
deletion, filler insertion and the composite "character or word" transformation."""
from __future__ import annotations

import random

import pytest

from modlens.names import UnknownName
from modlens.perturb import transformations, wordvectors
from modlens.perturb.generate import word_slots
from modlens.perturb.parts import apply_changes
from modlens.perturb.transformations.filler_insert import FILLERS
from realtools import requires

TEXT = "You are a Stupid idiot, and I hate you!"
SLOTS = word_slots(TEXT)
STUPID, IDIOT, HATE = 3, 4, 7

needs_wordnet = requires("wordnet")


def changes(key: str, index: int, k: int = 50, seed: int = 0, **options):
    t = transformations.create(key, **options)
    assert t.availability() is None
    return t.changes(TEXT, SLOTS, index, random.Random(seed), k)


@needs_wordnet
def test_wordnet_synonyms_of_known_words():
    # WordNet 3.0: idiot.n.01 = idiot, imbecile, cretin, moron, changeling, half-wit, retard
    idiot = [c.new for c in changes("wordnet_synonym", IDIOT)]
    assert idiot == ["imbecile", "cretin", "moron", "changeling", "half-wit", "retard"]
    # hate.v.01 = hate, detest; hate.n.01 = hate, hatred; the verb is the commoner sense (cntlist)
    hate = changes("wordnet_synonym", HATE)
    assert [c.new for c in hate] == ["detest", "hatred"]
    assert hate[0].params == {"synonym": "detest", "synset": "hate.v.01", "pos": "v"}
    assert all(c.transformation == "wordnet_synonym" and c.word == "hate" and not c.insert_after for c in hate)


@needs_wordnet
def test_wordnet_keeps_case_skips_multiword_lemmas_and_the_word_itself():
    stupid = changes("wordnet_synonym", STUPID)
    news = [c.new for c in stupid]
    assert {"Dolt", "Dullard", "Unintelligent", "Dazed"} <= set(news)  # Title case kept
    assert all("_" not in n and " " not in n and n.lower() != "stupid" for n in news)  # no "stupid_person"
    assert len(news) == len(set(news))
    assert apply_changes(TEXT, stupid[:1]).text.startswith("You are a ")


@needs_wordnet
def test_wordnet_pos_filter_and_inflected_words():
    adj = changes("wordnet_synonym", STUPID, pos="a")
    assert {c.params["pos"] for c in adj} == {"a"} and "Unintelligent" in [c.new for c in adj]
    assert not {"Dolt", "Dullard"} & {c.new for c in adj}  # the noun senses are gone
    verbs = changes("wordnet_synonym", HATE, pos=["v"])
    assert [c.new for c in verbs] == ["detest"]
    text = "those idiots"  # morphy finds the base form; the base form itself is no synonym
    found = transformations.create("wordnet_synonym").changes(text, word_slots(text), 1, random.Random(0), 3)
    assert [c.new for c in found] == ["imbecile", "cretin", "moron"]
    with pytest.raises(ValueError):
        transformations.create("wordnet_synonym", pos="x")


def test_wordnet_missing_is_unavailable_with_the_fix(tmp_path, monkeypatch):
    t = transformations.create("wordnet_synonym", path=str(tmp_path / "nowhere"))
    assert "apt-get install wordnet-base" in t.availability()
    monkeypatch.setenv("MODLENS_WORDNET", str(tmp_path))
    assert "missing index.noun" in transformations.create("wordnet_synonym").availability()


def test_embedding_neighbours_measured():
    # measured on the embedded MiniLM's input embeddings: stupid -> dumb 0.65, idiot 0.57, silly 0.55
    stupid = changes("embedding_neighbour", STUPID, k=3)
    assert [c.new for c in stupid] == ["Dumb", "Idiot", "Silly"]
    sims = [c.params["similarity"] for c in stupid]
    assert sims == sorted(sims, reverse=True) and 0.6 < sims[0] < 0.7
    assert stupid[0].params["vectors"].startswith("minilm-input-embeddings")
    # inflections (same Porter stem) are skipped: hate's raw top-3 are hated, hates, hating
    hate = [c.new for c in changes("embedding_neighbour", HATE, k=2)]
    assert hate == ["hatred", "dislike"]
    raw = [c.new for c in changes("embedding_neighbour", HATE, k=3, skip_inflections=False)]
    assert raw == ["hated", "hates", "hating"]
    # the similarity floor is respected; a word outside the whole-word vocabulary has no neighbours
    assert all(c.params["similarity"] >= 0.6 for c in changes("embedding_neighbour", STUPID, min_similarity=0.6))
    text = "what a moron"  # "moron" is split into word pieces by the tokenizer
    none = transformations.create("embedding_neighbour").changes(text, word_slots(text), 2, random.Random(0), 5)
    assert none == []


def test_word_vectors_are_loaded_once():
    assert wordvectors.load() is wordvectors.load()
    v = wordvectors.load()
    assert len(v.words) == v.matrix.shape[0] > 20000 and all("#" not in w for w in v.words[:500])


def test_word_delete():
    (c,) = changes("word_delete", STUPID)
    assert (c.new, c.word, c.params) == ("", "Stupid", {"deleted": "Stupid"})
    assert apply_changes(TEXT, [c]).text == "You are a idiot, and I hate you!"
    one = "idiot"
    assert transformations.create("word_delete").changes(one, word_slots(one), 0, random.Random(0), 1) == []


def test_filler_insert():
    fills = changes("filler_insert", 2, k=3)  # after "a"
    assert len(fills) == 3 and all(c.insert_after and c.word == "a" for c in fills)
    assert len({c.new for c in fills}) == 3
    assert apply_changes(TEXT, fills[:1]).text == f"You are a {fills[0].new} Stupid idiot, and I hate you!"
    assert [c.new for c in changes("filler_insert", 2, k=3)] == [c.new for c in fills]  # seeded
    assert {c.new for c in changes("filler_insert", 2, k=8, seed=1)} == set(FILLERS)
    text = "you are really stupid"  # never "really really"
    got = transformations.create("filler_insert").changes(text, word_slots(text), 1, random.Random(0), 8)
    assert "really" not in {c.new for c in got} and len(got) == 7
    custom = transformations.create("filler_insert", fillers=["um"]).changes(TEXT, SLOTS, 0, random.Random(0), 5)
    assert [c.new for c in custom] == ["um"]
    with pytest.raises(ValueError):
        transformations.create("filler_insert", fillers=["two words"])


@needs_wordnet
def test_composite_is_the_union_and_keeps_each_parts_key():
    comp = transformations.create("composite", transformations=["char:char_swap", "wordnet_synonym"])
    assert comp.kind == "word" and comp.availability() is None
    got = comp.changes(TEXT, SLOTS, IDIOT, random.Random(0), 2)
    keys = [c.transformation for c in got]
    assert keys.count("wordnet_synonym") == 2 and keys.count("char:char_swap") >= 1
    assert all(c.params["via"] == "composite(char:char_swap|wordnet_synonym)" for c in got)
    assert [c.new for c in got if c.transformation == "wordnet_synonym"] == ["imbecile", "cretin"]
    swaps = [c for c in got if c.transformation == "char:char_swap"]
    assert all(c.spans and sorted(c.new) == sorted("idiot") for c in swaps)
    again = comp.changes(TEXT, SLOTS, IDIOT, random.Random(0), 2)
    assert [c.new for c in again] == [c.new for c in got]
    # an unusable part is skipped; all unusable makes the composite unusable
    broken = transformations.create("composite", transformations=["char:char_swap", "wordnet_synonym"],
                                    options={"wordnet_synonym": {"path": "/nonexistent"}})
    assert broken.availability() is None
    assert {c.transformation for c in broken.changes(TEXT, SLOTS, IDIOT, random.Random(0), 2)} == {"char:char_swap"}
    dead = transformations.create("composite", transformations=["wordnet_synonym"],
                                  options={"wordnet_synonym": {"path": "/nonexistent"}})
    assert "wordnet-base" in dead.availability()
    assert transformations.create("composite", transformations=["char:char_swap"]).kind == "char"


def test_registry_unknown_names_suggest_close_matches():
    with pytest.raises(UnknownName) as err:
        transformations.create("wordnet_synonyms")
    assert "wordnet_synonym" in err.value.suggestions
    with pytest.raises(UnknownName):
        transformations.create("char:no_such_strategy")
    assert transformations.create("char:char_swap").key == "char:char_swap"
    assert {"wordnet_synonym", "embedding_neighbour", "word_delete", "filler_insert", "composite",
            "char:homoglyph"} <= set(transformations.available())
