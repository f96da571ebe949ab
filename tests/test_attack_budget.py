"""Attacks as lean as TextAttack's: rankings query only the words a recipe may edit,
a search that runs out of budget keeps the success it already scored, and the stop-word
constraint protects contractions and capitalised stop words as NLTK's list does."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.detectors.base import Detector
from modlens.perturb import recipes
from modlens.perturb.constraints.no_stopword import NoStopword
from modlens.perturb.parts import Candidate, WordChange


class Lexical(Detector):
    """Toxic while an insult word is in the text, untouched otherwise; records what it scored."""
    name, version, labels, toxicity_label = "lexical", "test-1", ("toxicity",), "toxicity"
    insults = ("idiot", "trash", "stupid")

    def __init__(self):
        self.seen: list[str] = []

    def score(self, texts):
        self.seen += texts
        return [{"toxicity": 0.9 if any(w in t.lower().split() for w in self.insults) else 0.1} for t in texts]


@pytest.mark.parametrize("word", ["you're", "You’re", "YOU'RE", "don't", "I'm", "can't", "it's", "won't", "The"])
def test_contractions_and_capitalised_stop_words_are_stop_words(word):
    c = NoStopword()
    assert c.check_many(word, [Candidate("x", (WordChange(0, word, "x", "t", {}),))]) != [None]


@pytest.mark.parametrize("word", ["idiot", "trash", "you'reidiot", "o'neill"])
def test_content_words_are_not_stop_words(word):
    c = NoStopword()
    assert c.check_many(word, [Candidate("x", (WordChange(0, word, "x", "t", {}),))]) == [None]


def test_the_constraint_rejects_an_edit_of_a_contraction():
    c = NoStopword()
    edit = WordChange(0, "you're", "yovu're", "char:char_insert", {})
    assert c.check_many("you're trash", [Candidate("yovu're trash", (edit,))]) == ["changes stop word \"you're\" (word 0)"]


@pytest.mark.parametrize("recipe", ["deepwordbug", "textbugger", "pwws"])
def test_no_query_is_spent_ranking_a_word_the_recipe_may_not_edit(recipe):
    det = Lexical()
    attack = recipes.create(recipe).build(det, max_queries=200)
    assert not attack.unavailable  # WordNet, the vectors and MiniLM ship offline: nothing left out, nothing skipped
    v = attack.run("You're such an idiot aren't you")
    ranked = [t for t in det.seen if "[UNK]" in t] or det.seen[1:1 + 6]
    for stop in ("You're", "such", "an", "aren't", "you"):
        assert not any(t == "You're such an idiot aren't you".replace(stop, "[UNK]", 1) for t in ranked), stop
    assert [i for i, g in enumerate(v.params["importance"]) if g is not None] == [3]  # "idiot" only
    assert "You're" in v.text and "aren't" in v.text  # never edited


def test_a_char_recipe_never_edits_a_contraction():
    det = Lexical()
    v = recipes.create("deepwordbug").build(det).run("you're trash")
    assert v.text.startswith("you're ") and v.attack["status"] == "success"
    assert all(e["word"] != "you're" for e in v.params["edits"])


def test_a_spent_budget_returns_the_success_already_scored(capsys):
    """PWWS scores every word's swaps while ranking; with 12 queries the budget ran out there and
    the seed came back as a failure, although 'you sir are an changeling' scored below 0.5."""
    assert main(["attack", "--recipe", "pwws", "--target", "profanity-check", "--max-queries", "12",
                 "--text", "you sir are an idiot"]) == 0
    source, variant = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    a = variant["attack"]
    assert a["status"] == "success" and a["queries"] <= 12 and a["final_score"] < 0.5
    assert variant["text"] != "you sir are an idiot" and variant["scores"]["profanity-check"]["toxicity"] < 0.5
