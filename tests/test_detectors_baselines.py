"""profanity-check (lexical baseline) and the optional Keras Jigsaw BiLSTM."""
from __future__ import annotations

import importlib.util
from importlib import metadata

import pytest

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from realtools import requires


def test_profanity_check_scores_and_version():
    det = registry.create("profanity-check")
    assert det.version.startswith("alt-profanity-check.") and len(det.version) == len("alt-profanity-check.") + 12
    assert det.labels == ("offensive",) and det.toxicity_label == "offensive"
    rude, kind, empty = det.score(["you are a stupid fucking idiot", "have a nice day", ""])
    assert det.toxicity(rude) > 0.9 > 0.2 > det.toxicity(kind)
    assert 0.0 <= empty["offensive"] <= 1.0
    assert det.score([]) == []
    with pytest.raises(TypeError):
        det.score("one string")
    with pytest.raises(TypeError):
        det.score([b"bytes"])


def test_profanity_check_scores_as_the_package_does():
    """It loads the package's fitted files itself (to version their bytes): its scores are still the
    package's own predict_prob, exactly."""
    from profanity_check import predict_prob

    texts = ["shit happens", "what a lovely view", "idiots everywhere", "you are a stupid fucking idiot", ""]
    assert [s["offensive"] for s in registry.create("profanity-check").score(texts)] == list(predict_prob(texts))


def test_profanity_check_batch_equals_single():
    det = registry.create("profanity-check")
    texts = ["shit happens", "what a lovely view", "idiots everywhere"]
    assert [s["offensive"] for s in det.score(texts)] == pytest.approx(
        [det.score([t])[0]["offensive"] for t in texts])


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None
                    and importlib.util.find_spec("toxic_classifier") is not None,
                    reason="the Keras models are installed here")
def test_jigsaw_bilstm_without_tensorflow_is_a_status():
    st = registry.status("jigsaw-bilstm")
    assert st.status == "missing_dependency"
    assert "pip install" in st.fix and "toxic-comment-classifier" in st.fix
    with pytest.raises(DetectorUnavailable):
        registry.create("jigsaw-bilstm")


@requires("keras")
def test_jigsaw_bilstm_six_labels():
    det = registry.create("jigsaw-bilstm")
    insult, greeting = det.score(["you are so dumb and stupid", "have a nice day"])
    assert set(insult) == {"toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"}
    assert insult["toxic"] > greeting["toxic"]


def _package_data(tmp_path, name="data"):
    """A copy of the files alt-profanity-check scores with (its fitted model and vectorizer)."""
    import shutil
    from importlib import resources

    return shutil.copytree(resources.files("profanity_check") / "data", tmp_path / name)


def test_profanity_check_version_is_the_bytes_it_scores_with(tmp_path):
    """The version follows the fitted files' bytes, not the package's version number: a vectorizer
    refit (here one idf weight changed) under the same package version scores differently and is
    another version; the same files in another folder are the same version."""
    import joblib

    from modlens.detectors.profanity import load

    shipped = registry.create("profanity-check")
    moved = load(_package_data(tmp_path, "elsewhere"))
    changed_dir = _package_data(tmp_path)
    vectorizer = joblib.load(changed_dir / "vectorizer.joblib")
    idf = vectorizer.idf_.copy()
    idf[vectorizer.vocabulary_["idiot"]] *= 3
    vectorizer.idf_ = idf
    joblib.dump(vectorizer, changed_dir / "vectorizer.joblib")
    changed = load(changed_dir)
    texts = ["what an idiot this guy is", "have a nice day"]
    assert moved.version == shipped.version and moved.score(texts) == shipped.score(texts)
    assert changed.score(texts)[0]["offensive"] != pytest.approx(shipped.score(texts)[0]["offensive"], abs=1e-6)
    assert changed.version != shipped.version
    assert changed.config()["package_version"] == shipped.config()["package_version"] == \
        metadata.version("alt-profanity-check")
