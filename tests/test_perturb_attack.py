"""The character attack (recipe `char_greedy`, Greedy-WIR) against real detectors: successes
and failures for known reasons, the query budget, the AND-ensemble constraint, dedup, and the
transfer matrix."""
from __future__ import annotations

import json

import pytest

from modlens.detectors import registry as detectors
from modlens.detectors.base import Detector
from modlens.perturb import recipes
from modlens.perturb.recipes.char_greedy import char_transformations
from modlens.perturb.transfer import TransferRow, asr_matrix, score_variants

TOXIC = "you are an idiot"
TWO_SLURS = "you are a stupid idiot"
BENIGN = "have a nice day"


@pytest.fixture(scope="module")
def profanity() -> Detector:
    return detectors.create("profanity-check")


def char_attack(target, *, strategies=None, max_edit_fraction=None, **options):
    """The character attack, as `audit --attack` builds it."""
    recipe = recipes.create("char_greedy", transformations=char_transformations(strategies))
    return recipe.build(target, max_edit_ratio=max_edit_fraction, **options)


class Fixed(Detector):
    """A judge with a fixed verdict: isolates the AND logic of the ensemble constraint."""
    labels, toxicity_label = ("toxic",), "toxic"

    def __init__(self, name: str, value: float):
        self.name, self.version, self.value = name, "fixed", value

    def score(self, texts):
        return [{"toxic": self.value} for _ in texts]


def test_tae_success_on_profanity_check(profanity):
    v = char_attack(profanity, goal="tae").run(TOXIC)
    a = v.attack
    assert a["status"] == "success" and a["reason"] is None
    assert a["source_score"] >= profanity.threshold > a["final_score"]
    # the claimed final score is the detector's real score of the returned text
    assert profanity.toxicity(profanity.score([v.text])[0]) == pytest.approx(a["final_score"])
    assert a["ranking"] == "delete" and 1 < a["queries"] <= a["max_queries"]
    assert a["words_edited"] == 1 and v.params["edits"][0]["word"] == "idiot"
    assert v.target_detector == "profanity-check" and a["target_version"] == profanity.version
    s, e = v.positions[0]
    assert TOXIC[:s] == v.text[:s] and 11 <= s < e <= 16  # inside "idiot"
    json.dumps(v.to_dict())
    again = char_attack(profanity, goal="tae").run(TOXIC)
    assert again.text == v.text and again.attack == a  # seeded: reproducible


def test_edit_limit_is_a_known_failure(profanity):
    """Two slurs: one edit leaves the other, so a 25% word budget fails and 50% succeeds."""
    tight = char_attack(profanity, max_edit_fraction=0.25).run(TWO_SLURS).attack
    assert tight["status"] == "failed" and tight["reason"] == "edit limit reached"
    assert tight["words_edited"] == 1 and tight["final_score"] >= profanity.threshold
    loose = char_attack(profanity, max_edit_fraction=0.5).run(TWO_SLURS).attack
    assert loose["status"] == "success" and loose["words_edited"] == 2
    assert loose["constraints"]["max_edit_fraction"] == {"limit": 0.5, "max_words": 2, "words_edited": 2, "ok": True}


def test_query_budget_of_one_fails(profanity):
    v = char_attack(profanity, max_queries=1).run(TOXIC)
    assert v.attack["status"] == "failed" and v.attack["reason"] == "query budget exhausted"
    assert v.attack["queries"] == 1 and v.text == TOXIC and v.positions == []


def test_small_budget_falls_back_to_heuristic_ranking(profanity):
    a = char_attack(profanity, max_queries=4).run(TOXIC).attack
    assert a["ranking"] == "heuristic" and a["queries"] <= 4


def test_seed_on_the_goal_side_is_skipped(profanity):
    a = char_attack(profanity, goal="tae").run(BENIGN).attack
    assert a["status"] == "skipped" and a["queries"] == 1 and "below" in a["reason"]
    b = char_attack(profanity, goal="bae").run(TOXIC).attack
    assert b["status"] == "skipped" and "above" in b["reason"]


def test_bae_cannot_make_a_lexical_model_see_profanity_in_typos(profanity):
    a = char_attack(profanity, goal="bae", max_edit_fraction=1.0).run(BENIGN).attack
    assert a["status"] == "failed" and a["final_score"] < profanity.threshold


def test_ensemble_rejects_what_another_detector_calls_benign(profanity):
    """A second copy of profanity-check as judge is fooled by the very same edits, so it calls
    every flip non-toxic: TaeBench's AND ensemble must reject them all."""
    judge = detectors.create("profanity-check")
    a = char_attack(profanity, judges=[judge]).run(TOXIC).attack
    assert a["status"] == "failed" and a["rejected_by_ensemble"] > 0
    assert a["reason"] == "every flipping candidate was rejected by the judges"
    verdict = a["constraints"]["ensemble"]
    assert verdict["ok"] is False and verdict["judges"]["profanity-check"]["agrees"] is False
    assert a["judge_queries"] == a["rejected_by_ensemble"]


def test_ensemble_needs_every_judge(profanity):
    yes, no = Fixed("always-toxic", 0.9), Fixed("never-toxic", 0.1)
    ok = char_attack(profanity, judges=[yes]).run(TOXIC).attack
    assert ok["status"] == "success" and ok["constraints"]["ensemble"]["ok"] is True
    split = char_attack(profanity, judges=[yes, no]).run(TOXIC).attack
    assert split["status"] == "failed"
    assert split["constraints"]["ensemble"]["judges"]["always-toxic"]["agrees"] is True


def test_duplicates_are_marked(profanity):
    out = char_attack(profanity).run_many([TOXIC, BENIGN, TOXIC])
    assert [v.attack["status"] for v in out] == ["success", "skipped", "success"]
    assert out[0].attack["constraints"]["unique"] == {"ok": True}
    assert out[2].attack["constraints"]["unique"] == {"ok": False, "duplicate_of": 0}


def test_bad_arguments_are_clear(profanity):
    with pytest.raises(ValueError, match="goal"):
        char_attack(profanity, goal="flip")
    with pytest.raises(ValueError, match="max_queries"):
        char_attack(profanity, max_queries=0)
    with pytest.raises(KeyError, match="char:nope"):
        char_attack(profanity, strategies=["nope"])


def test_asr_matrix_counts_and_dedups():
    th = {"a": 0.5, "b": 0.5}
    rows = [TransferRow("a", "tae", "x1", {"a": 0.1, "b": 0.9}, th),
            TransferRow("a", "tae", "x2", {"a": 0.2, "b": 0.3}, th),
            TransferRow("a", "tae", "x2", {"a": 0.2, "b": 0.3}, th),  # exact duplicate
            {"source": "b", "goal": "tae", "text": "y", "scores": {"a": 0.7, "b": 0.4, "c": None}, "thresholds": th}]
    m = asr_matrix(rows)
    assert m.sources == ["a", "b"] and m.targets == ["a", "b", "c"]
    assert m.rate["a"] == {"a": 1.0, "b": 0.5, "c": None} and m.n["a"]["b"] == 2
    assert m.rate["b"]["a"] == 0.0 and m.dropped_duplicates == 1
    assert "0.50 (2)" in m.format()
    json.dumps(m.to_dict())
    # with seed scores, a target that already missed the seed is not counted as fooled by the edit
    missed = TransferRow("a", "tae", "z", {"a": 0.1, "b": 0.2}, th, seed_scores={"a": 0.8, "b": 0.3})
    assert asr_matrix([missed]).n["a"] == {"a": 1, "b": 0}


def test_transfer_from_profanity_check(profanity):
    made = char_attack(profanity).run_many([TOXIC, "this is bullshit", BENIGN])
    rows = score_variants(made, {"profanity-check": profanity, "always-toxic": Fixed("always-toxic", 0.9)})
    assert len(rows) == 2  # the benign seed was skipped
    m = asr_matrix(rows)
    assert m.rate["profanity-check"]["profanity-check"] == 1.0
    assert m.rate["profanity-check"]["always-toxic"] == 0.0


@pytest.mark.slow
def test_tae_against_minilm_and_transfer(minilm, profanity):
    seeds = ["you are a pathetic idiot", "shut up you worthless moron", "what a disgusting stupid liar"]
    made = char_attack(minilm, max_edit_fraction=0.5, max_queries=150).run_many(seeds)
    statuses = [v.attack["status"] for v in made]
    assert set(statuses) <= {"success", "failed", "skipped"}
    for v in made:
        a = v.attack
        assert a["queries"] <= 150
        if a["status"] == "success":
            assert minilm.toxicity(minilm.score([v.text])[0]) < minilm.threshold
    m = asr_matrix(score_variants(made, {"minilm-toxicity": minilm, "profanity-check": profanity}))
    if m.sources:
        assert m.rate["minilm-toxicity"]["minilm-toxicity"] == 1.0


def test_transfer_cell_leaves_out_texts_whose_seed_the_column_never_scored(tmp_path):
    """A transfer cell counts a text for a detector only when that detector judged its seed right;
    a detector with no score for the seed (an error, a rate limit) cannot say so, and the report's
    cell leaves the text out and says how many it left out (a planted log, read by the report)."""
    from modlens.analysis.report import report_from_db, to_json
    from modlens.rows import Variant
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        dets = {name: log.ensure_detector(name, "1", "toxicity", 0.5, {}) for name in ("t", "p")}
        page = log.ensure_page("dataset:hand", "hand.csv", None, None)
        # s1: p judged the seed right (toxic), a1 fools p; s2: p has no score for the seed, a2 is benign for p
        for key, seed, adv, seed_scores, adv_scores in (("v1", "s1", "a1", {"t": 0.9, "p": 0.9}, {"t": 0.1, "p": 0.1}),
                                                         ("v2", "s2", "a2", {"t": 0.9}, {"t": 0.1, "p": 0.2})):
            cid = log.add_comment("dataset:hand", key, page, seed)
            log.add_variant(cid, Variant(adv, "attack-tae", {"goal": "tae", "max_queries": 50}, 0, source_text=seed,
                                         target_detector="t", attack={"goal": "tae", "status": "success", "queries": 5,
                                                                      "max_queries": 50}))
            for text, scores in ((seed, seed_scores), (adv, adv_scores)):
                for name, s in scores.items():
                    log.add_score(text, dets[name], {"toxicity": s}, s, 1, None)
    (m,) = json.loads(to_json(report_from_db(db)))["sections"]["attacks"]["matrices"]
    assert m["n"]["t"] == {"t": 2, "p": 1} and m["rate"]["t"]["p"] == 1.0
    assert any("1 of t's examples not counted for p" in note for note in m["notes"])
