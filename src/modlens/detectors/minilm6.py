"""minilm-toxicity-6: the embedded MiniLM-L6 encoder + a six-label head (Perspective's production attributes) distilled from a Jigsaw BiLSTM, trained out of sample of the shipped benchmarks.

Same encoder, tokenizer, padded widths and pooling as `minilm-toxicity` (whose one-label head
stays as it was, so earlier studies reproduce); the head (`heads/minilm-toxicity-6.json`,
written by `modlens train-head --labels six`, see `head_multi.py`) gives `toxicity`,
`severe_toxicity`, `insult`, `profanity`, `threat` and `identity_attack`, each in [0, 1]. Each
label has its own version (the hash of its weights) and declares its training data.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from modlens.detectors.base import FORWARDS_PER_CALL, Detector, DetectorUnavailable, LabelScores, check_texts, directory_hash
from modlens.detectors.head_multi import MultiHead
from modlens.detectors.minilm import (HEADS_DIR, MODEL_FILES, SentenceEncoder, build, embedded_version, encoder_config,
                                      measured_quality)
from modlens.trainingdata import Training, hashes_beside

DEFAULT_HEAD6 = HEADS_DIR / "minilm-toxicity-6.json"


def label_versions(head: MultiHead) -> dict[str, str]:
    """label -> `<label>.<12 hex of the sha256 of its weights and bias as stored>`: changes whenever its output can."""
    out = {}
    for label, w, b in zip(head.labels, head.weights, head.biases):
        raw = ",".join(f"{float(v):.7g}" for v in (*w, b)).encode()
        out[label] = f"{label}.{hashlib.sha256(raw).hexdigest()[:12]}"
    return out


def head6_training(head: MultiHead, head_path: Path) -> Training:
    rec = head.meta.get("training", {})
    where, hashes, sha256, why = hashes_beside(head_path)  # only a set written for this very head file, read once
    excluded = ", ".join(f"{k} {v.get('removed', 0):,}" for k, v in rec.get("exclusion", {}).items())
    source = (f"the head file's training record: {rec.get('n_train', '?'):,} fit texts (seed {rec.get('seed', '?')}) of "
              f"{rec.get('pool', 'an undeclared pool')}, pool rows removed as benchmark texts: {excluded or 'none recorded'}; "
              f"labels distilled from {rec.get('teacher', {}).get('name', 'an undeclared teacher')}")
    return Training(tuple(rec.get("datasets") or ()), source, whole=False, rows=rec.get("n_train"),
                    hashes_path=where, notes=why, _hashes=hashes, hashes_sha256=sha256)


class MiniLMToxicity6(Detector):
    name = "minilm-toxicity-6"
    max_batch = 64
    releases_gil = True  # the encoder's forward passes (torch)

    def __init__(self, encoder: SentenceEncoder, head: MultiHead, head_path: Path):
        if head.weights.shape[1] != encoder.dim:
            raise DetectorUnavailable("error", f"head {head_path} has {head.weights.shape[1]} inputs, the encoder gives "
                                      f"{encoder.dim}", "retrain it with `modlens train-head --labels six`")
        self.encoder, self.head, self.head_path = encoder, head, head_path
        self.labels = head.labels
        self.toxicity_label = "toxicity" if "toxicity" in head.labels else head.labels[0]
        self.max_batch = encoder.batch_size * FORWARDS_PER_CALL
        self.model_hash = directory_hash(encoder.model_dir, MODEL_FILES)
        self.dtype = encoder.precision()
        self.version = embedded_version(self.model_hash, "head6", head_path, encoder.max_length, self.dtype)
        self.quality = measured_quality(head_path, self.version)
        self.label_versions = label_versions(head)
        self.training = head6_training(head, head_path)
        declared = head.meta.get("labels_training", {})
        self.label_training = {lab: f"{self.label_versions[lab]}: {declared.get(lab, 'not declared')}" for lab in head.labels}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = check_texts(texts)
        if not texts:
            return []
        p = self.head.predict(self.encoder.encode(texts))
        return [{lab: float(v) for lab, v in zip(self.labels, row)} for row in np.clip(p, 0.0, 1.0)]

    def config(self) -> dict[str, Any]:
        return {**encoder_config(self.encoder, self.model_hash, self.head_path, self.dtype),
                "label_versions": self.label_versions, "head_training": self.head.meta.get("training", {})}

    def close(self) -> None:
        self.encoder.close()


def create(*, head: str | None = None, model_dir: str | None = None, device: str = "auto",
           max_length: int = 128, batch_size: int = 64, num_threads: int | None = None,
           threshold: float | None = None, dtype: str = "auto") -> MiniLMToxicity6:
    return build(MiniLMToxicity6, MultiHead.load, DEFAULT_HEAD6, head=head, model_dir=model_dir, device=device,
                 max_length=max_length, batch_size=batch_size, num_threads=num_threads, threshold=threshold,
                 dtype=dtype)
