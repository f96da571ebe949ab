"""Speech to text for audio and the sound of videos (docs/FUSION.md "Reading speech and video").

Two engines, one interface (`transcribe(pcm) -> Transcript`, 16 kHz mono 16-bit PCM from
`media.av.pcm16k`):

- `PocketSphinx`: the offline default. pocketsphinx 5.x ships its US-English acoustic model,
  dictionary and language model inside the wheel, so nothing is fetched. Its confidence is the
  hypothesis' posterior probability; its words carry times (100 frames a second).
- `HuggingFaceAsr`: any `automatic-speech-recognition` model (Whisper, wav2vec2 ...) by hub id or
  local folder, through transformers' pipeline; these give no calibrated confidence (None).

The engine's name and version (with its model's) go into every logged transcript."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from modlens.errors import ErrorKind, ModlensError

SAMPLE_RATE = 16_000


class AsrUnavailable(ModlensError, RuntimeError):
    kind = ErrorKind.FAILED
    fix: str    # always one


@dataclass(frozen=True)
class Word:
    word: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Transcript:
    text: str                    # the words heard, space-joined ("" for silence)
    confidence: float | None     # in [0, 1]; None when the engine gives none
    words: tuple[Word, ...] = field(default=())  # with times, when the engine gives them


class PocketSphinx:
    """pocketsphinx with the model in its wheel. A fresh decoder for every clip: a reused one
    adapts its cepstral mean and more to what it heard before, so the same clip gave another
    confidence after other clips (measured); a fresh one costs about 0.3 s of model loading."""
    engine = "pocketsphinx"

    def __init__(self) -> None:
        try:
            import pocketsphinx  # type: ignore[import-untyped]
        except ModuleNotFoundError as err:
            raise AsrUnavailable("pocketsphinx is not installed", "pip install 'pocketsphinx>=5,<6'") from err
        from importlib.metadata import version

        self.version = f"{version('pocketsphinx')}+en-us"
        self._decoder_type = pocketsphinx.Decoder
        self._frame_rate = float(pocketsphinx.Config()["frate"])

    def transcribe(self, pcm: bytes) -> Transcript:
        if len(pcm) < 2 * SAMPLE_RATE // 10:  # under 0.1 s: nothing to hear
            return Transcript("", None)
        d = self._decoder_type(loglevel="FATAL")
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        hyp = d.hyp()
        words = tuple(Word(s.word.split("(")[0], s.start_frame / self._frame_rate, s.end_frame / self._frame_rate)
                      for s in d.seg() if not s.word.startswith(("<", "[")))
        if hyp is None or not hyp.hypstr.strip():
            return Transcript("", None, ())
        return Transcript(" ".join(w.word for w in words) or hyp.hypstr, float(hyp.prob), words)


class HuggingFaceAsr:
    """transformers' automatic-speech-recognition pipeline (built by the caller: `detectors/asr.py`
    loads it with the cache-first rules of the other Hugging Face detectors)."""
    engine = "hf-asr"

    def __init__(self, pipe: Any, *, model: str, version: str) -> None:
        self._pipe, self.model, self.version = pipe, model, version
        self._lock = threading.Lock()

    def transcribe(self, pcm: bytes) -> Transcript:
        import numpy as np

        if len(pcm) < 2 * SAMPLE_RATE // 10:
            return Transcript("", None)
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        with self._lock:
            out = self._pipe({"raw": audio, "sampling_rate": SAMPLE_RATE})
        return Transcript(" ".join(str(out.get("text", "")).split()), None)

