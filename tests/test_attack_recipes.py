"""Recipes end to end on the embedded detectors (profanity-check, minilm-toxicity), offline:
every recipe builds, runs, records its parts and reproduces; a success really fools the
target; the CLI (`modlens attack`, `modlens audit --recipe`) lists, attacks and logs."""
import json
import sqlite3

import pytest

from modlens.cli import main
from modlens.detectors import registry as detectors
from modlens.perturb import recipes

SEEDS = ["you are a stupid idiot and nobody likes you", "what a pathetic moron, shut up",
         "this is bullshit and you know it"]


@pytest.fixture(scope="module")
def profanity():
    return detectors.create("profanity-check")


def check_result(v, target, recipe):
    a = v.attack
    assert v.strategy == f"recipe:{recipe}" and a["recipe"] == recipe and v.params["recipe"] == recipe
    assert a["status"] in ("success", "failed") and a["queries"] <= a["max_queries"]
    assert a["target_name"] == target.name and a["target_version"] == target.version
    assert v.params["transformations"] and v.params["search"]["key"] == a["search"]
    assert [c["key"] for c in v.params["constraints"]] == [k for k in a["constraints"] if k not in
                                                           ("max_edit_fraction", "ensemble", "unique")]
    tox = target.toxicity(target.score([v.text])[0])
    assert tox == pytest.approx(a["final_score"])  # the recorded score is the target's own
    if a["status"] == "success":
        assert tox < target.threshold <= a["source_score"] and v.text != v.source_text
        assert a["words_edited"] == len({(e["word_index"], e.get("insert_after", False)) for e in v.params["edits"]})
        assert 0 < a["words_changed_share"] <= 1


@pytest.mark.parametrize("recipe", recipes.available())
def test_every_recipe_on_profanity_check(profanity, recipe):
    attack = recipes.create(recipe).build(profanity, target_key="profanity-check")
    assert not attack.unavailable  # WordNet, the vectors and MiniLM all ship offline
    made = attack.run_many(SEEDS)
    for v in made:
        check_result(v, profanity, recipe)
    again = recipes.create(recipe).build(profanity, target_key="profanity-check").run(SEEDS[0])
    assert again.text == made[0].text and again.attack == made[0].attack  # seeded: reproducible


def test_character_recipes_flip_a_bag_of_words_detector(profanity):
    """profanity-check looks words up: a character edit of the slur is all it takes."""
    for recipe in ("deepwordbug", "toxictrap_char_greedy", "pwws"):
        made = recipes.create(recipe).build(profanity).run_many(SEEDS)
        assert sum(v.attack["status"] == "success" for v in made) >= 2, recipe


@pytest.mark.parametrize("recipe", ["toxictrap_char_greedy", "pwws", "textfooler", "toxictrap_combined_beam"])
def test_recipes_on_minilm_with_a_judge(minilm, profanity, recipe):
    attack = recipes.create(recipe).build(minilm, judges=[profanity], max_queries=150, target_key="minilm-toxicity")
    v = attack.run(SEEDS[0])
    check_result(v, minilm, recipe)
    ens = v.attack["constraints"]["ensemble"]
    if v.attack["status"] == "success":  # the judge still calls it toxic (TaeBench's AND rule)
        assert ens["ok"] and ens["judges"]["profanity-check"]["agrees"]
        assert profanity.toxicity(profanity.score([v.text])[0]) >= profanity.threshold


def test_similarity_constraint_is_applied(minilm):
    """A2T keeps sentence similarity >= 0.9: every text it returns passes that check."""
    from modlens.perturb.constraints import create
    from modlens.perturb.parts import apply_changes
    sim = create("sentence_similarity", threshold=0.9)
    attack = recipes.create("a2t").build(minilm)
    for text in SEEDS:
        v = attack.run(text)
        if v.params["edits"]:
            from modlens.perturb.parts import WordChange
            changes = [WordChange(**{k: (tuple(map(tuple, x)) if k == "spans" else x) for k, x in e.items()})
                       for e in v.params["edits"]]
            cand = apply_changes(text, changes)
            assert cand.text == v.text and sim.check_many(text, [cand]) == [None]


def test_edit_ratio_and_budget_overrides(profanity):
    attack = recipes.create("pwws").build(profanity, max_queries=5, max_edit_ratio=0.5)
    v = attack.run(SEEDS[0])
    assert v.attack["max_queries"] == 5 and v.attack["queries"] <= 5
    assert v.params["max_edit_fraction"] == 0.5
    assert v.attack["constraints"]["max_words_changed"]["fraction"] == 0.5
    with pytest.raises(ValueError, match="unknown recipe option"):
        recipes.create("pwws", width=3)


# --- CLI ------------------------------------------------------------------------------------

def test_cli_list_and_text(capsys):
    assert main(["attack", "--list"]) == 0
    out = capsys.readouterr().out
    for key in recipes.available():
        assert f"{key}: " in out
    assert "MiniLM sentence cosine" in out
    assert main(["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--text", SEEDS[0]]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["kind"] for x in lines] == ["source", "variant"]
    v = lines[1]
    assert v["strategy"] == "recipe:deepwordbug" and v["attack"]["status"] == "success"
    assert v["scores"]["profanity-check"]["above_threshold"] is False


def test_cli_errors_name_the_fix(capsys):
    assert main(["attack", "--recipe", "textfoler", "--target", "profanity-check", "--text", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown attack recipe 'textfoler'" in err and "did you mean textfooler" in err
    assert main(["attack", "--recipe", "pwws", "--text", "x"]) == 2
    assert "--target" in capsys.readouterr().err
    assert main(["attack", "--recipe", "pwws", "--target", "profanity-check"]) == 2
    assert "nothing to attack" in capsys.readouterr().err
    assert main(["attack", "--recipe", "pwws", "--target", "profanity-check", "--text", "x",
                 "--max-queries", "0"]) == 2
    assert "max_queries" in capsys.readouterr().err


def test_cli_dataset_and_audit_recipe_log_results(data_dir, tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    nh = str(data_dir / "noisyhate" / "dev.csv")
    assert main(["attack", nh, "--recipe", "deepwordbug", "--target", "profanity-check", "--db", str(db),
                 "--limit", "4", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary
    con = sqlite3.connect(db)
    rows = con.execute("SELECT strategy, target_detector, json_extract(attack_json, '$.recipe'), "
                       "json_extract(params_json, '$.search.key') FROM variants WHERE attack_json IS NOT NULL").fetchall()
    assert rows and all(r == ("recipe:deepwordbug", "profanity-check", "deepwordbug", "greedy_unk") for r in rows)
    n = len(rows)
    # the same attack again reuses every logged result; another recipe is another run
    assert main(["attack", nh, "--recipe", "deepwordbug", "--target", "profanity-check", "--db", str(db),
                 "--limit", "4", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["audit", nh, "--detector", "profanity-check", "--attack", "tae", "--recipe", "pwws",
                 "--db", str(db), "--limit", "4", "--quiet"]) == 0
    capsys.readouterr()
    strategies = [r[0] for r in con.execute("SELECT strategy FROM variants WHERE attack_json IS NOT NULL")]
    con.close()
    assert strategies.count("recipe:pwws") == n and strategies.count("recipe:deepwordbug") == n
    assert main(["audit", nh, "--attack", "tae", "--recipe", "pwws", "--strategies", "char_swap",
                 "--db", str(db), "--limit", "1", "--quiet"]) == 2
    assert "exclude each other" in capsys.readouterr().err


@pytest.mark.slow  # a whole audit (or two) through the CLI
def test_rerun_of_a_recipe_with_sentence_similarity_reuses_every_logged_attack(data_dir, tmp_path, capsys):
    """A recipe whose constraint loads MiniLM (textbugger: sentence_similarity) is the same attack
    before its first run as after it: the rerun's first items find their logged results too."""
    db = tmp_path / "log.sqlite"
    args = ["attack", str(data_dir / "noisyhate" / "dev.csv"), "--recipe", "textbugger", "--target",
            "profanity-check", "--no-ensemble", "--max-queries", "40", "--db", str(db), "--limit", "3", "--quiet"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM variants WHERE attack_json IS NOT NULL").fetchone()[0]
    attempts = sum(first[k] for k in ("success", "failed", "skipped"))  # "unknown" counts some of these again
    assert n == attempts > 0 and first["reused"] == 0
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]
    assert con.execute("SELECT count(*) FROM variants WHERE attack_json IS NOT NULL").fetchone()[0] == n
    assert again == {"success": 0, "failed": 0, "skipped": 0, "reused": attempts, "unknown": 0}
    con.close()
