"""Seed sentences for DUO fusion: keyword pairs from the shipped data, templates, the oracle rule."""
from __future__ import annotations

import random

import pytest

from modlens.detectors import registry
from modlens.fusion import keywords
from modlens.fusion.keywords import KeywordPair
from modlens.fusion.seeds import OracleError, apply_oracle, make_seeds, no_oracle
from modlens.fusion.templates import TemplateError, is_plural, load_templates
from realtools import requires

pytestmark = requires("wordnet")


@pytest.fixture(scope="module")
def lexica() -> keywords.Lexica:
    return keywords.Lexica()


@pytest.fixture(scope="module")
def profanity():
    return registry.create("profanity-check")


def test_abuse_pairs_from_shipped_data_are_plausible(lexica):
    pairs = keywords.extract_pairs("abuse_hate", 15, random.Random(0), lexica)
    assert len(pairs) == 15
    groups = set(keywords.read_list("groups.txt"))
    stop = keywords.stoplist()
    for p in pairs:
        assert p.a in groups
        assert p.b.lower() != p.a.lower() and p.b.lower() not in p.a.lower().split()
        assert lexica.negativity(p.b) >= keywords.MIN_NEGATIVITY
        assert lexica.insult_kind(p.b) is not None
        assert p.b not in stop
    # HateCheck's target groups are named most often in the toxic rows: they lead the A ranking
    a_top = [c.word for c in keywords.candidates("abuse_hate", lexica)[0][:7]]
    assert set(a_top) == {"women", "trans people", "gay people", "black people", "disabled people", "Muslims",
                          "immigrants"}
    # every B is used once before any repeats: 15 pairs, 15 insults
    assert len({p.b for p in pairs}) == 15


def test_sexual_and_spam_pairs(lexica):
    sexual = keywords.extract_pairs("sexual", 10, random.Random(1), lexica)
    verbs = set(keywords.sexual_words("verb"))
    assert len(sexual) == 10
    for p in sexual:
        assert p.a in verbs
        assert lexica.organ(p.b) is not None or p.b in keywords.sexual_words("organ")
    spam = keywords.extract_pairs("spam", 5, random.Random(1), lexica)
    assert all(p.a in keywords.read_list("products.txt") for p in spam)
    assert all(p.b.split(":")[0] in ("Tel", "Email", "WhatsApp", "Ins") for p in spam)
    # the contact values are fictional: 555-01xx numbers and example.* addresses only
    for contact in keywords.read_list("contacts.txt"):
        value = contact.split(":", 1)[1]
        assert "555-01" in value or "example" in value


def test_extraction_is_seeded(lexica):
    one = keywords.extract_pairs("abuse_hate", 8, random.Random(3), lexica)
    two = keywords.extract_pairs("abuse_hate", 8, random.Random(3), lexica)
    other = keywords.extract_pairs("abuse_hate", 8, random.Random(4), lexica)
    assert [(p.a, p.b) for p in one] == [(p.a, p.b) for p in two]
    assert [(p.a, p.b) for p in one] != [(p.a, p.b) for p in other]


def test_pair_filters(lexica):
    assert keywords.pair_problem("abuse_hate", "women", "Women", lexica) == "A == B"
    assert "A is A" in keywords.pair_problem("abuse_hate", "gay people", "gay", lexica)
    assert "A is A" in keywords.pair_problem("abuse_hate", "idiots", "idiot", lexica)
    assert "nonsense" in keywords.pair_problem("abuse_hate", "women", "xqzvbt", lexica)
    assert keywords.pair_problem("abuse_hate", "women", "idiots", lexica) is None
    assert keywords.pair_problem("spam", "Tobacco", "Tel: 555-0142", lexica) is None


def test_templates_fill_with_number_agreement():
    templates = load_templates()
    assert set(templates) == {"A is/are B", "A: B", "A your/my B"}
    pairs = [KeywordPair("abuse_hate", "women", "pigs"), KeywordPair("abuse_hate", "Islam", "evil"),
             KeywordPair("abuse_hate", "gay people", "idiots"), KeywordPair("spam", "Tobacco", "Tel: 555-0142"),
             KeywordPair("sexual", "lick", "dick")]
    seeds = {s.a: s for s in make_seeds(pairs, templates, 0)}
    assert seeds["women"].text == "women are pigs" and seeds["women"].left == "women are"
    assert seeds["women"].right == "are pigs"
    assert seeds["Islam"].text == "Islam is evil"
    assert seeds["gay people"].text == "gay people are idiots"
    assert seeds["Tobacco"].text == "Tobacco: Tel: 555-0142" and seeds["Tobacco"].left == "Tobacco:"
    assert seeds["lick"].middle in ("your", "my") and seeds["lick"].text == f"lick {seeds['lick'].middle} dick"
    assert is_plural("Muslims") and is_plural("women") and not is_plural("Islam") and not is_plural("class")
    # the middle word is a seeded choice: the same seed gives the same sentence
    again = {s.a: s for s in make_seeds(pairs, templates, 0)}
    assert again["lick"].text == seeds["lick"].text
    middles = {make_seeds([pairs[-1]], templates, seed)[0].middle for seed in range(20)}
    assert middles == {"your", "my"}


def test_user_templates_extend_and_are_checked(tmp_path):
    extra = tmp_path / "more.toml"
    extra.write_text('[[template]]\nname = "B A"\ncontent_type = "abuse_hate"\npattern = "{a}, {middle} {b}"\n'
                     'middle = ["the"]\n', encoding="utf-8")
    templates = load_templates(extra)
    assert "B A" in templates and "A is/are B" in templates
    seeds = make_seeds([KeywordPair("abuse_hate", "women", "pigs")], templates, 0)
    assert {s.text for s in seeds} == {"women are pigs", "women, the pigs"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[[template]]\nname = "x"\ncontent_type = "abuse"\npattern = "{a} {middle} {b}"\nmiddle = ["is"]\n',
                   encoding="utf-8")
    with pytest.raises(TemplateError, match="content_type"):
        load_templates(bad)
    bad.write_text('[[template]]\nname = "x"\ncontent_type = "spam"\npattern = "{b} {middle} {a}"\nmiddle = ["is"]\n',
                   encoding="utf-8")
    with pytest.raises(TemplateError, match="in that order"):
        load_templates(bad)


def test_oracle_keeps_toxic_and_drops_benign_seeds(profanity):
    pairs = [KeywordPair("abuse_hate", "women", "bitches"), KeywordPair("abuse_hate", "women", "wonderful"),
             KeywordPair("abuse_hate", "immigrants", "stupid"), KeywordPair("abuse_hate", "Muslims", "kind")]
    seeds = make_seeds(pairs, load_templates(), 0)
    result = apply_oracle(seeds, {"profanity-check": profanity})
    assert [s.text for s in result.kept] == ["women are bitches", "immigrants are stupid"]
    assert [s.text for s in result.dropped] == ["women are wonderful", "Muslims are kind"]
    kept = result.kept[0]
    assert kept.oracle["toxic_by"] == ["profanity-check"] and kept.oracle["scores"]["profanity-check"] >= 0.5
    assert result.dropped[0].oracle["toxic_by"] == []
    assert result.verdicts() == {"women are bitches": ["profanity-check"], "immigrants are stupid": ["profanity-check"]}
    assert result.summary()["by_content_type"] == {"abuse_hate": {"kept": 2, "dropped": 2}}


def test_oracle_rules_any_and_all(profanity):
    strict = registry.create("profanity-check", threshold=0.999)  # a judge that only the crudest seed convinces
    seeds = make_seeds([KeywordPair("abuse_hate", "women", "bitches"), KeywordPair("abuse_hate", "immigrants", "stupid")],
                       load_templates(), 0)
    judges = {"lenient": profanity, "strict": strict}
    anyone = apply_oracle(seeds, judges, "any")
    everyone = apply_oracle(seeds, judges, "all")
    assert len(anyone.kept) == 2
    assert [s.text for s in everyone.kept] == ["women are bitches"]
    assert anyone.kept[1].oracle["toxic_by"] == ["lenient"]
    assert no_oracle(seeds).kept[0].oracle == {"rule": "off"}
    with pytest.raises(OracleError, match="text detector"):
        apply_oracle(seeds, {})
    with pytest.raises(ValueError):
        apply_oracle(seeds, judges, "most")


def test_pairs_file(tmp_path):
    f = tmp_path / "pairs.csv"
    f.write_text("content_type,a,b\nabuse_hate,women,pigs\nspam,Tobacco,\"Tel: 555-0142, ext 2\"\n", encoding="utf-8")
    pairs = keywords.read_pairs_file(f)
    assert [(p.content_type, p.a, p.b) for p in pairs] == [("abuse_hate", "women", "pigs"),
                                                           ("spam", "Tobacco", "Tel: 555-0142, ext 2")]
    f.write_text("hate,women,pigs\n", encoding="utf-8")
    with pytest.raises(keywords.KeywordError, match="content type"):
        keywords.read_pairs_file(f)
    f.write_text("abuse_hate,women\n", encoding="utf-8")
    with pytest.raises(keywords.KeywordError, match="3 columns"):
        keywords.read_pairs_file(f)


def test_oracle_rule_all_is_every_detector_that_answered(profanity):
    """`--oracle-rule all` (its help and docs/FUSION.md): every text detector that answered; a judge
    with no score for a seed neither keeps nor drops it, and the seed's record shows it did not answer."""
    from modlens.detectors.base import Detector

    class Silent(Detector):
        name, version, labels, toxicity_label = "silent", "1", ("toxicity",), "toxicity"

        def score(self, texts):
            return [None for _ in texts]

    seeds = make_seeds([KeywordPair("abuse_hate", "women", "bitches"), KeywordPair("abuse_hate", "women", "wonderful")],
                       load_templates(), 0)
    result = apply_oracle(seeds, {"lenient": profanity, "silent": Silent()}, "all")
    assert [s.text for s in result.kept] == ["women are bitches"]
    assert result.kept[0].oracle["toxic_by"] == ["lenient"] and result.kept[0].oracle["scores"]["silent"] is None
    assert apply_oracle(seeds, {"silent": Silent()}, "all").kept == []  # nobody answered: nothing vouched for
