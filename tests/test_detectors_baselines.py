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
    assert det.version == f"alt-profanity-check-{metadata.version('alt-profanity-check')}"
    assert det.labels == ("offensive",) and det.toxicity_label == "offensive"
    rude, kind, empty = det.score(["you are a stupid fucking idiot", "have a nice day", ""])
    assert det.toxicity(rude) > 0.9 > 0.2 > det.toxicity(kind)
    assert 0.0 <= empty["offensive"] <= 1.0
    assert det.score([]) == []
    with pytest.raises(TypeError):
        det.score("one string")
    with pytest.raises(TypeError):
        det.score([b"bytes"])


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
