"""The six-label head (minilm-toxicity-6): exclusion of benchmark texts, reproducible training,
the shipped head's fit texts, the detector's six labels and what `modlens detectors` lists."""
from __future__ import annotations

import numpy as np
import pytest

from modlens.detectors.exclusion import benchmark_texts, exclusion_mask, keys
from modlens.detectors.head import Labelled
from modlens.detectors.head_multi import LABELS, MultiHead, fit, train_six
from modlens.detectors.minilm6 import DEFAULT_HEAD6
from modlens.trainingdata import HASHES_SUFFIX, contains, read_hashes


def test_exclusion_rules_catch_near_duplicates():
    bench = {"b": ["RT @x: Those hoes is madddd that you left them behind o&#8230;", "I h8 you 100 times"]}
    pool = ["those hoes is madddd that you left them behind",   # the pool dropped the cut last word and the mention
            "I h8 you 200 times",                              # digits differ: loose key
            "THOSE hoes is MADDDD that, you left them behind o",
            "a different comment entirely"]
    mask, counts = exclusion_mask(pool, bench)
    assert mask == [True, True, True, False]
    assert counts["b"]["removed"] == 3 and counts["b"]["texts"] == 2
    assert set(keys("one two three four five")) == {"exact", "loose", "cut"} and "cut" not in keys("one two")


def test_shipped_head_holds_no_benchmark_text_but_11_davidson_tweets():
    """Out of sample by construction, but for 11 Davidson tweets the exclusion's keys missed: no text of
    HateCheck, NoisyHate dev (or SASS when here) is among the shipped head's fit texts (looked up by
    `trainingdata.contains`), and 11 of Davidson's are, held as the pool cleaned them ("Wowwww this"
    cut at its "www"), so the report marks the head partly in-sample on Davidson."""
    hashes = read_hashes(DEFAULT_HEAD6.with_name(DEFAULT_HEAD6.name.removesuffix(".json") + HASHES_SUFFIX))
    head = MultiHead.load(DEFAULT_HEAD6)
    assert len(hashes) > 0.95 * head.meta["training"]["n_train"]
    for name, texts in benchmark_texts().items():
        assert contains(hashes, texts).count(True) == (11 if name == "davidson" else 0), name
    assert head.meta["training"]["exclusion"]["davidson"]["removed"] >= 24700


def test_fit_is_deterministic_and_learns():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8))
    y = np.stack([1 / (1 + np.exp(-x[:, 0] * 3)), (x[:, 1] > 0).astype(float)], 1)
    w1, b1 = fit(x, y)
    w2, b2 = fit(x, y)
    assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    assert w1[0, 0] > 1 and w1[1, 1] > 1


class StubTeacher:
    """Six 'teacher' probabilities from word lists (the real teacher has its own test)."""
    sha256 = "stub"

    def predict(self, texts):
        from modlens.detectors.jigsaw_teacher import LABELS as TL
        words = {"toxic": ("idiot", "stupid", "hate"), "severe_toxic": ("hate",), "obscene": ("damn",),
                 "threat": ("kill",), "insult": ("idiot", "stupid"), "identity_hate": ("hate",)}
        return np.asarray([[0.9 if any(w in t for w in words[lab]) else 0.05 for lab in TL] for t in texts])


@pytest.fixture(scope="module")
def encoder():
    from modlens.detectors.minilm import SentenceEncoder
    return SentenceEncoder(device="cpu", batch_size=16)


def test_train_six_reproduces_its_file(tmp_path, encoder):
    texts = [f"you stupid idiot number {i}" for i in range(12)] + [f"I will kill you at {i}" for i in range(6)] + \
            [f"a calm note about {w} today" for w in ("gardening", "tea", "rain", "maps", "bread", "music", "trains", "clouds",
                                                  "chess", "rivers", "lamps", "owls")] + [f"women and gay people meet on day {i}" for i in range(10)]
    gold = np.asarray([1] * 18 + [0] * 22, dtype=np.int8)
    data = Labelled(texts, gold, "synthetic.csv", "0" * 64, 0)
    bench = {"hatecheck": ["A calm note about GARDENING today!"]}
    heads = []
    for run in range(2):
        head, fit_texts = train_six(data, encoder, StubTeacher(), sample=30, seed=7, test_size=0.2, benchmarks=bench,
                                    cache=tmp_path / "cache" if run else None)
        heads.append(head.save(tmp_path / f"h{run}.json").read_bytes())
        assert "a calm note about gardening today" not in fit_texts
        assert head.meta["training"]["exclusion"]["hatecheck"]["removed"] == 1
    assert heads[0] == heads[1]
    loaded = MultiHead.load(tmp_path / "h0.json")
    assert loaded.labels == LABELS and loaded.weights.shape == (6, encoder.dim)


def test_detector_six_labels_in_unit_interval_and_listed():
    from modlens.detectors import registry

    det = registry.create("minilm-toxicity-6", batch_size=16)
    try:
        scores = det.score(["you are a stupid idiot", "have a nice day", "I will kill you"])
        assert all(set(s) == set(LABELS) and all(0.0 <= v <= 1.0 for v in s.values()) for s in scores)
        assert scores[0]["insult"] > scores[1]["insult"] and scores[2]["threat"] > scores[1]["threat"]
        assert det.version.startswith("minilm-l6.") and "+head6." in det.version
        assert det.training is not None and det.training.datasets == ("jigsaw-toxic",)
    finally:
        det.close()
    st = registry.status("minilm-toxicity-6", batch_size=16)
    assert st.status == "loaded" and set(st.extra["labels"]) == set(LABELS)
    assert all("Jigsaw" in v and v.startswith(k + ".") for k, v in st.extra["labels"].items())


def test_exclusion_removes_benchmark_texts_held_as_the_pool_cleaned_them():
    """The exclusion keys benchmark texts as the report looks them up (`trainingdata.lookup_keys`): the
    11 Davidson tweets the shipped head was fit on, as the pool held them ("Wowwww this bitch" cut at
    its "www" to "Wow bitch"), are excluded from a pool that holds them so."""
    import hashlib

    from modlens.trainingdata import HASH_BYTES, lookup_keys

    hashes = {int(h) for h in read_hashes(DEFAULT_HEAD6.with_name(DEFAULT_HEAD6.name.removesuffix(".json") + HASHES_SUFFIX))}
    davidson = benchmark_texts(sass_dir=None)["davidson"]
    held = [k for t in davidson for k in lookup_keys(t)
            if int.from_bytes(hashlib.sha256(k.encode()).digest()[:HASH_BYTES], "big") in hashes]
    assert len(held) == 11  # the pool rows the shipped head's exclusion missed, as the pool wrote them
    mask, counts = exclusion_mask(held, {"davidson": davidson})
    assert mask == [True] * 11
    assert counts["davidson"]["cleaned"] == 11
