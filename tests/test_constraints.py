"""Attack constraints on their own, with known answers: share of words changed, stop words,
repeated edits, part of speech (WordNet), MiniLM sentence similarity, edit distance,
readability through the normalizer, and the judges' AND ensemble."""
from __future__ import annotations

import pytest

from modlens.detectors.base import Detector
from modlens.names import UnknownName
from modlens.perturb import constraints
from modlens.perturb.constraints.edit_distance import levenshtein
from modlens.perturb.parts import Candidate, WordChange, apply_changes
from realtools import requires

SRC = "you are a stupid idiot"

needs_wordnet = requires("wordnet")


def swap(i: int, word: str, new: str, key: str = "wordnet_synonym", spans=()) -> WordChange:
    return WordChange(i, word, new, key, {}, spans)


def cand(*changes: WordChange, source: str = SRC) -> Candidate:
    return apply_changes(source, changes)


def check(key: str, candidates, source: str = SRC, **options):
    c = constraints.create(key, **options)
    assert c.availability() is None
    assert c.describe()["key"] == key
    return c.check_many(source, candidates)


def test_max_words_changed():
    one = cand(swap(3, "stupid", "dense"))
    two = cand(swap(3, "stupid", "dense"), swap(4, "idiot", "moron"))
    fill = cand(swap(3, "stupid", "dense"), WordChange(2, "a", "really", "filler_insert", {}, insert_after=True))
    # 5 words: floor(0.2 * 5) = 1 word may change; an inserted filler counts as a change
    assert check("max_words_changed", [one, two, fill], fraction=0.2) == [
        None, "2 of 5 words changed > 1 allowed", "2 of 5 words changed > 1 allowed"]
    assert check("max_words_changed", [one, two], fraction=0.4) == [None, None]
    assert check("max_words_changed", [one], fraction=0.1, min_words=0) == ["1 of 5 words changed > 0 allowed"]
    assert constraints.create("max_words_changed", fraction=0.1).limit(SRC) == 1  # min_words=1 floor
    with pytest.raises(ValueError):
        constraints.create("max_words_changed", fraction=0)


def test_no_stopword():
    got = check("no_stopword", [cand(swap(1, "are", "be")), cand(swap(3, "stupid", "dense")),
                                cand(WordChange(1, "are", "really", "filler_insert", {}, insert_after=True))])
    assert got == ["changes stop word 'are' (word 1)", None, None]
    assert check("no_stopword", [cand(swap(3, "stupid", "dense"))], stopwords=["stupid"]) == [
        "changes stop word 'stupid' (word 3)"]


def test_no_repeat():
    twice = Candidate("you are a dense idiot", (swap(3, "stupid", "stpuid", "char:char_swap"), swap(3, "stupid", "dense")))
    fills = Candidate("you are a really so stupid idiot",
                      (WordChange(2, "a", "really", "filler_insert", {}, insert_after=True),
                       WordChange(2, "a", "so", "filler_insert", {}, insert_after=True)))
    ok = cand(swap(3, "stupid", "dense"), WordChange(3, "stupid", "so", "filler_insert", {}, insert_after=True))
    assert check("no_repeat", [twice, fills, ok]) == ["2 edits of word 3", "2 insertions after word 2", None]


@needs_wordnet
def test_pos_kept():
    got = check("pos_kept", [
        cand(swap(3, "stupid", "dense")),      # a/n -> a/n/v (dense.s, dense.n?): shares the adjective
        cand(swap(3, "stupid", "stupidly")),   # adverb only
        cand(swap(3, "stupid", "stpuid", "char:char_swap", ((1, 3),))),  # WordNet does not know it: passes
        cand(swap(4, "idiot", "", "word_delete")),                       # deletion: nothing to compare
        cand(swap(4, "idiot", "hate")),        # n -> n/v: shares the noun
        cand(swap(4, "idiot", "quickly")),     # n -> r
    ])
    assert got == [None, "'stupid' (a/n) -> 'stupidly' (r)", None, None, None, "'idiot' (n) -> 'quickly' (r)"]
    # "superset": hate (n/v) may not replace idiot... the other way round: idiot (n) for hate (n/v) fails
    src = "I hate you"
    assert check("pos_kept", [cand(swap(1, "hate", "idiot"), source=src)], source=src, mode="superset") == [
        "'hate' (n/v) -> 'idiot' (n)"]
    assert check("pos_kept", [cand(swap(1, "hate", "idiot"), source=src)], source=src) == [None]
    assert "pass" in constraints.create("pos_kept").describe()["unknown_words"]


def test_edit_distance():
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3 and levenshtein("same", "same") == 0
    assert levenshtein("you are a stupid idiot", "you are a stpuid idiot") == 2
    assert levenshtein("a" * 50, "b" * 50, limit=5) == 6  # stops early past the limit
    swapped = cand(swap(3, "stupid", "stpuid", "char:char_swap", ((1, 3),)))
    synonym = cand(swap(3, "stupid", "unintelligent"))
    assert check("edit_distance", [swapped, synonym], max_distance=5) == [None, "edit distance > 5"]
    assert check("edit_distance", [swapped], max_distance=1) == ["edit distance > 1"]


@pytest.fixture(scope="module")
def similarity():
    c = constraints.create("sentence_similarity")
    assert c.availability() is None, c.availability()  # MiniLM ships in the venv
    return c


def test_similarity_rejects_a_meaning_change_and_accepts_a_typo(similarity):
    src = "I love you"
    hate = cand(swap(1, "love", "hate"), source=src)
    typo = cand(swap(1, "love", "lvoe", "char:char_swap", ((1, 3),)), source=src)
    adore = cand(swap(1, "love", "adore"), source=src)
    sims = similarity.similarities(src, [hate.text, typo.text, adore.text])
    # measured with the embedded MiniLM: hate 0.58, adore 0.58; the normalizer reads "lvoe" as "love"
    assert sims[0] == pytest.approx(0.577, abs=0.02) and sims[1] == pytest.approx(1.0, abs=1e-4)
    c = constraints.create("sentence_similarity", threshold=0.7, encoder=similarity.encoder)
    assert c.check_many(src, [hate, typo]) == ["similarity 0.58 < 0.70", None]
    # raw texts (as the papers compare them): MiniLM's word pieces make the typo look like a new meaning
    raw = constraints.create("sentence_similarity", threshold=0.7, normalize=False, encoder=similarity.encoder)
    raw_sims = raw.similarities(src, [hate.text, typo.text])
    assert raw_sims[1] < raw_sims[0] < 0.7
    assert raw.check_many(src, [hate, typo]) == [f"similarity {s:.2f} < 0.70" for s in raw_sims]
    # a synonym swap in a longer comment keeps the meaning
    long_src = "go kill yourself you worthless trash"
    keep = cand(swap(4, "worthless", "wretched"), source=long_src)
    assert similarity.check_many(long_src, [keep]) == [None]


def test_similarity_reuses_a_loaded_encoder(similarity):
    from modlens.perturb.constraints import _shared

    class Holder:
        encoder = similarity.encoder
    _shared.share_from([Holder()])
    assert _shared.sentence_encoder() is similarity.encoder
    assert constraints.create("sentence_similarity").encoder is similarity.encoder


def test_a_closed_detector_s_encoder_is_not_handed_to_later_constraints(similarity):
    """A minilm-toxicity detector shares its encoder with the constraints; an audit's end closes
    the detector (its model released). The next audit in the same process (a TAE meaning check)
    must get a loaded encoder, not the released one (it failed with "'NoneType' object is not callable")."""
    from modlens.detectors.minilm import SentenceEncoder
    from modlens.perturb.constraints import _shared

    detector_encoder = SentenceEncoder(similarity.encoder.model_dir)

    class Detector:
        encoder = detector_encoder
    key = _shared._key(detector_encoder.model_dir)
    before = _shared._encoders.pop(key, None)
    try:
        _shared.share_from([Detector()])
        assert _shared.sentence_encoder() is detector_encoder
        kept = constraints.create("sentence_similarity")  # lives on, as the attack checks' one does
        assert kept.encoder is detector_encoder
        detector_encoder.model = None  # what MiniLMToxicity.close() does
        assert kept.similarities(SRC, [SRC]) == [pytest.approx(1.0, abs=1e-5)]
        fresh = _shared.sentence_encoder()
        assert fresh is not detector_encoder and fresh.model is not None
        assert constraints.create("sentence_similarity").similarities(SRC, [SRC]) == [pytest.approx(1.0, abs=1e-5)]
    finally:
        _shared._encoders.pop(key, None)
        if before is not None:
            _shared._encoders[key] = before


def test_readable_on_leet_and_unreadable_text():
    leet = cand(swap(3, "stupid", "stup1d", "char:special_char", ((4, 5),)),
                swap(4, "idiot", "1d10t", "char:special_char", ((0, 1), (2, 4))))
    scrambled = cand(swap(4, "idiot", "dioti", "char:char_swap", ((0, 5),)))  # no reader's typo
    synonym_and_leet = cand(swap(3, "stupid", "dense"), swap(4, "idiot", "id1ot", "char:special_char", ((2, 3),)))
    synonym = cand(swap(3, "stupid", "dense"))
    got = check("readable", [leet, scrambled, synonym_and_leet, synonym])
    assert got[0] is None and got[2] is None and got[3] is None  # the synonym is no disguise
    assert got[1] == "normalizer reads back 0.00 of the disguised words < 1.00 (lost: idiot)"
    assert check("readable", [scrambled], min_recovered=0.0) == [None]
    d = constraints.create("readable").describe()
    assert d["normalizer"] == "modlens-normalizer" and d["normalizer_version"]


class Fixed(Detector):
    """A deterministic judge: toxic exactly when the text contains one of its words."""
    labels, toxicity_label = ("toxic",), "toxic"

    def __init__(self, name: str, words: set[str]):
        self.name, self.version, self.words, self.calls = name, "fixed-1", words, 0

    def score(self, texts):
        self.calls += 1
        return [{"toxic": 0.9 if set(t.lower().split()) & self.words else 0.1} for t in texts]


class Silent(Fixed):
    def score(self, texts):
        self.calls += 1
        return [None for _ in texts]


def test_judges_agree_and_rule_batches_and_counts_queries():
    a, b = Fixed("a", {"idiot", "stupid"}), Fixed("b", {"idiot"})
    judges = constraints.create("judges_agree", judges=[a, b], goal="tae")
    assert judges.stage == "post"
    both = cand(swap(3, "stupid", "stpuid", "char:char_swap", ((1, 3),)))   # "idiot" left: both still toxic
    only_a = cand(swap(4, "idiot", "1d10t", "char:special_char", ((0, 1),)))  # b no longer sees "idiot"
    none = cand(swap(3, "stupid", "x", "x"), swap(4, "idiot", "y", "x"))
    assert judges.check_many(SRC, [both, only_a, none]) == [None, "no longer toxic for b", "no longer toxic for a, b"]
    assert (a.calls, b.calls, judges.queries) == (1, 1, 6)  # one call per judge for all candidates
    assert judges.last[1]["judges"]["a"] == {"version": "fixed-1", "toxicity": 0.9, "threshold": 0.5, "agrees": True}
    assert judges.describe()["judges"] == [{"name": "a", "version": "fixed-1", "threshold": 0.5},
                                           {"name": "b", "version": "fixed-1", "threshold": 0.5}]
    # BAE: the judges must still call the text benign
    bae = constraints.create("judges_agree", judges=[b], goal="bae")
    assert bae.check_many("have a nice day", [Candidate("have a nice idiot", ()), Candidate("have a nice dy", ())]) == [
        "no longer benign for b", None]
    # a judge with no score never counts as agreeing, and is said to have none (not to disagree);
    # no judges: everything passes
    assert constraints.create("judges_agree", judges=[Silent("s", set())]).check_many(SRC, [both]) == [
        "no score from s"]
    assert constraints.create("judges_agree").check_many(SRC, [both]) == [None]
    with pytest.raises(ValueError):
        constraints.create("judges_agree", goal="xyz")


def test_registry():
    with pytest.raises(UnknownName) as err:
        constraints.create("max_word_changed")
    assert "max_words_changed" in err.value.suggestions
    stages = {k: constraints.create(k).stage for k in constraints.available()}
    assert stages == {"max_words_changed": "pre", "no_stopword": "pre", "no_repeat": "pre", "pos_kept": "pre",
                      "sentence_similarity": "pre", "edit_distance": "pre", "readable": "post",
                      "judges_agree": "post"}
