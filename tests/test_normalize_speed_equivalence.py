"""The fast paths of the normalizer give exactly the answers of the slow ones they replaced.

The oracles below are the straightforward versions the pipeline used before it was made fast
on tweet streams (a regex compiled per wildcard guess, a regex per dropped-letter search,
every one-edit spelling costed before the lexicon look-up, no shortcut for tokens holding
an unrewritable character). The sample is the first 2,000 Davidson tweets plus NoisyHate
dev's perturbed sentences; every pattern, word and spelling the pipeline asked about while
normalizing it is checked against the oracle, and whole outputs are compared with the
shortcut on and off. Speed itself is measured in bench/bench_normalize.py, not here.
"""
from __future__ import annotations

import csv
import re
from functools import lru_cache

import pytest

from modlens.datasets.noisyhate import read_pairs as load_noisyhate
from modlens.normalize.lexicon import Lexicon
from modlens.normalize.pipeline import Normalizer
from modlens.normalize.steps import make_step
from modlens.normalize.steps._base import Step
from modlens.normalize.steps.edit_distance import known_edits, one_edit

N_TWEETS = 2000


# ---- oracles: the previous implementations, kept slow and obvious ----------------------------
@lru_cache(maxsize=None)  # holds the lexicon, so its words are joined once per group
def blob(lexicon: Lexicon, group: str, key) -> str:
    return "\n".join(getattr(lexicon, group).get(key, []))


def oracle_match(lexicon: Lexicon, pattern: str, wildcard: str = "?") -> list[str]:
    regex = "^" + "".join("[a-z]" if c == wildcard else re.escape(c) for c in pattern) + "$"
    return re.findall(regex, blob(lexicon, "by_length", len(pattern)), re.M)


def oracle_supersequences(lexicon: Lexicon, short: str, max_extra: int) -> list[str]:
    gap = f"[a-z]{{0,{max_extra}}}"
    regex = "^" + re.escape(short[0]) + "".join(gap + re.escape(c) for c in short[1:]) + gap + "$"
    found = re.findall(regex, blob(lexicon, "by_initial", short[0]), re.M)
    return [w for w in found if len(short) < len(w) <= len(short) + max_extra]


def oracle_known_edits(word: str, lexicon: Lexicon) -> list[tuple[str, float]]:
    return [(candidate, cost) for candidate, cost in one_edit(word) if candidate in lexicon]


# ---- the sample, normalized once with every question recorded --------------------------------
@pytest.fixture(scope="module")
def sample(data_dir) -> list[str]:
    with (data_dir / "davidson" / "labeled_data.csv").open(newline="", encoding="utf-8") as f:
        tweets = [row["tweet"] for _, row in zip(range(N_TWEETS), csv.DictReader(f))]
    return tweets + [p.perturbed for p in load_noisyhate(data_dir / "noisyhate" / "dev.csv")]


def recording(calls: list, method):
    def record(*args):
        calls.append(args)
        return method(*args)
    return record


@pytest.fixture(scope="module")
def full_search(sample):
    """Outputs with the unrewritable-character shortcut off (the pipeline searches every
    token as it used to), and what it asked the lexicon and the edit-distance step."""
    lexicon = Lexicon()
    normalizer = Normalizer(lexicon=lexicon)
    assert normalizer._rewritable is not None  # on by default: turned off here on purpose
    normalizer._rewritable = None
    asked: dict[str, list] = {"match": [], "supersequences": [], "edits": []}
    lexicon.match = recording(asked["match"], lexicon.match)
    lexicon.supersequences = recording(asked["supersequences"], lexicon.supersequences)
    edit_step = next(s for s in normalizer.search_steps if s.name == "edit_distance")
    edit_step.candidates = recording(asked["edits"], edit_step.candidates)
    outputs = [normalizer.normalize(text).to_dict() for text in sample]
    return lexicon, outputs, asked


@pytest.mark.slow
def test_wildcard_match_equals_regex_oracle(full_search):
    lexicon, _, asked = full_search
    patterns = sorted({args[0] for args in asked["match"]})
    assert len(patterns) > 10_000  # leet symbols in tweets make many guesses
    found = 0
    for pattern in patterns:
        expected = oracle_match(lexicon, pattern)
        assert lexicon.match(pattern) == expected, pattern
        found += bool(expected)
    assert found > 0  # some guesses do hit words, so order and content are both checked


def test_supersequences_equal_regex_oracle(full_search):
    lexicon, _, asked = full_search
    questions = sorted(set(asked["supersequences"]))
    assert len(questions) > 100
    assert any(oracle_supersequences(lexicon, *q) for q in questions)
    for short, max_extra in questions:
        assert lexicon.supersequences(short, max_extra) == oracle_supersequences(lexicon, short, max_extra)


def test_edit_candidates_equal_one_edit_oracle(full_search):
    lexicon, _, asked = full_search
    words = sorted({hyp.text for hyp, _ in asked["edits"] if hyp.text.isalpha() and len(hyp.text) >= 3})
    assert len(words) > 100
    for word in words:
        assert list(known_edits(word, lexicon)) == oracle_known_edits(word, lexicon), word


@pytest.mark.slow
def test_unrewritable_shortcut_changes_no_output(sample, full_search):
    _, full, _ = full_search
    normalizer = Normalizer(lexicon=Lexicon())
    skipped = []
    normalizer.candidates = recording(skipped, normalizer.candidates)
    assert [normalizer.normalize(text).to_dict() for text in sample] == full
    # the shortcut really fired: tweets are full of HTML entities ("&#8220;@user")
    assert sum(";" in args[0] for args in skipped) > 100


def test_shortcut_rules_out_only_what_no_step_can_reach():
    normalizer = Normalizer()
    assert normalizer.candidates("wouldn&#8217;t") == []
    # "!" is a leet symbol and "*" a placeholder: still searched
    assert normalizer.candidates("st*pid") and normalizer.candidates("b!tch")
    assert normalizer.normalize("you @sshole").text == "you asshole"


def test_shortcut_is_off_when_a_step_does_not_declare_its_symbols():
    class Opaque(Step):  # a rewrite step that might turn any character into a letter
        name, kind = "opaque", "rewrite"

        def expand(self, hyps, lexicon):
            return hyps

    normalizer = Normalizer(["leet"])
    assert normalizer._rewritable is not None
    normalizer.rewrite_steps.append(Opaque())
    assert normalizer._rewritable_symbols() is None
    normalizer.search_steps.append(type("Loose", (Step,), {"name": "loose", "kind": "search"})())
    normalizer.rewrite_steps.pop()
    assert normalizer._rewritable_symbols() is None  # a search step that may take non-letters
    assert make_step("edit_distance").letters_only and make_step("leet").symbols


def test_lexicon_with_non_letters_falls_back_to_the_regex(tmp_path):
    path = tmp_path / "lexicon.txt"
    path.write_text("# word\tfreq\toffensiveness\nidiot\t5\t1\no'clock\t3\t0\nnaïve\t2\t0\n"
                    "stupid\t9\t1\nst8pid\t1\t0\n", encoding="utf-8")
    lexicon = Lexicon(path)
    assert not lexicon.plain_letters
    assert not Normalizer(lexicon=lexicon)._rewritable  # shortcut off for such a lexicon
    # a wildcard stands for a-z only, never for a digit or a quote
    for pattern in ("st?pid", "o?clock", "o'?lock", "na?ve", "?????", "??????"):
        assert lexicon.match(pattern) == oracle_match(lexicon, pattern), pattern
    assert lexicon.match("st?pid") == ["stupid"]
    for short in ("stpd", "oclk", "nve", "idt"):
        assert lexicon.supersequences(short, 3) == oracle_supersequences(lexicon, short, 3), short
