"""Audio and video read back for scoring (docs/FUSION.md "Reading speech and video"): a clip's
sound as 16 kHz mono PCM (what speech recognisers take) and a video's frames sampled at a fixed
rate, both through the ffmpeg program (Debian `ffmpeg`), never a Python binding. The frames are
PNG blobs with their time, so OCR and image models read them like any picture and the readings can
be put back in the order the video shows them."""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass

from modlens.errors import ErrorKind, ModlensError
from modlens.media import MediaBlob
from modlens.media.programs import INSTALL_FIXES, blob_file, program_path, program_version, run_command, run_program

INSTALL_FIX = INSTALL_FIXES["ffmpeg"]
TIMEOUT_S = 120
SAMPLE_RATE = 16_000   # what pocketsphinx's US-English model and Whisper/wav2vec2 models were trained on
# Frames: the fused videos show each still or card for 1.5 s, so 2 frames a second sees every
# segment at least twice; 16 frames cover an 8 s video, longer than any fused case. Consecutive
# frames of one still are dropped (`distinct_frames`), so OCR reads each segment once.
FRAME_RATE = 2.0
MAX_FRAMES = 16


class AvUnavailable(ModlensError, RuntimeError):
    kind = ErrorKind.FAILED
    fix: str    # always one

    def __init__(self, message: str, fix: str = INSTALL_FIX) -> None:
        super().__init__(message, fix)


@dataclass(frozen=True)
class Frame:
    seconds: float     # time in the video the frame shows
    image: MediaBlob   # PNG


def ffmpeg_path() -> str:
    return program_path("ffmpeg", AvUnavailable)


@functools.lru_cache(maxsize=1)
def ffmpeg_version() -> str:
    return program_version("ffmpeg", AvUnavailable)


def _run(args: list[str]) -> bytes:
    return run_program("ffmpeg", args, unavailable=AvUnavailable, timeout_s=TIMEOUT_S, timeout_fix="use shorter clips",
                       failure_fix="check that the file plays (ffplay FILE); modlens reads WAV and MP4")


def _with_file(blob: MediaBlob, args: list[str]) -> bytes:
    with blob_file(blob, "modlens-av-") as path:
        return _run(["-nostdin", "-v", "error", "-i", str(path), *args])


def pcm16k(blob: MediaBlob) -> bytes:
    """The clip's (or the video's first audio track's) sound as 16-bit little-endian 16 kHz mono
    PCM; b"" when a video has no audio track."""
    if blob.kind == "video" and not has_audio(blob):
        return b""
    return _with_file(blob, ["-map", "0:a:0", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "s16le", "pipe:1"])


def has_audio(blob: MediaBlob) -> bool:
    # ffmpeg given no output file lists the input's streams on stderr and exits 1: its exit code says nothing here
    with blob_file(blob, "modlens-av-") as path:
        done = run_command("ffmpeg", ["-nostdin", "-hide_banner", "-i", str(path)], unavailable=AvUnavailable,
                           timeout_s=TIMEOUT_S, timeout_fix="use shorter clips")
    return "Audio:" in done.stderr.decode("utf-8", "replace")


def sample_frames(blob: MediaBlob, *, rate: float = FRAME_RATE, max_frames: int = MAX_FRAMES) -> list[Frame]:
    """Up to `max_frames` frames, one every 1/`rate` seconds from the start (at 0, 0.5, 1.0 s ...),
    as PNG images; consecutive near-identical frames (a still held on screen) are dropped."""
    raw = _with_file(blob, ["-vf", f"fps={rate}", "-frames:v", str(max_frames), "-f", "image2pipe",
                            "-vcodec", "png", "pipe:1"])
    return distinct_frames([Frame(i / rate, MediaBlob(png, "image/png")) for i, png in enumerate(_split_pngs(raw))])


def _split_pngs(raw: bytes) -> list[bytes]:
    magic, end = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"
    out, start = [], raw.find(magic)
    while start >= 0:
        stop = raw.find(end, start) + len(end)
        out.append(raw[start:stop])
        start = raw.find(magic, stop)
    return out


def distinct_frames(frames: list[Frame], tolerance: float = 2.0) -> list[Frame]:
    """Frames whose 32x24 greyscale thumbnail differs from the previous kept one by more than
    `tolerance` (mean absolute difference, of 255): H.264 redraws a still with small noise."""
    from PIL import Image, ImageChops, ImageStat

    kept: list[Frame] = []
    last = None
    for frame in frames:
        with Image.open(io.BytesIO(frame.image.data)) as im:
            thumb = im.convert("L").resize((32, 24))
        if last is None or ImageStat.Stat(ImageChops.difference(thumb, last)).mean[0] > tolerance:
            kept.append(frame)
            last = thumb
    return kept
