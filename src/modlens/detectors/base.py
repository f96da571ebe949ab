"""The one interface every detector implements.

A detector is loaded once and then called with batches: `score(texts)` returns, per text,
a `{label: probability}` dict, or `None` when it has no answer for that text (a cached
detector that never saw it): missing, never guessed. `toxicity()` reduces one result to the
single score used for highlighting and thresholds.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from modlens.errors import ErrorKind, ModlensError
from modlens.fileversion import settled, stamp
from modlens.paths import hash_file

if TYPE_CHECKING:
    from modlens.trainingdata import Training
    from modlens.media import MediaInput
    from modlens.detectors.quality import Quality

LabelScores = dict[str, float]


@dataclass
class MediaScore:
    """A media-aware detector's answer for one `MediaInput`: its label probabilities (None: no
    answer) and what it saw on the way, logged beside the score (e.g. OCR text and confidence)."""
    labels: LabelScores | None
    details: dict[str, Any] = field(default_factory=dict)

# Transformer detectors sort each call's texts by length and run forward passes of
# `batch_size` rows. The batcher hands them this many passes' worth per call, so that sorting
# has enough texts to fill every pass with comments of nearly one length. On the 2-core CPU,
# MiniLM alone: 414 c/s at 256 texts per call against 350 at 62; through the daemon with 16
# clients, about 8% more comments per second (docs/PERFORMANCE.md).
FORWARDS_PER_CALL = 4


class Detector(ABC):
    name: str            # registry key, e.g. "minilm-toxicity"
    version: str         # changes whenever weights or configuration change
    labels: tuple[str, ...]
    toxicity_label: str  # the label whose probability is the toxicity score
    threshold: float = 0.5
    max_batch: int = 64  # the batcher never sends more texts than this in one call
    remote: bool = False # remote detectors run on the event loop via `ascore`
    # A promise: `score` spends its time with the GIL released (a model run by torch, ONNX Runtime or
    # TensorFlow; a blocking network call), so while it computes one chunk the event loop can record
    # the chunk before (`chunks.compute.frees_the_loop`). Declared, never inferred: a detector in plain
    # Python (a lexicon, a table, scikit-learn's vectorizer) holds the GIL for its whole call and keeps
    # False, as does a plug-in that does not declare it. A `remote` detector frees the loop whatever
    # it declares (the loop awaits its `ascore`).
    releases_gil: bool = False
    # what `score_media` looks at; a text-only detector sees only the text of a MediaInput
    modalities: tuple[str, ...] = ("text",)
    # what it was trained on (docs/DETECTORS.md#training-data); None: not declared, so no figure
    # of it can be called out-of-sample
    training: "Training | None" = None
    # what it scored on held-out labelled data, per label, measured with this very version
    # (modlens.detectors.quality); None: not measured
    quality: "Quality | None" = None

    @abstractmethod
    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        """Score a batch. Blocking; the engine calls it in a worker thread."""

    async def ascore(self, texts: Sequence[str]) -> list[LabelScores | None]:
        """Remote detectors override this; local ones are run in a thread by the engine."""
        raise NotImplementedError

    def score_media(self, inputs: Sequence["MediaInput"]) -> list[MediaScore]:
        """Score texts with media (docs/FUSION.md). Blocking, like `score`. Media detectors
        override it; a text-only detector scores the text part alone (what a text-only
        moderation stack sees of a comment with an image) and says so in the details."""
        seen = [bool(i.media) for i in inputs]
        return [MediaScore(labels, {"ignored_media": True} if had_media else {})
                for labels, had_media in zip(self.score([i.text for i in inputs]), seen)]

    def toxicity(self, scores: LabelScores | None) -> float | None:
        if scores is None:
            return None
        return float(scores[self.toxicity_label])

    def config(self) -> dict[str, Any]:
        """The options that define this detector's behaviour (logged with its version)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook: most detectors hold nothing to release
        """Release models, sessions, threads."""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "labels": list(self.labels),
            "toxicity_label": self.toxicity_label, "threshold": self.threshold,
            "config": self.config(),
            "training": None if self.training is None else self.training.record(),
        }


def check_texts(texts: Sequence[str]) -> list[str]:
    """The batch as a list of strings; a bare string or a non-string item is a caller bug."""
    if isinstance(texts, str):
        raise TypeError("score() takes a list of texts, not one string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings; item(s) {bad[:5]} are not")
    return texts


AUTO_CHOICES = ("auto", True, False)


def auto_choice(option: str, value: bool | str) -> bool | None:
    """A detector option taking "auto", true or false: None for "auto" (the caller's default decides),
    else the bool; anything else is a clear error naming the option."""
    if value not in AUTO_CHOICES:
        raise DetectorUnavailable("error", f"{option} must be one of auto, true, false, not {value!r}",
                                  f'set {option} = "auto"')
    return None if value == "auto" else bool(value)

def config_hash(config: dict[str, Any]) -> str:
    """Short stable hash of a JSON-able configuration (part of a detector's version)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]


def scoring_config(config: dict[str, Any]) -> dict[str, Any]:
    """A media wrapper's (ocr, asr) configuration as its version hashes it: without the text detector's
    options (`text_config`, still logged), whose own version (`text_version`) names what decides its
    scores; options that do not (a batch size, a folder, a package's number) must not make the wrapper
    another version."""
    return {k: v for k, v in config.items() if k != "text_config"}


def directory_hash(path: str | Path, patterns: Sequence[str] = ("*",)) -> str:
    """Short content hash of a model directory (file names and bytes), for versions. Read once per
    version of its files (`fileversion.stamp`: device, inode, size, modification and change time; a
    same-size rewrite with its old time set back, as `cp -p` or `rsync -t` leave it, is another version):
    a detector, its heads and the attack constraints that share an encoder each ask for the same folder's
    hash. Kept only once every file has `settled`: a folder with a file changed within the timestamps'
    resolution of the ask is read again at the next."""
    root = Path(path)
    files = sorted({p for pat in patterns for p in root.rglob(pat) if p.is_file()})
    versions = tuple((str(p.relative_to(root)), stamp(p)) for p in files)
    return (_hashed_files if all(settled(v) for _, v in versions) else _hash_files)(str(root), versions)


def _hash_files(root: str, versions: tuple[tuple[str, tuple[int, ...]], ...]) -> str:
    h = hashlib.sha256()
    for name, _version in versions:
        h.update(name.encode())
        hash_file(h, Path(root) / name)
    return h.hexdigest()[:12]


_hashed_files = lru_cache(maxsize=32)(_hash_files)


class DetectorUnavailable(ModlensError, RuntimeError):
    """Raised by a factory when a detector cannot load; `status` is one of
    missing_dependency / missing_weights / needs_options / error and `fix` is a one-line instruction.
    Only `error` means something is broken: the others say what the detector still needs."""

    kind = ErrorKind.FAILED
    fix: str    # always one

    def __init__(self, status: str, message: str, fix: str):
        super().__init__(message, fix)
        self.status = status

    @classmethod
    def needs_options(cls, detector: str, options: Sequence[str], fix: str) -> "DetectorUnavailable":
        """A detector that works but cannot be built without these options (a file, a URL)."""
        return cls("needs_options", f"{detector} needs options: {', '.join(options)}", fix)


@dataclass
class DetectorStatus:
    name: str
    status: str  # loaded | missing_dependency | missing_weights | needs_options | error
    message: str = ""
    fix: str = ""
    version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
