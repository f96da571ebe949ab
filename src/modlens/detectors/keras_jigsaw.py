"""jigsaw-bilstm: Keras BiLSTM trained on Jigsaw 2018 (`toxic-comment-classifier`), six labels; optional, needs TensorFlow.

The package only scores one text per call; we reuse its tokenizer and Keras model directly
so a batch is one `predict` call. Its texts are padded/truncated to 100 tokens as in training.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores, directory_hash

JIGSAW_LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
FIX = "pip install 'modlens[keras]'  (toxic-comment-classifier and tensorflow)"
# what decides its scores, in the package's folder: the fitted weights and tokenizer (model/) and the
# module that rebuilds the architecture those weights load into (model.py)
SCORING_FILES = ("model/*", "model.py")


def package_files_version(package_dir: str | Path) -> str:
    """The detector's version: the bytes of `SCORING_FILES`, not the package's number or folder."""
    return f"toxic-comment-classifier.{directory_hash(package_dir, SCORING_FILES)}"


# What this detector uses of toxic-comment-classifier and Keras (neither ships type information)
class _Tokenizer(Protocol):
    def texts_to_sequences(self, texts: list[str]) -> list[list[int]]: ...


class _KerasModel(Protocol):
    def predict(self, x: npt.NDArray[np.int32], verbose: int = ...) -> npt.NDArray[np.float32]: ...


class _Classifier(Protocol):
    """toxic_classifier.model.ToxicCommentClassifier: its fitted tokenizer and Keras model."""
    tokenizer: _Tokenizer
    model: _KerasModel


# keras' pad_sequences(sequences, maxlen=...): one row per text, padded or truncated to maxlen
PadSequences = Callable[..., npt.NDArray[np.int32]]


class JigsawBiLSTM(Detector):
    name = "jigsaw-bilstm"
    labels = JIGSAW_LABELS
    toxicity_label = "toxic"
    max_batch = 128
    releases_gil = True  # Keras' predict (TensorFlow)

    def __init__(self, classifier: _Classifier, pad_sequences: PadSequences, maxlen: int, version: str,
                 package_version: str):
        self._clf = classifier
        self._pad = pad_sequences
        self._maxlen = maxlen
        self.version = version  # package_files_version
        self._package_version = package_version

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        if isinstance(texts, str):
            raise TypeError("score() takes a list of texts, not one string")
        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise TypeError("texts must be strings")
        if not texts:
            return []
        seqs = self._pad(self._clf.tokenizer.texts_to_sequences(texts), maxlen=self._maxlen)
        preds = self._clf.model.predict(seqs, verbose=0)
        return [{lab: float(p) for lab, p in zip(JIGSAW_LABELS, row)} for row in preds]

    def config(self) -> dict[str, Any]:
        return {"package": "toxic-comment-classifier", "package_version": self._package_version, "maxlen": self._maxlen}


def create(*, threshold: float | None = None) -> JigsawBiLSTM:
    try:
        import tensorflow  # noqa: F401
        from tensorflow.keras.preprocessing.sequence import pad_sequences
        from toxic_classifier import model as tcc_model
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"jigsaw-bilstm needs {err.name}", FIX) from err
    try:
        clf = tcc_model.ToxicCommentClassifier()
    except OSError as err:
        raise DetectorUnavailable("missing_weights", f"toxic-comment-classifier weights did not load: {err}",
                                  "pip install --force-reinstall toxic-comment-classifier") from err
    if tuple(getattr(tcc_model, "LIST_CLASSES", JIGSAW_LABELS)) != JIGSAW_LABELS:
        raise DetectorUnavailable("error", "toxic-comment-classifier changed its label set",
                                  "pip install 'toxic-comment-classifier==0.3.0'")
    det = JigsawBiLSTM(clf, pad_sequences, int(getattr(tcc_model, "MAXLEN", 100)),
                       package_files_version(Path(tcc_model.__file__).parent), metadata.version("toxic-comment-classifier"))
    if threshold is not None:
        det.threshold = float(threshold)
    return det
