"""hf-classifier: any Hugging Face AutoModelForSequenceClassification, by hub id or local path, CPU or GPU.

Options: model, revision, preset (see hf_presets.py), label_map (raw label -> our label),
toxicity_label (a label, or a list of labels whose probabilities are summed), max_length,
batch_size, device ("auto" | "cpu" | "cuda"), dtype ("auto" -> float16 on CUDA, else float32),
multi_label (sigmoid per label; default: from the model config, else softmax),
local_files_only (never touch the network; default: HF_HUB_OFFLINE, and the local cache is
always tried first so a cached model loads without network calls).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from modlens.detectors.base import (FORWARDS_PER_CALL, Detector, DetectorUnavailable, LabelScores, check_texts,
                                    config_hash, directory_hash)
from modlens.detectors.hf_presets import PRESETS, preset as preset_options
from modlens.detectors.minilm import pick_device

WEIGHT_FILES = ("*.json", "*.txt", "*.safetensors", "*.bin", "*.model", "merges.txt")
COMBINED_LABEL = "toxicity"  # name of the derived label when toxicity_label is a list
DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16"}


def _env_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


class HFClassifier(Detector):
    name = "hf-classifier"

    def __init__(self, model, tokenizer, *, source: str, source_version: str, device: str, dtype: str,
                 label_map: dict[str, str], toxicity_label: str | list[str], max_length: int,
                 batch_size: int, multi_label: bool):
        self.model, self.tokenizer = model, tokenizer
        self.source, self.device, self.dtype = source, device, dtype
        self.max_length, self.batch_size, self.multi_label = int(max_length), int(batch_size), bool(multi_label)
        self.max_batch = self.batch_size * FORWARDS_PER_CALL  # texts per call; forward passes stay batch_size rows
        self.label_map = dict(label_map)
        id2label = model.config.id2label
        self.raw_labels = [str(id2label[i]) for i in range(model.config.num_labels)]
        ours = [self.label_map.get(raw, raw) for raw in self.raw_labels]
        if len(set(ours)) != len(ours):
            raise DetectorUnavailable("error", f"label_map {self.label_map} maps two labels of {source} to one name",
                                      "give every raw label its own name in label_map")
        self.combined = list(toxicity_label) if isinstance(toxicity_label, (list, tuple)) else None
        wanted = self.combined or [toxicity_label]
        unknown = [t for t in wanted if t not in ours]
        if unknown:
            raise DetectorUnavailable("error", f"toxicity_label {unknown} not among {source}'s labels {ours}",
                                      f"set toxicity_label to one of {ours} (raw labels: {self.raw_labels})")
        self.labels = tuple(ours) + ((COMBINED_LABEL,) if self.combined else ())
        self.toxicity_label = COMBINED_LABEL if self.combined else str(toxicity_label)
        self.version = f"{source}@{source_version}+cfg.{config_hash(self.config())}"

    def config(self) -> dict[str, Any]:
        # device is left out on purpose: where a model runs must not change its version
        return {"model": self.source, "label_map": self.label_map, "labels": list(self.labels),
                "toxicity_label": self.combined or self.toxicity_label, "max_length": self.max_length,
                "multi_label": self.multi_label, "dtype": self.dtype}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        import torch

        texts = check_texts(texts)
        out: list[LabelScores | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding per batch
        names = self.labels[:len(self.raw_labels)]
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                logits = self.model(**enc).logits.float()
                probs = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
                for row, i in zip(probs.cpu().tolist(), idx):
                    scores = dict(zip(names, row))
                    if self.combined:
                        scores[COMBINED_LABEL] = min(1.0, sum(scores[t] for t in self.combined))
                    out[i] = scores
        return out

    def close(self) -> None:
        self.model = None


def _load(model: str, revision: str | None, local_files_only: bool | None):
    """(model, tokenizer, version). Cache first, then the hub unless offline; a miss is a status."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = Path(os.path.expanduser(model))
    if path.is_dir():
        try:
            return (AutoModelForSequenceClassification.from_pretrained(str(path)),
                    AutoTokenizer.from_pretrained(str(path)), "dir." + directory_hash(path, WEIGHT_FILES))
        except (OSError, ValueError) as err:
            raise DetectorUnavailable("missing_weights", f"{path} is not a loadable classifier: {err}",
                                      "point `model` at a directory saved with save_pretrained()") from err
    offline = _env_offline() if local_files_only is None else local_files_only
    attempts = [True] if offline else [True, False]
    last: Exception | None = None
    for local in attempts:
        try:
            kw = {"revision": revision, "local_files_only": local}
            m = AutoModelForSequenceClassification.from_pretrained(model, **kw)
            tok = AutoTokenizer.from_pretrained(model, **kw)
            commit = getattr(m.config, "_commit_hash", None) or revision or "unknown-revision"
            return m, tok, str(commit)[:12]
        except (OSError, ValueError) as err:  # missing from cache / hub unreachable / not a repo
            last = err
    rev = f" --revision {revision}" if revision else ""
    why = "not in the local Hugging Face cache" if offline else \
        f"{type(last).__name__}: {(str(last).splitlines() or [''])[0]}"
    raise DetectorUnavailable("missing_weights", f"{model}: weights not available here ({why})",
                              f"run once online: hf download {model}{rev}") from last


def create(*, model: str | None = None, preset: str | None = None, revision: str | None = None,
           label_map: dict[str, str] | None = None, toxicity_label: str | list[str] | None = None,
           max_length: int = 256, batch_size: int = 32, device: str = "auto", dtype: str = "auto",
           multi_label: bool | None = None, local_files_only: bool | None = None,
           threshold: float | None = None) -> HFClassifier:
    try:
        import torch
        import transformers  # noqa: F401
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"hf-classifier needs {err.name}",
                                  f"pip install {err.name}") from err
    base: dict[str, Any] = {}
    if preset:
        try:
            base = preset_options(preset)
        except KeyError as err:
            raise DetectorUnavailable("error", str(err), f"use one of: {', '.join(PRESETS)}") from err
    model = model or base.get("model")
    if not model:
        raise DetectorUnavailable("available", "hf-classifier needs a model: set options.preset or options.model",
                                  f'e.g. options = {{preset = "{next(iter(PRESETS))}"}}')
    if model in PRESETS and not preset:  # a bare hub id that has a preset gets its labels too
        base = preset_options(model)
    label_map = label_map if label_map is not None else base.get("label_map", {})
    toxicity_label = toxicity_label if toxicity_label is not None else base.get("toxicity_label")
    dev = pick_device(device)
    dtype_name = ("float16" if dev.startswith("cuda") else "float32") if dtype == "auto" else DTYPES.get(dtype)
    if dtype_name is None:
        raise DetectorUnavailable("error", f"unknown dtype {dtype!r}", f"use one of auto, {', '.join(DTYPES)}")
    m, tok, source_version = _load(model, revision, local_files_only)
    if multi_label is None:
        multi_label = base.get("multi_label", m.config.problem_type == "multi_label_classification")
    if toxicity_label is None:  # no preset: a binary model's second label is the usual convention
        id2label = m.config.id2label
        raw = [str(id2label[i]) for i in range(m.config.num_labels)]
        if len(raw) != 2:
            raise DetectorUnavailable("error", f"{model} has labels {raw}; which one is toxicity?",
                                      "set options.toxicity_label")
        toxicity_label = label_map.get(raw[1], raw[1])
    limit = getattr(tok, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 100_000:  # past it, position embeddings run out
        max_length = min(int(max_length), limit)
    m = m.to(device=dev, dtype=getattr(torch, dtype_name)).eval()
    det = HFClassifier(m, tok, source=model, source_version=source_version, device=dev, dtype=dtype_name,
                       label_map=label_map, toxicity_label=toxicity_label, max_length=max_length,
                       batch_size=batch_size, multi_label=multi_label)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
