"""Each normalizer step on its own (a pipeline of just that step), plus the pipeline's
bookkeeping: edits, spans, punctuation, version, bad input."""
from __future__ import annotations

import re

import pytest

from modlens.normalize.base import Normalized
from normalize_eval import aligned_tokens
from modlens.normalize.lexicon import load_lexicon
from modlens.normalize.pipeline import build_normalizer
from modlens.normalize.steps import DEFAULT_STEPS, STEPS
from modlens.normalize.steps.dropped_letters import dropped_cost
from modlens.normalize.steps.edit_distance import substitution_cost
from modlens.normalize.steps.mixed_case import MixedCase


def only(step):
    return build_normalizer([step])


def test_unicode_folds_lookalikes_invisibles_and_marks():
    n = only("unicode")
    assert n.normalize("іdіоt").text == "idiot"              # Cyrillic і and о
    assert n.normalize("ｓｔｕｐｉｄ").text == "stupid"         # full-width
    assert n.normalize("stu\u200bpid").text == "stupid"      # zero-width space
    assert n.normalize("crétin déplorable").text == "cretin deplorable"
    assert n.normalize("þig").text == "pig"
    assert n.normalize("привет мир").text == "привет мир"    # real Cyrillic words stay
    assert n.normalize("idiot").edits == []


def test_leet_chosen_by_dictionary():
    n = only("leet")
    assert n.normalize("stup1d").text == "stupid"    # 1 -> i
    assert n.normalize("ki11").text == "kill"        # 1 -> l
    assert n.normalize("m0r0n d@mn raci$t 5uck").text == "moron damn racist suck"
    assert n.normalize("dic1").text == "dick"        # unreadable symbol becomes a wildcard
    edit = n.normalize("id10t").edits[0]
    assert (edit.step, edit.original, edit.normalized) == ("leet", "id10t", "idiot")
    # numbers, prices and times are not leetspeak
    assert n.normalize("in 2020 at 10am for $500 or 3.5%").text == "in 2020 at 10am for $500 or 3.5%"


def test_placeholders_and_separated_letters():
    n = only("placeholder")
    assert n.normalize("st*pid").text == "stupid"
    assert n.normalize("f***").text == "fuck"
    assert n.normalize("i.d.i.o.t").text == "idiot"
    assert n.normalize("s-t-u-p-i-d").text == "stupid"
    assert n.normalize("well-known e.g. U.S.").text == "well-known e.g. U.S."


def test_spaced_letters_merge_and_report_span():
    n = only("spaced_letters")
    r = n.normalize("you are s t u p i d. really")
    assert r.text == "you are stupid. really"
    (edit,) = r.edits
    assert (edit.start, edit.end, edit.original) == (8, 20, "s t u p i d.")
    # a standalone "a" next to the run stays a word
    assert n.normalize("what a b i t c h").text == "what a bitch"
    assert n.normalize("rows p q r").text == "rows p q r"  # "pqr" is not a word


def test_repeat_keeps_legit_doubles():
    n = only("repeat")
    assert n.normalize("idiooooot").text == "idiot"
    assert n.normalize("gooooood").text == "good"
    assert n.normalize("kiiiilllll").text == "kill"
    assert n.normalize("crapp").text == "crap"
    assert n.normalize("good kill").edits == []


def test_mixed_case_folds_and_reports_hidden_word():
    n = only("mixed_case")
    r = n.normalize("democRATs are fine")
    assert r.text == "democrats are fine"
    assert r.edits[0].hidden == "rats" and r.edits[0].step == "mixed_case"
    assert n.normalize("NoNsEnSe").text == "nonsense"
    assert n.normalize("Hello WORLD").edits == []  # title and upper case are not mixed
    assert MixedCase().hidden("tRUMp", load_lexicon()) == "rump"


def test_dropped_letters_prefers_comment_words():
    n = only("dropped_letters")
    assert n.normalize("stpd").text == "stupid"
    assert n.normalize("idot").text == "idiot"
    assert n.normalize("libral").text == "liberal"
    assert dropped_cost("kil", "kill") < dropped_cost("kil", "kilo")  # a dropped double is cheap
    assert dropped_cost("xyz", "stupid") is None


def test_edit_distance_models_typos():
    n = only("edit_distance")
    assert n.normalize("haet").text == "hate"      # swapped neighbours
    assert n.normalize("ignorsnt").text == "ignorant"  # neighbouring key
    assert substitution_cost("s", "a") < substitution_cost("l", "r")


def test_pyspell_fallback_step():
    n = only("pyspell")
    assert n.normalize("stuipd").text == "stupid"
    assert n.normalize("the cat").edits == []


def test_pipeline_keeps_punctuation_case_and_token_count():
    n = build_normalizer()
    text = "You're an IDIOOOT, a st*pid m0r0n!!! (and democRATs)"
    r = n.normalize(text)
    assert r.text == "You're an IDIOT, a stupid moron!!! (and democrats)"
    assert len(r.text.split()) == len(text.split())
    for e in r.edits:
        assert text[e.start:e.end] == e.original and 0 < e.confidence <= 1
    assert n.normalize("idiot! !diot").text == "idiot! idiot"


def test_whitespace_and_unknown_words_survive():
    n = build_normalizer()
    text = "  Trudeau\tand   Xiaoming\nsaid   @john_doe #maga https://ex.com/a?b=1 \U0001F600 "
    assert n.normalize(text).text == text


def test_aligned_tokens_follow_splits_and_merges():
    n = build_normalizer()
    text = "you are s t u p i d. such idiotpeople x"
    r = n.normalize(text)
    assert r.text == "you are stupid. such idiot people x"
    assert aligned_tokens(text, r) == ["you", "are", "stupid.", "", "", "", "", "", "such",
                                       "idiot people", "x"]


def test_result_carries_name_and_version():
    a, b = build_normalizer(), build_normalizer(["leet"])
    r = a.normalize("idi0t")
    assert isinstance(r, Normalized) and r.normalizer == a.name and r.version == a.version
    assert a.version != b.version and len(a.version) == 12
    assert a.step_names == DEFAULT_STEPS and set(DEFAULT_STEPS) <= set(STEPS)


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="unknown normalizer step 'nope'"):
        build_normalizer(["nope"])
    with pytest.raises(TypeError, match="takes a str"):
        build_normalizer().normalize(None)
    assert build_normalizer().normalize("").text == ""


def test_word_split_cuts_joined_words_and_records_the_edit():
    n = build_normalizer()
    r = n.normalize("such idiotpeople, really")
    assert r.text == "such idiot people, really"
    (edit,) = r.edits
    assert (edit.start, edit.end, edit.original, edit.normalized, edit.step) == (
        5, 17, "idiotpeople,", "idiot people,", "word_split")
    assert 0.5 < edit.confidence <= 1
    assert n.normalize("Ihate women").text == "I hate women"   # not "Hate": keeps every letter
    assert n.normalize("IDIOTPEOPLE").text == "IDIOT PEOPLE"   # case kept as typed
    assert n.normalize("Women like you deserve todie.").text == "Women like you deserve to die."


def test_word_split_leaves_known_words_names_and_informal_spellings():
    n = build_normalizer()
    for text in ["notebook", "Facebook", "whatsoever", "my notebook and Facebook, whatsoever",
                 "Trudeau and Goodwin said", "ask Manchin", "blowin", "werent", "ahahahaha",
                 "retweeting", "@idiotpeople", "#idiotpeople", "https://idiotpeople.com",
                 "idiotpeople2020", "idiot'speople", "isit"]:
        assert not [e for e in n.normalize(text).edits if e.step == "word_split"], text
    assert n.normalize("hatefull").text == "hateful"   # a cheaper one-word repair wins
    assert n.normalize("IdiotPeople").text == "idiotpeople"   # mixed case is mixed_case's
    # a Title-case word may be a name: inside a sentence it is never cut, at a sentence's
    # start only after a one- or two-letter function word
    assert n.normalize("so Idiotpeople").text == "so Idiotpeople"
    assert n.normalize("Idiotpeople. Goodwin").text == "Idiotpeople. Goodwin"
    assert n.normalize("ok. Sosickening").text == "ok. So sickening"
    assert n.normalize("ok. idiotpeople").text == "ok. idiot people"


def test_contractions_written_without_their_apostrophe_stay_as_written():
    # docs/NORMALIZE.md: a dropped apostrophe ("werent") is an informal spelling, left alone. The
    # one-edit search used to read such a token as the fragment a tokenizer left of the
    # contraction ("weren", "hasn") or another word ("there", "they"): the negation or the verb lost
    n = build_normalizer()
    for text in ["they werent there", "it hasnt", "he hadnt", "theyre here", "theyll see", "youre wrong",
                 "we didnt", "it mightnt", "theyve gone", "youd know", "wouldve", "thered be"]:
        r = n.normalize(text)
        assert (r.text, r.edits) == (text, []), text
    # known as they stand, so the words around them are still read back, punctuation kept
    assert n.normalize("st*pid, werent they?").text == "stupid, werent they?"


def test_the_contraction_list_is_part_of_the_normalizers_version(monkeypatch):
    """An edit of `pipeline.CONTRACTION` changes what the normalizer writes, so it changes its version
    (a run's and a score's record of which normalizer made a text), with no revision bumped by hand."""
    from modlens.normalize import pipeline

    before = build_normalizer().normalize("they werent there")
    monkeypatch.setattr(pipeline, "CONTRACTION", re.compile(pipeline.CONTRACTION.pattern.replace("|were|", "|")))
    after = build_normalizer().normalize("they werent there")
    assert (before.text, after.text) == ("they werent there", "they weren there")
    assert before.version != after.version


def test_word_split_only_when_listed_and_punctuation_runs_do_not_crash():
    assert build_normalizer(["leet"]).normalize("idiotpeople").text == "idiotpeople"
    assert only("word_split").normalize("muchdisdain").text == "much disdain"
    n = build_normalizer()
    # "?!" after a word, a literal "?" inside one: once an IndexError
    assert n.normalize('that?! bitch?!? butt?!" don?t').text == 'that?! bitch?!? butt?!" don?t'
    assert n.normalize("f***?! !diot?!").text == "fuck?! idiot?!"


def test_cli_file_not_utf8_is_a_clear_error_after_the_lines_before_it(tmp_path, capsys):
    """`modlens normalize --file`: a line that is not UTF-8 stops the command with its line number and
    a fix (not a traceback), after every line before it was normalized and printed; CRLF files read
    like LF ones and a byte-order mark is not part of the first text."""
    import json

    from modlens.cli import main

    f = tmp_path / "comments.txt"
    f.write_bytes(b"\xef\xbb\xbfhello idiooot\r\nst*pid\r\ncaf\xe9 st*pid\r\nlast one\r\n")
    assert main(["normalize", "--file", str(f)]) == 2
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [x["text"] for x in lines] == ["hello idiooot", "st*pid"]
    assert [x["normalized"] for x in lines] == ["hello idiot", "stupid"]
    assert "line 3 is not UTF-8" in err and "Traceback" not in err and "fix:" in err
