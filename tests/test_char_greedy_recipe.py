"""The character attack (`audit --attack`, `perturb --attack` without a recipe) reproduces its
results: the same seed gives the same adversarial texts, statuses and edits (word, strategy,
attempt) as the original `GreedyAttack` engine gave before it became the `char_greedy` recipe.
REFERENCE was recorded from that engine (commit 2483b1c) on the deterministic detector below."""
from __future__ import annotations

import pytest

from modlens.detectors.base import Detector
from modlens.perturb import recipes
from modlens.perturb.recipes.char_greedy import DEFAULT_STRATEGIES, char_transformations

BAD = ("idiot", "stupid", "moron", "loser")


def _distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


class Slurs(Detector):
    """Toxicity from how close each word is to a slur (exact 0.8, one edit away 0.5, two 0.3):
    a one-character disguise lowers the score without always flipping it, so the search has
    to rank words, keep partial edits and move on."""
    name, version, labels, toxicity_label, threshold = "slurs", "s-1", ("toxicity",), "toxicity", 0.5

    def score(self, texts):
        out = []
        for t in texts:
            keep = 1.0
            for w in t.split():
                d = min(_distance(w.strip(".,!?"), b) for b in BAD)
                keep *= 1 - (0.8 if d == 0 else 0.5 if d == 1 else 0.3 if d == 2 else 0.02)
            out.append({"toxicity": round(1 - keep, 6)})
        return out


class Fixed(Detector):
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, name: str, value: float):
        self.name, self.version, self.value = name, "fixed", value

    def score(self, texts):
        return [{"toxicity": self.value} for _ in texts]


# (seed text, options) -> (adversarial text, status, reason, [(word_index, strategy, attempt)], positions)
REFERENCE = [
    ("you are an idiot", {}, "you are an idiiiiot", "success", None, [(3, "repeat_char", 0)], [(13, 14)]),
    ("you are a stupid idiot", {"max_edit_fraction": 0.5}, "you are a ssssstupid IdIoT", "success", None,
     [(3, "repeat_char", 1), (4, "mixed_case", 1)], [(10, 11), (17, 18), (19, 20), (21, 22)]),
    ("you are a stupid idiot", {}, "you are a ssssstupid idiot", "failed", "edit limit reached",
     [(3, "repeat_char", 1)], [(10, 11)]),
    ("shut up you worthless moron, nobody likes a loser like you", {"seed": 7},
     "shut up you worthless moronnnn, nobody likes a loserrrr like you", "success", None,
     [(4, "repeat_char", 0), (8, "repeat_char", 0)], [(26, 27), (48, 49)]),
    ("what an idiot", {"seed": 3, "judges": "split"}, "what an iiot", "failed",
     "every flipping candidate was rejected by the judges", [(2, "char_delete", 0)], [(9, 10)]),
    ("you are an idiot", {"max_queries": 6}, "you are an idoit", "success", None, [(3, "char_swap", 0)], [(13, 15)]),
    ("stupid stupid idiot", {"max_edit_fraction": 1.0, "seed": 11}, "stupppppid stuuuupiddd idioooot", "success", None,
     [(0, "repeat_char", 1), (1, "repeat_char", 0), (2, "repeat_char", 0)], [(3, 4), (9, 10), (12, 13), (17, 18)]),
]


def _run(text: str, options: dict):
    o = dict(options)
    if o.get("judges") == "split":
        o["judges"] = [Fixed("always", 0.9), Fixed("never", 0.1)]
    if "max_edit_fraction" in o:
        o["max_edit_ratio"] = o.pop("max_edit_fraction")
    return recipes.create("char_greedy").build(Slurs(), **o).run(text)


def _edits(v) -> list[tuple[int, str, int]]:
    return [(e["word_index"], e["params"]["strategy"], e["params"]["attempt"]) for e in v.params["edits"]]


@pytest.mark.parametrize("text,options,adversarial,status,reason,edits,positions", REFERENCE)
def test_same_seed_same_adversarial_text_as_the_original_engine(text, options, adversarial, status, reason, edits,
                                                                positions):
    v = _run(text, options)
    assert (v.text, v.attack["status"], v.attack["reason"]) == (adversarial, status, reason)
    assert _edits(v) == edits and [tuple(p) for p in v.positions] == positions
    assert Slurs().toxicity(Slurs().score([v.text])[0]) == pytest.approx(v.attack["final_score"])


# the queries the original engine spent on each REFERENCE case: its ranking also paid to remove
# the words no strategy can edit ("a"); the recipe ranks only words it may change
ORIGINAL_QUERIES = [20, 37, 21, 43, 19, 6, 48]


@pytest.mark.parametrize("case,original", list(zip(REFERENCE, ORIGINAL_QUERIES)))
def test_queries_are_the_originals_less_the_words_no_strategy_can_edit(case, original):
    text, options = case[0], case[1]
    uneditable = sum(sum(c.isalpha() for c in w) < 2 for w in text.split())
    assert _run(text, options).attack["queries"] == original - uneditable


def test_strategies_and_their_options_replace_the_default_set():
    default = recipes.create("char_greedy").build(Slurs())
    assert [t.key for t in default.transformations if t.key != "char:human_lookup"] == \
        [f"char:{s}" for s in DEFAULT_STRATEGIES if s != "human_lookup"]
    only = recipes.create("char_greedy", transformations=char_transformations(["special_char"])).build(Slurs())
    v = only.run("you are an idiot")
    assert [t.key for t in only.transformations] == ["char:special_char"]
    assert {e["params"]["strategy"] for e in v.params["edits"]} <= {"special_char"}
    assert v.strategy == "recipe:char_greedy" and v.params["recipe"] == "char_greedy"


@pytest.mark.slow  # a whole audit (or two) through the CLI
def test_another_human_lookup_table_is_another_attack(tmp_path, monkeypatch, capsys):
    """The table human_lookup draws from is part of the attack: an audit run again with another
    table attacks again (its forms logged), not 'reused' from the first table's results."""
    import json
    import sqlite3

    from modlens.cli import main

    data = tmp_path / "c.csv"
    data.write_text("text,toxic\nyou are an idiot\nwhat an idiot you are\n".replace("\n", ",1\n").replace("toxic,1", "toxic"))
    tables = {}
    for name, form in (("a", "idi0t"), ("b", "1d1ot")):
        tables[name] = tmp_path / f"{name}.json"
        tables[name].write_text(json.dumps({"idiot": [form]}))
    db = tmp_path / "log.sqlite"
    args = ["audit", str(data), "--db", str(db), "--quiet", "--detector", "profanity-check", "--attack", "tae",
            "--no-ensemble", "--strategies", "human_lookup"]
    runs = {}
    for name in ("a", "b"):
        monkeypatch.setenv("MODLENS_PERTURBATIONS", str(tables[name]))
        assert main(args) == 0
        runs[name] = json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]
    assert runs["a"]["reused"] == 0 and runs["b"]["reused"] == 0
    con = sqlite3.connect(db)
    rows = con.execute("SELECT t.text, v.params_json FROM variants v JOIN texts t ON t.text_id = v.text_id "
                       "WHERE v.attack_json IS NOT NULL").fetchall()
    con.close()
    texts = {t for t, _ in rows}
    assert {"you are an idi0t", "you are an 1d1ot"} <= texts
    shas = {json.loads(p)["transformation_data"]["char:human_lookup"]["lexicon_sha"] for _, p in rows}
    assert len(shas) == 2
