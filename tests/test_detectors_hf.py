"""hf-classifier, loaded from a tiny random BERT classifier saved in tmp_path: the same code
path a hub model takes (tokenizer, length-sorted batches, truncation, label map, device)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.hf_presets import PRESETS, preset
from realtools import requires

WORDS = "you are a stupid idiot have nice day the cat sat on mat hate love people".split()
LABEL_MAP = {"LABEL_0": "ok", "LABEL_1": "rude", "LABEL_2": "hate"}


def save_tiny_bert(path, *, seed=0, multi_label=False):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    path.mkdir(parents=True, exist_ok=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(str(path))
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=3,
                        problem_type="multi_label_classification" if multi_label else None)
    BertForSequenceClassification(config).save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def reference_probs(model_dir, text, max_length, sigmoid=False):
    """Independent forward pass, one text at a time, no modlens code."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        logits = model(**tok([text], truncation=True, max_length=max_length, return_tensors="pt")).logits[0]
    return (torch.sigmoid(logits) if sigmoid else torch.softmax(logits, -1)).numpy()


def test_local_dir_labels_batching_and_reference(tiny):
    det = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude",
                          batch_size=2, max_length=32)
    assert det.labels == ("ok", "rude", "hate") and det.toxicity_label == "rude"
    assert det.device == "cpu" and det.dtype == "float32"  # auto on a machine without CUDA
    # a local folder by its name and content hash, never its path (logs travel in bundles)
    # the folder's file hash in the version; its name (never its path) in the config, logged beside
    assert det.version.startswith("dir.") and tiny.name not in det.version
    assert det.config()["model"] == tiny.name and str(tiny) not in json.dumps(det.config())
    texts = ["the cat sat on the mat and the cat sat", "you are a stupid idiot", "hi", "have a nice day people"]
    out = det.score(texts)  # length-sorted inside, 2 per batch: order must come back intact
    for text, scores in zip(texts, out):
        ref = reference_probs(tiny, text, 32)
        got = np.array([scores["ok"], scores["rude"], scores["hate"]])
        np.testing.assert_allclose(got, ref, atol=1e-5)
        assert abs(sum(scores.values()) - 1.0) < 1e-5
        assert det.toxicity(scores) == scores["rude"]
    assert det.score([]) == []


def test_calls_take_several_forward_passes_of_batch_size_rows(tiny):
    from modlens.detectors.base import FORWARDS_PER_CALL

    det = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude", batch_size=3)
    assert det.max_batch == 3 * FORWARDS_PER_CALL  # what the batcher may hand over in one call
    rows = []
    forward = det.model.forward
    det.model.forward = lambda **kw: rows.append(kw["input_ids"].shape[0]) or forward(**kw)
    det.score([f"comment number {i} " + "word " * (i % 5) for i in range(det.max_batch)])
    assert rows == [3] * FORWARDS_PER_CALL


def test_truncation_to_max_length(tiny):
    det = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude", max_length=12)
    long_text = " ".join(WORDS * 20)  # 300 tokens, far past the model's 64 positions
    prefix = " ".join((WORDS * 20)[:10])  # 10 words + [CLS] + [SEP] = 12 tokens
    long_scores, prefix_scores = det.score([long_text, prefix])
    for label in det.labels:
        assert long_scores[label] == pytest.approx(prefix_scores[label], abs=1e-6)


def test_multi_label_sigmoid_and_combined_toxicity(tmp_path):
    model_dir = save_tiny_bert(tmp_path / "ml", seed=1, multi_label=True)
    det = registry.create("hf-classifier", model=str(model_dir), label_map=LABEL_MAP, toxicity_label=["rude", "hate"])
    assert det.multi_label  # taken from the config's problem_type
    (scores,) = det.score(["you are a stupid idiot"])
    ref = reference_probs(model_dir, "you are a stupid idiot", det.max_length, sigmoid=True)
    np.testing.assert_allclose([scores["ok"], scores["rude"], scores["hate"]], ref, atol=1e-5)
    assert det.toxicity_label == "toxicity"
    assert scores["toxicity"] == pytest.approx(min(1.0, scores["rude"] + scores["hate"]))
    soft = registry.create("hf-classifier", model=str(model_dir), label_map=LABEL_MAP, toxicity_label="rude",
                           multi_label=False)
    assert sum(v for v in soft.score(["hi"])[0].values()) == pytest.approx(1.0)


def test_version_tracks_weights_and_configuration(tiny, tmp_path):
    a = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude")
    same = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude")
    other_label = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="hate")
    shorter = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude", max_length=16)
    reseeded = save_tiny_bert(tmp_path / "copy", seed=5)
    retrained = registry.create("hf-classifier", model=str(reseeded), label_map=LABEL_MAP, toxicity_label="rude")
    assert a.version == same.version
    assert len({a.version, other_label.version, shorter.version}) == 3
    assert a.version.split("+cfg.")[0] != retrained.version.split("+cfg.")[0]


def test_a_local_folder_renamed_or_moved_keeps_its_version(tiny, tmp_path):
    """The same files under another folder name score the same, so they are the same version: the
    version names the files' bytes and the options, not where or under which name they lie."""
    import shutil

    moved = shutil.copytree(tiny, tmp_path / "elsewhere" / "renamed-model")
    a = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude")
    b = registry.create("hf-classifier", model=str(moved), label_map=LABEL_MAP, toxicity_label="rude")
    texts = ["you are a stupid idiot", "have a nice day"]
    assert b.score(texts) == a.score(texts)
    assert b.version == a.version
    assert a.config()["model"] == tiny.name and b.config()["model"] == "renamed-model"  # logged beside, by name


def test_unmapped_binary_defaults_and_bad_options(tiny):
    det = registry.create("hf-classifier", model=str(tiny), toxicity_label="LABEL_2")
    assert det.labels == ("LABEL_0", "LABEL_1", "LABEL_2")
    with pytest.raises(DetectorUnavailable) as err:  # three labels: which one is toxic must be said
        registry.create("hf-classifier", model=str(tiny))
    assert err.value.status == "error" and "toxicity_label" in err.value.fix
    with pytest.raises(DetectorUnavailable, match="not among"):
        registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="toxic")
    with pytest.raises(DetectorUnavailable, match="one name"):
        registry.create("hf-classifier", model=str(tiny), label_map={"LABEL_0": "x", "LABEL_1": "x"}, toxicity_label="x")
    with pytest.raises(DetectorUnavailable, match="dtype"):
        registry.create("hf-classifier", model=str(tiny), toxicity_label="LABEL_1", dtype="int3")
    with pytest.raises(TypeError):
        det.score("not a list")
    with pytest.raises(TypeError):
        det.score(["ok", None])


@requires("no-gpu")
def test_cuda_requested_without_cuda_is_a_status(tiny):
    with pytest.raises(DetectorUnavailable, match="CUDA"):
        registry.create("hf-classifier", model=str(tiny), toxicity_label="LABEL_1", device="cuda")


@requires("gpu")
def test_cuda_half_precision_matches_cpu(tiny):
    cpu = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude", device="cpu")
    gpu = registry.create("hf-classifier", model=str(tiny), label_map=LABEL_MAP, toxicity_label="rude")
    assert gpu.device == "cuda" and gpu.dtype == "float16"
    texts = ["you are a stupid idiot", "have a nice day"]
    for c, g in zip(cpu.score(texts), gpu.score(texts)):
        assert g["rude"] == pytest.approx(c["rude"], abs=2e-2)


def test_missing_weights_offline_is_a_fast_status(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-cache"))
    t0 = time.perf_counter()
    st = registry.status("hf-classifier", preset="unitary/toxic-bert")
    assert time.perf_counter() - t0 < 20  # no network retries
    assert st.status == "missing_weights"
    assert st.fix == "run once online: hf download unitary/toxic-bert"
    assert registry.status("hf-classifier").status == "needs_options"  # no model configured yet
    with pytest.raises(DetectorUnavailable) as err:
        registry.create("hf-classifier", preset="no/such-preset")
    assert err.value.status == "error"


def test_presets_name_their_toxicity_label():
    assert len(PRESETS) == 7
    for name in PRESETS:
        opts = preset(name)
        assert opts["model"] == name
        targets = set(opts["label_map"].values()) or {opts["toxicity_label"]}
        assert opts["toxicity_label"] in targets
        assert isinstance(opts["multi_label"], bool)
