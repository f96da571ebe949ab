"""`unscored_by_target` and the reason "the target had no score for N candidates" count the attack's
candidates the target had no score for, not the word-importance texts a ranking sends (the seed with a
word replaced by [UNK] or deleted): those are never candidates, and a ranking without their scores
falls back to the length heuristic (recorded as "heuristic")."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.detectors.base import Detector
from modlens.perturb import recipes


class NoAnswerForUnk(Detector):
    """A model with no answer for texts holding the [UNK] placeholder (a tokenizer that rejects it),
    and a score for every other text: 'idiot' spelt right is toxic to it."""
    name, version, labels, toxicity_label = "unk-shy", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [None if "[UNK]" in t else {"toxicity": 0.9 if "idiot" in t.lower() else 0.1} for t in texts]


def test_ranking_texts_without_a_score_are_not_counted_as_candidates():
    attack = recipes.create("deepwordbug").build(NoAnswerForUnk(), goal="tae", judges=[], seed=0, target_key="t")
    v = attack.run("you are such an idiot honestly")
    a = v.attack
    assert a["ranking"] == "heuristic"  # the [UNK] texts went unanswered: the ranking fell back
    assert a["unscored_by_target"] == 0, a  # every candidate sent was scored
    assert "had no score" not in (a["reason"] or ""), a["reason"]


class NoAnswerForSome(Detector):
    """No answer for candidates that edit 'idiot' (a call that fails on them), a toxic score for every
    other text: no candidate it answers flips it."""
    name, version, labels, toxicity_label = "partial", "1", ("toxicity",), "toxicity"

    def __init__(self) -> None:
        self.unanswered: set[str] = set()

    def score(self, texts: Sequence[str]) -> list[Any]:
        out: list[Any] = []
        for t in texts:
            if "[UNK]" not in t and "idiot" not in t:
                self.unanswered.add(t)
                out.append(None)
            else:
                out.append({"toxicity": 0.9})
        return out


def test_candidates_without_a_score_are_counted_once_each():
    target = NoAnswerForSome()
    attack = recipes.create("deepwordbug").build(target, goal="tae", judges=[], seed=0, target_key="t")
    a = attack.run("you are such an idiot honestly").attack
    assert a["ranking"] == "unk"
    assert target.unanswered and a["unscored_by_target"] == len(target.unanswered), a
    assert a["status"] == "failed" and a["reason"] == f"the target had no score for {len(target.unanswered)} candidates"


class NoAnswerWithoutHonestly(Detector):
    """No answer for a text without 'honestly' (a call that fails on those candidates); 'idiot' spelt
    right is toxic to it, so a candidate that edits 'idiot' flips it."""
    name, version, labels, toxicity_label = "partial-flips", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [None if "honestly" not in t else {"toxicity": 0.9 if "idiot" in t else 0.1} for t in texts]


class SaysBenign(Detector):
    """A judge that finds every text benign: it agrees with no flip of a toxic seed (the edit took its
    toxicity away for it too), so it rejects every one."""
    name, version, labels, toxicity_label = "says-benign", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [{"toxicity": 0.1} for _ in texts]


def test_a_failure_with_unanswered_candidates_says_so_before_the_judges_rejections():
    """Flips the judges rejected, and candidates the target had no score for: the attack's result is
    unknown (one of those may have flipped it and passed), so its reason says the unknown part first,
    not only that every flipping candidate was rejected."""
    attack = recipes.create("deepwordbug").build(NoAnswerWithoutHonestly(), goal="tae", judges=[SaysBenign()],
                                                 seed=0, target_key="t")
    a = attack.run("you are such an idiot honestly").attack
    assert a["status"] == "failed" and a["unscored_by_target"] > 0 and a["rejected_by_ensemble"], a
    n = a["unscored_by_target"]
    assert a["reason"].startswith(f"the target had no score for {n} candidate"), a["reason"]
    assert "rejected by the judges" in a["reason"], a["reason"]
