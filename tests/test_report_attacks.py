"""The report's attacks section per recipe x target: success before and after the quality
filters, words changed, per-recipe transfer matrices, normalization recovery (a leet attack is
undone, a synonym-like edit is not), and the human check (review items rated through the real
daemon, counted per recipe)."""
from __future__ import annotations

import json

import pytest

from modlens.analysis.report import render_html, report_from_db
from modlens.cli import main
from modlens.detectors import registry
from modlens.perturb import recipes
from modlens.perturb.recipes.char_greedy import char_transformations
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog

from daemon_helpers import Client, connect, rating_msg, running_daemon, study
from log_helpers import sql

N_ROWS = 12


@pytest.fixture(scope="module")
def audited(data_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rep")
    db = tmp / "log.sqlite"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MODLENS_HOME", str(tmp / "home"))
        assert main(["audit", str(data_dir / "noisyhate" / "dev.csv"), "--db", str(db), "--quiet", "--limit", str(N_ROWS),
                     "--detectors", "profanity-check", "minilm-toxicity", "--attack", "tae", "--targets",
                     "profanity-check", "--no-ensemble", "--max-queries", "60"]) == 0
    assert sql(db, "SELECT 1 FROM detectors WHERE name = 'minilm-toxicity'"), "minilm-toxicity did not load"
    return db, report_from_db(db)["sections"]["attacks"]


def test_rows_per_recipe_with_filters_and_words_changed(audited):
    db, section = audited
    (row,) = section["rows"]
    assert (row["recipe"], row["target"], row["goal"]) == ("char_greedy", "profanity-check", "TAE")
    attacks = [json.loads(r["attack_json"]) for r in sql(db, "SELECT attack_json FROM variants WHERE attack_json IS NOT NULL")]
    wins = [a for a in attacks if a["status"] == "success"]
    assert row["successes"] == len(wins) > 0
    assert row["words_changed_share"] == pytest.approx(sum(a["words_edited"] / a["n_words"] for a in wins) / len(wins))
    # the filters only remove: after <= before, and the counts add up
    assert row["success_after_filters"] == pytest.approx(row["kept"] / row["attempts"])
    assert row["kept"] <= row["successes"] and row["success_after_filters"] <= row["success_recorded"]
    summary = section["quality"]["summary"]
    assert summary["passed_every_filter"] == row["kept"] and summary["successes"] == row["successes"]
    assert summary["kept"] == row["kept"] + row["kept_not_checked"]  # failed no filter: checked by all, or not
    # no judges ran: the other detector's logged verdicts drop some successes (known for these 12 rows)
    assert row["filtered_out"].get("label", 0) > 0
    assert section["matrices"][0]["recipe"] == "char_greedy"
    rec = row["recovery"]
    assert rec["n"] == row["successes"] and 0 <= rec["recovered"] <= rec["n"]


def log_attack(lg, detectors, key, seed, v: Variant):
    """The seed as a comment, every detector's score of seed and text, and the variant."""
    cid = lg.add_comment("dataset", key, None, seed)
    for d in detectors:
        did = lg.ensure_detector(d.name, d.version, d.toxicity_label, d.threshold, {})
        for text, r in zip((seed, v.text), d.score([seed, v.text])):
            lg.add_score(text, did, r, d.toxicity(r), None, None)
    return lg.add_variant(cid, v)


@pytest.fixture(scope="module")
def two_recipes(tmp_path_factory):
    """A leet attack found by the real greedy attack (special_char) and a synonym-like edit
    ("idiot" -> "dolt", written out as a recipe result), both against profanity-check."""
    target = registry.create("profanity-check")
    seed = "you are an idiot"
    leet = recipes.create("char_greedy", transformations=char_transformations(["special_char"])).build(
        target, max_queries=60, max_edit_ratio=0.5).run(seed)
    assert leet.attack["status"] == "success" and leet.text != seed
    synonym_text = "you are a dolt"
    tox = target.toxicity(target.score([synonym_text])[0])
    assert tox < target.threshold  # the synonym fools it too (known: 0.036)
    synonym = Variant(text=synonym_text, strategy="recipe:synonym-like", params={"recipe": "synonym-like", "edits": []},
                      seed=0, source_text=seed, target_detector="profanity-check",
                      attack={"goal": "tae", "status": "success", "search": "hand", "queries": 1, "max_queries": 1,
                              "target": "profanity-check", "target_name": target.name, "target_version": target.version,
                              "threshold": target.threshold, "source_score": 1.0, "final_score": tox, "n_words": 4,
                              "words_edited": 2, "words_changed_share": 0.5, "recipe": "synonym-like",
                              "constraints": {"ensemble": {"judges": {}, "ok": True}}})
    db = tmp_path_factory.mktemp("two") / "log.sqlite"
    with StudyLog(db) as lg:
        log_attack(lg, [target], "c1", seed, leet)
        log_attack(lg, [target], "c2", seed, synonym)
    # written by hand, as an older modlens logged attacks: rescore adds the checks the report reads
    assert main(["rescore", str(db), "--detectors", "profanity-check", "--quiet"]) == 0
    return db, leet


def test_normalization_undoes_the_leet_attack_not_the_synonym(two_recipes):
    db, leet = two_recipes
    section = report_from_db(db)["sections"]["attacks"]
    rows = {r["recipe"]: r for r in section["rows"]}
    assert set(rows) == {"char_greedy", "synonym-like"}
    assert rows["char_greedy"]["recovery"] == {"n": 1, "recovered": 1, "share": 1.0, "unchanged": 0, "unmeasured": 0}
    assert rows["synonym-like"]["recovery"]["share"] == 0.0 and rows["synonym-like"]["recovery"]["unchanged"] == 1
    assert rows["synonym-like"]["words_changed_share"] == 0.5
    # one transfer matrix per recipe, labelled with it
    assert sorted(m["recipe"] for m in section["matrices"]) == ["char_greedy", "synonym-like"]
    assert set(section["transfer"]) == {"profanity-check (TAE, char_greedy)", "profanity-check (TAE, synonym-like)"}
    html = render_html(report_from_db(db))
    assert "undone by normalization" in html and "synonym-like" in html and "1.000 (1/1)" in html


async def test_review_items_rated_through_the_daemon_reach_the_report(two_recipes, tmp_path, capsys):
    db, leet = two_recipes
    folder = tmp_path / "st"
    assert main(["study", "init", str(folder)]) == 0
    assert main(["study", "add-attacks", str(folder), "--from", str(db), "--unfiltered"]) == 0
    assert main(["study", "add-attacks", str(folder), "--from", str(db), "--unfiltered"]) == 0  # idempotent
    from modlens.study import load
    review = load(folder).review
    assert sorted(r.text for r in review) == sorted([leet.text, "you are a dolt"])
    assert main(["study", "check", str(folder)]) == 0
    assert "2 attack texts to review" in capsys.readouterr().out

    cfg = study(review=[r.model_dump() for r in review])
    by_text = {r.text: r.key for r in review}
    async with running_daemon(tmp_path, cfg) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            hello = await c.hello()
            assert {r["key"] for r in hello["study"]["review"]} == set(by_text.values())
            # rater 1: the leet text is still toxic, the synonym too; rater 2: the synonym is not
            for rid, key, anchors in (("r1", by_text[leet.text], ("more", "same")),
                                      ("r2", by_text["you are a dolt"], ("more", "same"))):
                ack = await c.request(rating_msg(rid, key, platform="study", anchors=anchors), "rating_ok")
                assert ack["type"] == "rating_ok"
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello(rater="rater-2")
            ack = await c.request(rating_msg("r3", by_text["you are a dolt"], platform="study", anchors=("less", "less")),
                                  "rating_ok")
            assert ack["type"] == "rating_ok" and ack["derived_toxicity"] == "not toxic"
    labels = sql(tmp_path / "study.sqlite", "SELECT c.comment_key, l.name, l.value FROM labels l JOIN comments c "
                                            "USING (comment_id) WHERE l.name IN ('role', 'attack.recipe')")
    roles = {(r["comment_key"], r["name"]): r["value"] for r in labels}
    assert roles[(by_text[leet.text], "role")] == "review"
    assert roles[(by_text["you are a dolt"], "attack.recipe")] == "synonym-like"

    # the raters' log holds no attack results, only the reviewed texts: the section still shows them
    report = report_from_db(tmp_path / "study.sqlite")
    rows = {h["recipe"]: h for h in report["sections"]["attacks"]["human"]["rows"]}
    assert "Human check" in render_html(report)
    assert rows["char_greedy"]["ratings"] == 1 and rows["char_greedy"]["share_ratings_toxic"] == 1.0
    assert rows["synonym-like"]["ratings"] == 2 and rows["synonym-like"]["share_ratings_toxic"] == 0.5
    assert rows["synonym-like"]["items_majority_toxic"] == 0  # a tie is no majority
    # ... and the human-ratings statistics leave them out: machine-made texts are not the study's comments
    assert report["sections"]["human"]["excluded"]["attack text under review (reported with the attacks)"] == 3
    assert report["sections"]["human"]["n_valid"] == 0
