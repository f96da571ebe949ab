"""Word importance (NoisyHate Algorithm 1) and the variant generator the engine calls."""
from __future__ import annotations

import json

import pytest

from modlens.config import PerturbationConfig, StudyConfig
from modlens.perturb.generate import VariantGenerator, reproduce, word_slots
from modlens.perturb.importance import heuristic_ranking, rank_by_importance, word_importance, word_removals

DEFAULT = PerturbationConfig().strategies
TEXT = "Honestly, you are a stupid idiot (and a liar)."


def test_word_removals_and_one_batched_importance_call():
    assert word_removals("you  are dumb") == ["are dumb", "you dumb", "you are"]
    calls = []

    def score(texts):  # toxicity = 0.6 if "dumb" is present, + 0.1 per "you"
        calls.append(list(texts))
        return [0.6 * ("dumb" in t) + 0.1 * t.split().count("you") for t in texts]

    imp = word_importance("you are dumb", score)
    assert len(calls) == 1 and len(calls[0]) == 4
    assert imp == pytest.approx([0.1, 0.0, 0.6])
    assert rank_by_importance(imp, 0.05) == [2, 0]
    assert word_importance("a b", lambda t: [0.5, None, 0.1]) is None
    with pytest.raises(ValueError, match="returned 1 scores for 3 texts"):
        word_importance("a b", lambda t: [0.5])


def test_heuristic_prefers_long_content_words():
    assert heuristic_ranking("you are such a pathetic loser") == [4, 5, 2]  # pathetic, loser, such


def test_word_slots_skip_punctuation():
    slots = word_slots(TEXT)
    assert [s.core(TEXT) for s in slots][-3:] == ["and", "a", "liar"]
    assert slots[0].core(TEXT) == "Honestly" and slots[6].core(TEXT) == "and"


def importance_for(text, hot):
    """A drop of 0.8 for the listed words, 0 elsewhere."""
    return [0.8 if w.strip("(),.").lower() in hot else 0.0 for w in text.split()]


def test_generator_perturbs_only_important_words_and_records_everything():
    gen = VariantGenerator(DEFAULT, budget=7, seed=3, importance_threshold=0.5)
    assert gen.unavailable == {} or set(gen.unavailable) == {"human_lookup"}
    imp = importance_for(TEXT, {"idiot", "stupid"})
    variants = gen.generate(TEXT, importance=imp)
    assert len(variants) == min(7, len(gen.strategies))
    assert len({v.text for v in variants}) == len(variants) and TEXT not in {v.text for v in variants}
    # first round: one variant per strategy that applies; no common word hides in "stupid"/"idiot",
    # so mixed_case_plus sits out and the last slot comes from a second draw
    first = [v for v in variants if v.params["attempt"] == 0]
    assert len({v.strategy for v in first}) == len(first) == len(gen.strategies) - 1
    assert "mixed_case_plus" not in {v.strategy for v in variants}
    for v in variants:
        i = v.params["word_index"]
        assert v.params["word"] in ("idiot", "stupid") and v.params["importance"] == 0.8
        assert v.source_text == TEXT and v.seed == 3 and v.params["ranking"] == "importance"
        # outside the recorded spans the text is untouched
        (s, _), (_, e) = v.positions[0], v.positions[-1]
        assert v.text[:s] == TEXT[:s] and v.text[len(v.text) - (len(TEXT) - e):] == TEXT[e:]
        slot = word_slots(TEXT)[i]
        assert slot.core_start <= s and e <= slot.core_end
        assert reproduce(v).text == v.text
        json.dumps(v.to_dict())
    # the most important word comes first; a repeated draw moves on to the next word
    imp2 = importance_for(TEXT, {"stupid"})
    imp2[TEXT.split().index("idiot")] = 0.9
    ranked = gen.generate(TEXT, importance=imp2)
    assert all(v.params["word"] == "idiot" for v in ranked if v.params["attempt"] == 0)


def test_generator_is_deterministic_and_budgeted():
    gen = VariantGenerator(DEFAULT, budget=3, seed=0, importance_threshold=0.1)
    a = [v.to_dict() for v in gen.generate(TEXT)]
    b = [v.to_dict() for v in VariantGenerator(DEFAULT, budget=3, seed=0, importance_threshold=0.1).generate(TEXT)]
    assert a == b and len(a) == 3
    c = [v.to_dict() for v in VariantGenerator(DEFAULT, budget=3, seed=1, importance_threshold=0.1).generate(TEXT)]
    assert a != c
    # budget larger than the strategies: later rounds draw again, still no duplicates
    many = VariantGenerator(["repeat_char", "abbr"], budget=6, seed=0, importance_threshold=0.1).generate(TEXT)
    assert len(many) == 6 and len({v.text for v in many}) == 6
    assert {v.params["attempt"] for v in many} == {0, 1, 2}


def test_rare_strategies_get_turns_across_comments():
    """With a budget below the number of strategies, the per-text shuffle still gives every
    strategy its share over a corpus (NoisyHate's diversification)."""
    gen = VariantGenerator(DEFAULT, budget=2, seed=0, importance_threshold=0.1)
    used = set()
    for n in range(30):
        used |= {v.strategy for v in gen.generate(f"comment {n}: what a disgusting hypocrite")}
    assert used == set(gen.strategies)


def test_no_important_word_means_no_variants_and_bad_input_is_clear():
    gen = VariantGenerator(DEFAULT, budget=3, seed=0, importance_threshold=0.5)
    assert gen.generate(TEXT, importance=[0.1] * len(TEXT.split())) == []
    assert gen.generate("") == [] and gen.generate("   ") == []
    with pytest.raises(ValueError, match="importance has 2 values"):
        gen.generate(TEXT, importance=[0.9, 0.9])
    with pytest.raises(KeyError, match="unknown perturbation strategy"):
        VariantGenerator(["repeat_char", "typo"], budget=1, seed=0, importance_threshold=0.1)
    assert VariantGenerator(DEFAULT, budget=0, seed=0, importance_threshold=0.1).generate(TEXT) == []


def test_missing_lookup_table_is_reported_not_fatal(tmp_path):
    gen = VariantGenerator(["human_lookup", "abbr"], budget=3, seed=0, importance_threshold=0.1,
                           strategy_options={"human_lookup": {"path": tmp_path / "missing.json"}})
    assert "missing.json" in gen.unavailable["human_lookup"]
    assert {v.strategy for v in gen.generate(TEXT)} == {"abbr"}


async def test_engine_calls_the_generator_with_importance():
    """The engine's word_importance + variants path with a real (tiny) detector."""
    from modlens.detectors.base import Detector
    from modlens.engine import Engine

    class WordCount(Detector):  # toxicity rises with the number of "idiot"s: deterministic and real
        name, version, labels, toxicity_label = "idiot-counter", "1", ("toxic",), "toxic"

        def score(self, texts):
            return [{"toxic": min(1.0, 0.45 * t.lower().split().count("idiot"))} for t in texts]

    study = StudyConfig.model_validate({"normalizer": {"enabled": False},
                                        "perturbation": {"budget": 4, "importance_threshold": 0.3}})
    engine = Engine(study, detectors={"counter": WordCount()})
    try:
        variants = await engine.variants("you are an idiot and a fool")
    finally:
        await engine.close()
    assert len(variants) == 4
    assert all(v.params["word"] == "idiot" and v.target_detector == "counter" for v in variants)


@pytest.mark.slow  # a whole audit (or two) through the CLI
def test_logged_variants_reproduce_from_their_row_alone(data_dir, tmp_path, monkeypatch, capsys):
    """Every variant `audit --perturb` logs is made again by `reproduce` from its row (text, positions,
    params), strategy options from the study file included: the row records them as configured."""
    import sqlite3

    from modlens.cli import main
    from modlens.rows import Variant

    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    study = tmp_path / "study.toml"
    study.write_text('[perturbation]\nstrategies = ["repeat_char", "char_attack", "abbr", "mixed_case"]\n'
                     'strategy_options = { repeat_char = { min_extra = 6, max_extra = 6 }, '
                     'char_attack = { operations = ["char_swap", "key_substitute"] } }\n')
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(data_dir / "noisyhate" / "dev.csv"), "--study", str(study), "--db", str(db),
                 "--quiet", "--limit", "12", "--detectors", "profanity-check", "--perturb"]) == 0
    capsys.readouterr()
    con = sqlite3.connect(db)
    rows = con.execute("SELECT t.text, v.strategy, v.params_json, v.seed, v.positions_json, s.text FROM variants v "
                       "JOIN texts t ON t.text_id = v.text_id JOIN texts s ON s.text_id = v.source_text_id "
                       "WHERE v.attack_json IS NULL AND v.strategy NOT LIKE 'human:%'").fetchall()
    con.close()
    assert {r[1] for r in rows} == {"repeat_char", "char_attack", "abbr", "mixed_case"}
    for text, strategy, params, seed, positions, source in rows:
        v = Variant(text, strategy, json.loads(params), seed, [tuple(p) for p in json.loads(positions)], source)
        if strategy == "repeat_char":
            assert v.params["options"] == {"min_extra": 6, "max_extra": 6}
            assert all(n == 6 for _, n in v.params["edit"]["repeats"])
        again = reproduce(v)
        assert again is not None and (again.text, again.positions, again.params) == (v.text, v.positions, v.params)
