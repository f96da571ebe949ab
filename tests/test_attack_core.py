"""The composed attack core on deterministic detectors built here: applying changes, the
character adapter, each search method with known answers (beam finds what greedy misses),
query budget accounting, one batched call per step, pre/post constraints, multi-label goals."""
import random

import pytest

from modlens.detectors.base import Detector
from modlens.names import UnknownName
from modlens.perturb import constraints, recipes, search, transformations
from modlens.perturb.compose import Attack
from modlens.perturb.generate import word_slots
from modlens.perturb.parts import (Candidate, CharacterTransformation, Constraint, Transformation, WordChange,
                                   apply_changes, source_positions)
from modlens.perturb.search.base import TargetOracle
from modlens.perturb.search.ranking import UNK


class Table(Detector):
    """Scores from a function of the text; records every call (texts per call)."""
    name, version, labels, toxicity_label, threshold = "table", "t-1", ("toxicity",), "toxicity", 0.5

    def __init__(self, fn, labels=("toxicity",)):
        self.fn, self.labels, self.calls = fn, labels, []

    def score(self, texts):
        texts = list(texts)
        self.calls.append(texts)
        out = []
        for t in texts:
            v = self.fn(t)
            out.append(v if isinstance(v, dict) else {"toxicity": v})
        return out

    @property
    def seen(self):
        return [t for c in self.calls for t in c]


class Prefix(Transformation):
    """Proposes 'X'+word, 'Y'+word, 'Z'+word (the first k)."""
    key, kind, description = "prefix", "word", "test: prefix the word"

    def changes(self, text, slots, index, rng, k):
        w = slots[index].core(text)
        return [WordChange(index, w, p + w, self.key, {"prefix": p}) for p in "XYZ"[:k]]


class Reject(Constraint):
    """Rejects any candidate whose text contains `needle`."""
    def __init__(self, needle, stage="pre"):
        self.needle, self.stage, self.key = needle, stage, f"reject_{stage}"
        self.seen = []

    def check_many(self, source, candidates):
        self.seen += [c.text for c in candidates]
        return [f"contains {self.needle}" if self.needle in c.text else None for c in candidates]


# --- parts ----------------------------------------------------------------------------------

def test_apply_changes_keeps_punctuation_and_spacing():
    s = "you are a (stupid) idiot!"
    swap = WordChange(4, "idiot", "id1ot", "t", {}, spans=((2, 3),))
    assert apply_changes(s, [swap]).text == "you are a (stupid) id1ot!"
    assert apply_changes(s, [WordChange(3, "stupid", "dumb", "t", {})]).text == "you are a (dumb) idiot!"
    # deleting a whole token leaves no double space, at the start, middle and end
    assert apply_changes(s, [WordChange(0, "you", "", "t", {})]).text == "are a (stupid) idiot!"
    assert apply_changes("a b c", [WordChange(1, "b", "", "t", {})]).text == "a c"
    assert apply_changes("a b c", [WordChange(2, "c", "", "t", {})]).text == "a b"
    # a deleted core inside punctuation keeps the punctuation
    assert apply_changes(s, [WordChange(3, "stupid", "", "t", {})]).text == "you are a () idiot!"
    ins = WordChange(2, "a", "really", "t", {}, insert_after=True)
    cand = apply_changes(s, [swap, ins])
    assert cand.text == "you are a really (stupid) id1ot!"
    assert [c.word_index for c in cand.changes] == [2, 4]  # sorted by word
    assert source_positions(s, [swap, ins]) == [(9, 9), (21, 22)]
    assert s[21:22] == "i"
    with pytest.raises(ValueError, match="5 words"):
        apply_changes(s, [WordChange(7, "x", "y", "t", {})])


def test_character_transformation_adapts_a_strategy():
    t = transformations.create("char:char_swap")
    assert isinstance(t, CharacterTransformation) and t.key == "char:char_swap" and t.kind == "char"
    text = "you are an idiot"
    slots = word_slots(text)
    a = t.changes(text, slots, 3, random.Random(1), 3)
    assert a == t.changes(text, slots, 3, random.Random(1), 3)  # deterministic given the rng
    assert 1 <= len(a) <= 3 and len({c.new for c in a}) == len(a)
    for c in a:
        assert c.word == "idiot" and c.new != "idiot" and sorted(c.new) == sorted("idiot") and c.spans
        assert c.params["strategy"] == "char_swap"
    assert t.changes("a b", word_slots("a b"), 0, random.Random(1), 3) == []  # nothing to disguise


def test_registries_reject_unknown_keys_with_suggestions():
    for reg, bad in ((transformations, "char:char_swp"), (constraints, "no_stopwords"), (search, "beem"),
                     (recipes, "textfoler")):
        with pytest.raises(UnknownName) as err:
            reg.create(bad)
        assert err.value.suggestions, bad
    assert set(search.available()) == {"greedy_delete", "greedy_unk", "greedy_pwws", "beam"}


# --- oracle ---------------------------------------------------------------------------------

def test_oracle_budget_cache_and_calls():
    det = Table(lambda t: 0.9)
    o = TargetOracle(det, max_queries=3)
    assert o.results(["a", "b", "a"])[0] == {"toxicity": 0.9}
    assert o.queries == 2 and o.calls == 1
    out = o.results(["a", "c", "d"])  # "a" cached, only one more query allowed
    assert out[1] is not None and out[2] is None and o.queries == 3 and det.seen == ["a", "b", "c"]
    one = TargetOracle(Table(lambda t: 0.9), max_queries=10, batch=False)
    one.results(["a", "b", "c"])
    assert one.calls == 3 and one.queries == 3


# --- search methods with known answers --------------------------------------------------------

def trap(text):
    """Greedy's best first step (Xalpha) is a dead end; the second best (Yalpha) leads on."""
    table = {"alpha beta": 0.9, "beta": 0.85, "alpha": 0.88,
             "Xalpha beta": 0.6, "Yalpha beta": 0.7, "alpha Xbeta": 0.8, "alpha Ybeta": 0.85,
             "Yalpha Xbeta": 0.1}
    return table.get(text, 0.6 if text.startswith("Xalpha") else 0.7)


def test_beam_finds_a_success_greedy_misses():
    greedy = Attack(Table(trap), transformations=[Prefix()], search="greedy_delete", k=2).run("alpha beta").attack
    assert greedy["status"] == "failed" and greedy["reason"] == "no candidate flipped the target"
    assert greedy["ranking"] == "delete"
    det = Table(trap)
    v = Attack(det, transformations=[Prefix()], constraints=["no_repeat"], search=("beam", {"width": 2}),
               k=2).run("alpha beta")
    assert v.attack["status"] == "success" and v.text == "Yalpha Xbeta" and v.attack["final_score"] == 0.1
    assert v.attack["beam_steps"] == 2
    # width 1 keeps only the best step, so it falls into the same trap
    narrow = Attack(Table(trap), transformations=[Prefix()], constraints=["no_repeat"], search=("beam", {"width": 1}),
                    k=2).run("alpha beta")
    assert narrow.attack["status"] == "failed"


def words_score(weights):
    """Toxicity = sum of the weights of the words present (capped at 1)."""
    return lambda t: min(1.0, sum(weights.get(w, 0.0) for w in t.split()))


def test_deletion_and_unk_rankings_order_words_by_their_effect():
    det = Table(words_score({"aa": 0.2, "bb": 0.5, "cc": 0.3}))
    a = Attack(det, transformations=[Prefix()], search="greedy_delete", k=1)
    v = a.run("aa bb cc")
    assert v.params["importance"] == pytest.approx([0.2, 0.5, 0.3])
    # the first candidates scored after the ranking are at "bb", the most important word
    assert det.calls[2] == ["aa Xbb cc"]
    det = Table(words_score({"aa": 0.2, "bb": 0.5, "cc": 0.3}))
    Attack(det, transformations=[Prefix()], search="greedy_unk", k=1).run("aa bb cc")
    assert det.calls[1] == [f"{UNK} bb cc", f"aa {UNK} cc", f"aa bb {UNK}"] and det.calls[2] == ["aa Xbb cc"]


def test_pwws_weights_saliency_by_the_best_swap():
    # "bb" matters most when masked, but no swap of it helps; "aa"'s X swap removes it entirely
    weights = {"aa": 0.3, "bb": 0.6, "cc": 0.1, "Xaa": 0.0, "Xbb": 0.6, "Xcc": 0.1}
    det = Table(words_score(weights))
    v = Attack(det, transformations=[Prefix()], search="greedy_pwws", k=1).run("aa bb cc")
    imp = v.params["importance"]
    assert imp[1] == pytest.approx(0.0) and imp[2] == pytest.approx(0.0) and imp[0] > 0
    assert v.attack["ranking"] == "pwws"
    # the ranking scored every word's candidates in one call, then greedy starts at "aa" (cached)
    assert det.calls[2] == ["Xaa bb cc", "aa Xbb cc", "aa bb Xcc"]


def test_success_is_real_and_recorded():
    det = Table(words_score({"bad": 0.9, "word": 0.1}))
    v = Attack(det, transformations=[Prefix()], search="greedy_delete", k=2, seed=3).run("bad word")
    a = v.attack
    assert a["status"] == "success" and v.text == "Xbad word" and a["final_score"] == pytest.approx(0.1)
    assert det.fn(v.text) < det.threshold <= a["source_score"]
    assert a["words_edited"] == 1 and a["words_changed_share"] == 0.5 and v.positions == [(0, 3)]
    assert v.strategy == "attack-tae" and v.params["edits"][0]["new"] == "Xbad" and v.seed == 3
    assert a["queries"] == len(set(det.seen)) and a["calls"] == len(det.calls)
    skipped = Attack(det, transformations=[Prefix()]).run("word").attack
    assert skipped["status"] == "skipped" and skipped["queries"] == 1


# --- budget and batching --------------------------------------------------------------------

def test_query_budget_counts_every_target_call():
    det = Table(lambda t: 0.9)  # never fooled
    v = Attack(det, transformations=[Prefix()], search="greedy_delete", k=3, max_queries=5).run("aaa bbb ccc ddd")
    a = v.attack
    assert a["status"] == "failed" and a["reason"] == "query budget exhausted"
    assert a["queries"] == 5 == len(det.seen) == len(set(det.seen))  # the seed included, nothing twice
    assert a["ranking"] == "heuristic"  # the seed + 4 removals + a candidate do not fit in 5
    for s in ("greedy_delete", "greedy_unk", "greedy_pwws", "beam"):
        det = Table(lambda t: 0.9)
        a = Attack(det, transformations=[Prefix()], search=s, k=3, max_queries=12).run("aa bb cc dd").attack
        assert a["queries"] <= 12 and a["queries"] == len(det.seen), s


def test_one_batched_call_per_step_and_unbatched_baseline_agree():
    fn = words_score({"aa": 0.3, "bb": 0.3, "cc": 0.3, "dd": 0.3})
    det = Table(fn)
    v = Attack(det, transformations=[Prefix(), transformations.create("char:char_swap")],
               search="greedy_delete", k=2).run("aa bb cc dd")
    a = v.attack
    # seed, ranking, then one call per word tried: aa, bb, cc (1.0 -> 0.9 -> 0.6 -> 0.3 < 0.5)
    assert a["status"] == "success" and a["calls"] == len(det.calls) == 5
    assert max(len(c) for c in det.calls) > 1
    one = Table(fn)
    w = Attack(one, transformations=[Prefix(), transformations.create("char:char_swap")],
               search="greedy_delete", k=2, batch=False).run("aa bb cc dd")
    assert w.text == v.text and w.attack["queries"] == a["queries"] == len(one.calls)


# --- constraints ----------------------------------------------------------------------------

def test_pre_constraints_filter_before_any_query():
    det = Table(words_score({"bad": 0.9}))
    pre = Reject("X")
    v = Attack(det, transformations=[Prefix()], constraints=[pre], k=2).run("bad word")
    assert v.attack["status"] == "success" and v.text.startswith("Ybad")
    assert not any("X" in t for t in det.seen) and any("X" in t for t in pre.seen)
    c = v.attack["constraints"]["reject_pre"]
    assert c["ok"] is True and c["rejected"] >= 1


def test_post_constraints_reject_flips_and_say_so():
    det = Table(words_score({"bad": 0.9}))
    post = Reject("bad", stage="post")  # every flip ("Xbad", "Ybad") contains "bad"
    v = Attack(det, transformations=[Prefix()], constraints=[post], k=2).run("bad word")
    a = v.attack
    assert a["status"] == "failed" and a["reason"] == "every flipping candidate was rejected by reject_post"
    assert a["constraints"]["reject_post"]["rejected"] == 2
    assert a["constraints"]["reject_post"]["last_rejection"] == "contains bad"
    assert set(post.seen) <= set(det.seen)  # post checks only see scored candidates


def test_judges_and_rule():
    det = Table(words_score({"bad": 0.9}))
    keeps = Table(lambda t: 0.95)
    keeps.name = "keeps"
    v = Attack(det, transformations=[Prefix()], judges=[keeps], k=1).run("bad word")
    assert v.attack["status"] == "success" and v.attack["judge_queries"] == 1
    assert v.attack["constraints"]["ensemble"]["judges"]["keeps"]["agrees"] is True
    drops = Table(lambda t: 0.1 if "X" in t else 0.9)
    drops.name = "drops"
    v = Attack(det, transformations=[Prefix()], judges=[keeps, drops], k=1).run("bad word")
    a = v.attack
    assert a["status"] == "failed" and a["reason"] == "every flipping candidate was rejected by the judges"
    assert a["rejected_by_ensemble"] == 1 and a["constraints"]["ensemble"]["judges"]["drops"]["agrees"] is False


# --- goals ----------------------------------------------------------------------------------

def two_labels(text):
    words = text.split()
    return {"toxic": 0.9 if "aa" in words else 0.2, "insult": 0.9 if "bb" in words else 0.2, "neutral": 0.5}


def test_multi_label_goal_needs_every_toxic_label_below():
    det = Table(two_labels, labels=("toxic", "insult", "neutral"))
    det.toxicity_label = "toxic"
    single = Attack(det, transformations=[Prefix()], k=1).run("aa bb")
    assert single.attack["status"] == "success" and single.attack["words_edited"] == 1
    multi = Attack(det, transformations=[Prefix()], k=1, goal_labels="all").run("aa bb")
    a = multi.attack
    assert a["goal_labels"] == ["toxic", "insult"]  # "neutral" names no harm
    assert a["status"] == "success" and multi.text == "Xaa Xbb" and a["words_edited"] == 2
    assert a["final_score"] == pytest.approx(0.2) and all(v < 0.5 for k, v in two_labels(multi.text).items() if k != "neutral")
    with pytest.raises(ValueError, match="no label"):
        Attack(det, transformations=[Prefix()], goal_labels=["threat"])


def test_bae_goal_and_bad_arguments():
    det = Table(lambda t: 0.9 if "Xnice" in t else 0.1)
    v = Attack(det, transformations=[Prefix()], goal="bae", k=1).run("have a nice day")
    assert v.attack["status"] == "success" and "Xnice" in v.text and v.attack["goal"] == "bae"
    with pytest.raises(ValueError):
        Attack(det, transformations=[Prefix()], goal="flip")
    with pytest.raises(ValueError):
        Attack(det, transformations=[Prefix()], max_queries=0)
    with pytest.raises(ValueError):
        search.create("beam", width=0)
    assert isinstance(apply_changes("x", ()), Candidate)
