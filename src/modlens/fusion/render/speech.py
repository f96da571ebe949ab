"""Text to speech for the audio modality (DUO section 3.2), offline with espeak-ng. The paper
called a cloud text-to-speech API; espeak-ng's voice is robotic but clear, free, and gives the
same bytes for the same arguments, which a reproducible study needs more than a natural voice."""
from __future__ import annotations

import io
import struct
import wave
from typing import Any

from modlens.fusion.render.avtools import program_version, run_program
from modlens.media import MediaBlob, MediaError

SPEED_RANGE = (80, 450)   # words per minute espeak-ng accepts
PITCH_RANGE = (0, 99)


def synthesize(text: str, *, voice: str = "en-us", speed_wpm: int = 150, pitch: int = 50,
               seed: int = 0) -> MediaBlob:
    """`text` spoken by espeak-ng as an audio/wav blob (16-bit mono PCM at espeak-ng's 22050 Hz).

    espeak-ng uses no randomness, so the same arguments and espeak-ng version give the same
    bytes; `seed` is accepted so every transform has the same signature, and is recorded. The WAV
    header is rewritten: with --stdout espeak-ng cannot seek back, and leaves placeholder sizes."""
    _check(text, speed_wpm, pitch)
    # the text goes through stdin so that a text starting with "-" is spoken, not read as an option
    raw = run_program("espeak-ng", ["--stdin", "--stdout", "-b", "1", "-v", voice,
                                    "-s", str(speed_wpm), "-p", str(pitch)], stdin=text.encode("utf-8"))
    return MediaBlob(canonical_wav(raw), "audio/wav")


def speech_params(*, voice: str = "en-us", speed_wpm: int = 150, pitch: int = 50,
                  seed: int = 0) -> dict[str, Any]:
    """What goes into a fused case's parameters for one synthesized clip."""
    return {"engine": "espeak-ng", "engine_version": program_version("espeak-ng"), "voice": voice,
            "speed_wpm": speed_wpm, "pitch": pitch, "seed": seed}


def wav_seconds(audio: MediaBlob | bytes) -> float:
    """The playing time of a PCM WAV."""
    data = audio.data if isinstance(audio, MediaBlob) else audio
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            return wav.getnframes() / wav.getframerate()
    except (wave.Error, EOFError) as err:
        raise MediaError(f"not a PCM WAV that modlens can time ({err}); "
                         f"convert it: ffmpeg -i in.wav -c:a pcm_s16le out.wav") from None


def canonical_wav(raw: bytes) -> bytes:
    """The same PCM samples under a fresh, exact header: the RIFF and data sizes espeak-ng leaves
    as 0x7fff... placeholders when streaming are filled in, and any extra chunks are dropped."""
    if raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        raise MediaError(f"espeak-ng did not write a WAV (starts {raw[:12]!r})")
    fmt: bytes | None = None
    samples = b""
    pos = 12
    while pos + 8 <= len(raw):
        chunk_id, size = raw[pos:pos + 4], struct.unpack("<I", raw[pos + 4:pos + 8])[0]
        body = raw[pos + 8:pos + 8 + size]  # a placeholder size simply runs to the end
        if chunk_id == b"fmt ":
            fmt = body
        elif chunk_id == b"data":
            samples = body
            break
        pos += 8 + size + (size & 1)
    if fmt is None or len(fmt) < 16:
        raise MediaError("espeak-ng's WAV has no format chunk")
    audio_format, channels, rate, _, block_align, bits = struct.unpack("<HHIIHH", fmt[:16])
    if audio_format != 1:
        raise MediaError(f"espeak-ng wrote WAV format {audio_format}, not PCM")
    samples = samples[:len(samples) - len(samples) % block_align]
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(bits // 8)
        wav.setframerate(rate)
        wav.writeframes(samples)
    return out.getvalue()


def _check(text: str, speed_wpm: int, pitch: int) -> None:
    if not text.strip():
        raise ValueError("nothing to speak: the text is empty")
    if not SPEED_RANGE[0] <= speed_wpm <= SPEED_RANGE[1]:
        raise ValueError(f"speed_wpm must be in {SPEED_RANGE[0]}..{SPEED_RANGE[1]}, not {speed_wpm}")
    if not PITCH_RANGE[0] <= pitch <= PITCH_RANGE[1]:
        raise ValueError(f"pitch must be in {PITCH_RANGE[0]}..{PITCH_RANGE[1]}, not {pitch}")
