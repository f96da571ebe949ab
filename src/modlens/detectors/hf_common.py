"""What the Hugging Face detectors share (hf-classifier for text, hf-image for images): loading
by hub id or local directory with the cache first, device and dtype choice, the label map,
the toxicity label (one label, or several summed), and logits -> label probabilities."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from modlens.detectors.base import DetectorUnavailable, LabelScores, config_hash, directory_hash

T = TypeVar("T")

WEIGHT_FILES = ("*.json", "*.txt", "*.safetensors", "*.bin", "*.model", "merges.txt")
COMBINED_LABEL = "toxicity"  # name of the derived label when toxicity_label is a list
DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16"}


def env_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def pick_dtype(device: str, dtype: str) -> str:
    """`auto` is float16 on CUDA (half the memory, tensor cores) and float32 on CPU, where
    float16 matmuls are slow or missing."""
    if dtype == "auto":
        return "float16" if device.startswith("cuda") else "float32"
    if dtype not in DTYPES:
        raise DetectorUnavailable("error", f"unknown dtype {dtype!r}", f"use one of auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def raw_labels(config: Any) -> list[str]:
    """The model's own label names, in logit order."""
    return [str(config.id2label[i]) for i in range(config.num_labels)]


def default_toxicity_label(config: Any, label_map: dict[str, str], source: str) -> str:
    """Without a preset or an explicit choice, a binary model's second label is the usual convention."""
    raw = raw_labels(config)
    if len(raw) != 2:
        raise DetectorUnavailable("error", f"{source} has labels {raw}; which one is toxicity?",
                                  "set options.toxicity_label")
    return label_map.get(raw[1], raw[1])


@dataclass(frozen=True)
class LabelPlan:
    """How a model's logits become our labels: renamed through `label_map`, plus a derived
    `toxicity` label when the toxicity label is a list of labels whose probabilities are summed."""
    names: tuple[str, ...]          # our name for each logit
    labels: tuple[str, ...]         # names + the derived label, if any
    toxicity_label: str
    combined: tuple[str, ...] | None

    @classmethod
    def build(cls, config: Any, label_map: dict[str, str], toxicity_label: str | Sequence[str],
              source: str) -> "LabelPlan":
        raw = raw_labels(config)
        ours = tuple(label_map.get(r, r) for r in raw)
        if len(set(ours)) != len(ours):
            raise DetectorUnavailable("error", f"label_map {label_map} maps two labels of {source} to one name",
                                      "give every raw label its own name in label_map")
        combined = None if isinstance(toxicity_label, str) else tuple(toxicity_label)
        wanted = combined or (str(toxicity_label),)
        unknown = [t for t in wanted if t not in ours]
        if unknown:
            raise DetectorUnavailable("error", f"toxicity_label {list(unknown)} not among {source}'s labels "
                                      f"{list(ours)}", f"set toxicity_label to one of {list(ours)} (raw labels: {raw})")
        return cls(ours, ours + ((COMBINED_LABEL,) if combined else ()),
                   COMBINED_LABEL if combined else str(toxicity_label), combined)

    def scores(self, probabilities: Sequence[float]) -> LabelScores:
        out = dict(zip(self.names, (float(p) for p in probabilities)))
        if self.combined:
            out[COMBINED_LABEL] = min(1.0, sum(out[t] for t in self.combined))
        return out

    def config(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "toxicity_label": list(self.combined) if self.combined
                else self.toxicity_label}


def probability_tensor(logits: Any, multi_label: bool) -> Any:
    """Probabilities in float32 where the logits are: a sigmoid per label (multi-label models), else a softmax."""
    import torch

    logits = logits.float()
    return torch.sigmoid(logits) if multi_label else torch.softmax(logits, dim=-1)


def probabilities(logits: Any, multi_label: bool) -> list[list[float]]:
    """`probability_tensor`'s rows as lists, on the host."""
    rows: list[list[float]] = probability_tensor(logits, multi_label).cpu().tolist()
    return rows


def load_pretrained(model: str, revision: str | None, local_files_only: bool | None,
                    load: Callable[..., tuple[Any, T]], *, what: str = "classifier") -> tuple[Any, T, str]:
    """(model, its pre-processor, source version) from `load(name_or_path, **kw)` -> (model,
    pre-processor). A local directory is versioned by a hash of its files; a hub id by the
    commit the cache or the hub gave (`_commit_hash` on the config), else `revision`. The local cache
    is tried first, then the hub unless offline; a miss is a `missing_weights` status with the
    download command as its fix, never a crash."""
    path = Path(os.path.expanduser(model))
    if path.is_dir():
        try:
            m, pre = load(str(path))
            return m, pre, LOCAL_PREFIX + directory_hash(path, WEIGHT_FILES)
        except (OSError, ValueError) as err:
            raise DetectorUnavailable("missing_weights", f"{path} is not a loadable {what}: {err}",
                                      "point `model` at a directory saved with save_pretrained()") from err
    offline = env_offline() if local_files_only is None else local_files_only
    attempts = [True] if offline else [True, False]
    last: Exception | None = None
    for local in attempts:
        try:
            m, pre = load(model, revision=revision, local_files_only=local)
            return m, pre, hub_version(m, revision)
        except (OSError, ValueError) as err:  # missing from cache / hub unreachable / not a repo
            last = err
    rev = f" --revision {revision}" if revision else ""
    why = "not in the local Hugging Face cache" if offline else \
        f"{type(last).__name__}: {(str(last).splitlines() or [''])[0]}"
    raise DetectorUnavailable("missing_weights", f"{model}: weights not available here ({why})",
                              f"run once online: hf download {model}{rev}") from last


LOCAL_PREFIX = "dir."  # `load_pretrained`'s source version of a local directory


def source_id(model_ref: str, source_version: str) -> str:
    """The weights a Hugging Face model was loaded from, in a version: a hub model's id and commit, or a
    local directory's file hash alone. A directory's name and place (logged beside, in the config) are
    left out: the same files renamed or moved score the same."""
    return source_version if source_version.startswith(LOCAL_PREFIX) else f"{model_ref}@{source_version}"


def model_version(model_ref: str, source_version: str, config: dict[str, Any]) -> str:
    """A Hugging Face detector's version: `source_id`, then the hash of the options that shape its
    scores (`config`, less a local directory's name)."""
    if source_version.startswith(LOCAL_PREFIX):
        config = {k: v for k, v in config.items() if k != "model"}
    return f"{source_id(model_ref, source_version)}+cfg.{config_hash(config)}"


def hub_version(model: Any, revision: str | None) -> str:
    """The hub commit a model was loaded from (12 characters), else the asked-for revision."""
    commit = getattr(model.config, "_commit_hash", None) or revision or "unknown-revision"
    return str(commit)[:12]
