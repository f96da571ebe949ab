"""Models the constraints share, loaded once per process: the MiniLM sentence encoder (or the
one a loaded minilm-toxicity detector already holds) and the default normalizer."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterable

_lock = threading.Lock()
_encoders: dict[str, Any] = {}
_normalizer: list[Any] = []


def encoder_dir(model_dir: str | Path | None = None) -> Path:
    """The folder `sentence_encoder(model_dir)` loads (default: the embedded MiniLM's)."""
    from modlens.detectors.minilm import default_model_dir
    return Path(model_dir or default_model_dir()).resolve()


def _key(model_dir: str | Path | None) -> str:
    return str(encoder_dir(model_dir))


def share_encoder(encoder: Any) -> None:
    """Let the constraints use an encoder that is already loaded (a minilm-toxicity detector's
    `encoder`), instead of loading a second copy of the same model."""
    with _lock:
        key = str(Path(encoder.model_dir).resolve())
        if not alive(_encoders.get(key)):
            _encoders[key] = encoder


def alive(encoder: Any) -> bool:
    # a shared detector's encoder is released when that detector closes (an audit's end): a later
    # constraint in the same process must load its own rather than call a released model
    return encoder is not None and getattr(encoder, "model", None) is not None


def share_from(detectors: Iterable[Any]) -> None:
    """`share_encoder` for every loaded detector that holds a MiniLM encoder."""
    for d in detectors:
        enc = getattr(d, "encoder", None)
        if enc is not None and getattr(enc, "model", None) is not None and hasattr(enc, "encode"):
            share_encoder(enc)


def sentence_encoder(model_dir: str | Path | None = None) -> Any:
    """The MiniLM `SentenceEncoder` for `model_dir` (default: the embedded one), loaded once."""
    key = _key(model_dir)
    with _lock:
        if not alive(_encoders.get(key)):
            from modlens.detectors.minilm import SentenceEncoder
            _encoders[key] = SentenceEncoder(key)
        return _encoders[key]


def normalizer() -> Any:
    """The default modlens normalizer, built once."""
    with _lock:
        if not _normalizer:
            from modlens.normalize.pipeline import Normalizer
            _normalizer.append(Normalizer())
        return _normalizer[0]
