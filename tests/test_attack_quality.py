"""TaeBench's quality filters (`perturb/quality.py`), each on its own with known answers: dedup
(exact and near), the AND-ensemble label check from recorded verdicts and logged scores (a judge
with no score: not checked), MiniLM meaning similarity, normalizer-edit fluency, the cumulative summary, and
normalization recovery with the real profanity-check detector."""
from __future__ import annotations

import pytest

from modlens.detectors.base import Detector
from modlens.rows import Variant
from modlens.perturb.quality import AttackExample, QualityFilters, normalization_recovery, recipe_of


class LengthJudge(Detector):
    """Deterministic judge: 20 characters or more is toxic."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 40)} for t in texts]


def ex(id, text, seed="you are an idiot", *, recipe="r", target="t", status="success", goal="tae", **kw):
    return AttackExample(id=id, seed=seed, text=text, goal=goal, target=target, target_name=target, recipe=recipe,
                         status=status, **kw)


def only(*filters, **kw):
    return QualityFilters(filters=filters, similarity=None, normalizer=None, **kw)


def test_dedup_exact_and_near_within_recipe_and_target():
    examples = [ex(1, "you are an 1d10t"), ex(2, "you are an 1d10t"),          # exact
                ex(3, "You are  an 1D10T"),                                     # near: same seed, case/space
                ex(4, "You are an 1D10T", seed="another seed"),                 # other seed: not near
                ex(5, "you are an 1d10t", target="other"),                      # other target: its own example
                ex(6, "you are an 1d10t", recipe="pwws")]                       # other recipe: its own example
    res = only("dedup").assess(examples)
    d = [v["dedup"] for v in res.verdicts]
    assert [x["ok"] for x in d] == [True, False, False, True, True, True]
    assert d[1]["value"] == 1 and d[1]["match"] == "exact"
    assert d[2]["value"] == 1 and d[2]["match"] == "near"
    assert res.summary["after"] == {"dedup": 4} and res.summary["failed"] == {"dedup": 2}


def test_only_successes_are_filtered():
    res = only("dedup").assess([ex(1, "a", status="failed"), ex(2, "b", status="skipped"), ex(3, "c")])
    assert res.verdicts[:2] == [None, None] and res.verdicts[2]["dedup"]["ok"] is True
    assert res.passed == [False, False, True]
    assert res.summary["attacks"] == 3 and res.summary["successes"] == 1


def test_label_check_from_recorded_verdicts_and_logged_scores():
    recorded = ex(1, "x", judges={"a": {"agrees": True}, "b": {"agrees": False}})
    logged_keeps = ex(2, "y", other_scores={"a": (0.9, 0.5), "b": (0.5, 0.5)})    # both still toxic (>= threshold)
    logged_drops = ex(3, "z", other_scores={"a": (0.9, 0.5), "b": (0.2, 0.5)})
    bae = ex(4, "w", goal="bae", other_scores={"a": (0.1, 0.5)})                   # a BAE must stay benign
    res = only("label").assess([recorded, logged_keeps, logged_drops, bae])
    v = [r["label"] for r in res.verdicts]
    assert (v[0]["ok"], v[0]["value"], v[0]["source"]) == (False, 0.5, "recorded")
    assert (v[1]["ok"], v[1]["value"], v[1]["source"]) == (True, 1.0, "logged scores")
    assert (v[2]["ok"], v[2]["judges"]) == (False, {"a": True, "b": False})
    assert v[3]["ok"] is True and v[3]["threshold"] == 1.0


def test_label_check_without_verdicts_or_logged_scores_is_not_checked():
    res = only("label").assess([ex(1, "x"), ex(2, "y", other_scores={"a": (0.2, 0.5)})])
    v = [r["label"] for r in res.verdicts]
    assert v[0]["ok"] is None and "no other detector" in v[0]["why"]
    assert v[1]["ok"] is False
    assert res.passed == [True, False]                          # not checked is not a failure...
    assert res.summary["not_checked"] == {"label": 1}           # ...but it is counted
    assert res.summary["passed_every_filter"] == 0


@pytest.fixture(scope="module")
def similarity():
    from modlens.perturb.constraints.sentence_similarity import SentenceSimilarity
    sim = SentenceSimilarity(threshold=0.8)
    assert sim.availability() is None, sim.availability()  # MiniLM ships in the venv
    assert sim.encoder is not None  # loaded here, in setup: the model's load is no test's own time
    return sim


def test_meaning_rejects_a_meaning_change_and_keeps_a_disguise(similarity):
    q = QualityFilters(filters=["meaning"], similarity=similarity, normalizer=None, min_similarity=0.8)
    res = q.assess([ex(1, "you are an id1ot"), ex(2, "you are a genius")])
    disguise, changed = (v["meaning"] for v in res.verdicts)
    assert disguise["ok"] is True and disguise["value"] > 0.99     # the normalizer reads id1ot as idiot
    assert changed["ok"] is False and changed["value"] < 0.7 and changed["threshold"] == 0.8


def test_fluency_counts_normalizer_edits_beyond_the_seeds():
    q = QualityFilters(filters=["fluency"], similarity=None, max_normalizer_edits=3)
    res = q.assess([ex(1, "you are an 1d10t"), ex(2, "y0u 4r3 4n 1d10t"),
                    ex(3, "y0u 4r3 4n 1d10t", seed="y0u 4r3 4n idiot")])   # the seed's own leet is not counted
    v = [r["fluency"] for r in res.verdicts]
    assert (v[0]["ok"], v[0]["value"]) == (True, 1)
    assert (v[1]["ok"], v[1]["value"]) == (False, 4)
    assert (v[2]["ok"], v[2]["value"]) == (True, 1)


def test_summary_counts_are_cumulative_in_taebench_order():
    examples = [ex(1, "a", other_scores={"j": (0.9, 0.5)}), ex(2, "a", other_scores={"j": (0.2, 0.5)}),
                ex(3, "b", other_scores={"j": (0.2, 0.5)}), ex(4, "c", other_scores={"j": (0.9, 0.5)})]
    res = only("dedup", "label").assess(examples)
    # 2 is a duplicate (and would fail the label check too): counted once, by dedup
    assert res.summary["after"] == {"dedup": 3, "label": 2} and res.summary["kept"] == 2
    assert res.summary["failed"] == {"dedup": 1, "label": 2}
    assert res.passed == [True, False, False, True]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="unknown quality filter"):
        QualityFilters(filters=["grammar"])
    with pytest.raises(ValueError):
        QualityFilters(min_similarity=2)
    with pytest.raises(ValueError):
        QualityFilters(max_normalizer_edits=-1)


def test_recipe_name_and_example_from_variant():
    assert recipe_of("recipe:pwws", {}) == "pwws"
    assert recipe_of("attack-tae", {"recipe": "a2t"}) == "a2t"
    assert recipe_of("attack-bae", {}, {}) == "attack-bae"
    v = Variant(text="you are an 1d10t", strategy="attack-tae", params={}, seed=0, source_text="you are an idiot",
                target_detector="profanity-check",
                attack={"goal": "tae", "status": "success", "target_name": "profanity-check",
                        "constraints": {"ensemble": {"judges": {"minilm": {"agrees": True}}, "ok": True}}})
    e = AttackExample.from_variant(v, id=7)
    assert (e.id, e.recipe, e.success, e.judges) == (7, "attack-tae", True, {"minilm": {"agrees": True}})


def test_normalization_recovers_leet_but_not_a_synonym():
    from modlens.detectors import registry
    from modlens.perturb.constraints import _shared

    target = registry.create("profanity-check")
    leet, synonym = ex(1, "you are an 1d10t"), ex(2, "you are a dolt")
    # both fool the target (known scores: 0.036 each, threshold 0.5)
    assert all(target.toxicity(r) < target.threshold for r in target.score([leet.text, synonym.text]))
    assert normalization_recovery([leet, synonym, ex(3, "x", status="failed")], target, _shared.normalizer()) \
        == [True, False, None]


def test_a_judge_without_a_score_leaves_the_label_not_checked(tmp_path):
    """A recorded judge verdict with no score (`agrees` null: here a real cached-scores table that
    holds only the seed) neither keeps nor drops the label: the check is not checked, never failed,
    and the success is not counted as passing every filter."""
    from modlens.detectors import registry
    from modlens.perturb.constraints.judges_agree import judge_texts

    table = tmp_path / "scores.csv"
    table.write_text("text,score\nyou are an idiot,0.9\n", encoding="utf-8")  # the seed only
    cached = registry.create("cached", path=str(table), text_col="text", score_col="score")
    (unscored,) = judge_texts([cached, LengthJudge()], "tae", ["you are an 1diot, you are an 1diot"])
    assert unscored["judges"]["cached"]["agrees"] is None and unscored["judges"]["length"]["agrees"] is True
    (dropped,) = judge_texts([cached, LengthJudge()], "tae", ["you are an idiot"])  # length calls it benign
    res = only("label").assess([ex(1, "a", judges=unscored["judges"]), ex(2, "b", judges=dropped["judges"])])
    v = [r["label"] for r in res.verdicts]
    assert (v[0]["ok"], v[0]["judges"]) == (None, {"cached": None, "length": True})
    assert "no score from cached" in v[0]["why"]
    assert (v[1]["ok"], v[1]["judges"]) == (False, {"cached": True, "length": False})  # a "no" still fails it
    assert res.summary["per_filter"]["label"] == {"checked": 1, "passed": 0, "failed": 1, "not_checked": 1}
    assert res.summary["passed_every_filter"] == 0 and res.passed == [True, False]
