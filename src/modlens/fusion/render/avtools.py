"""The command-line programs behind speech and video fusion: espeak-ng (text to speech), ffmpeg
(video) and ffprobe (checking what was made). They are called as programs, never through Python
bindings, so nothing but the Debian packages is needed; each call has a time limit, and a missing
program or a failed run raises FusionUnavailable with the fix a user can apply."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from modlens.fusion.render import FusionUnavailable
from modlens.media import MediaBlob, programs

TIMEOUT_S = 120  # one speech clip or one short video; far above what a fused case takes


def program_path(name: str) -> str:
    """Where `name` is on PATH, or FusionUnavailable saying how to install it."""
    return programs.program_path(name, FusionUnavailable)


def run_program(name: str, args: list[str], *, stdin: bytes | None = None,
                timeout_s: float = TIMEOUT_S) -> bytes:
    """Run `name args...` and return its stdout; a timeout or a non-zero exit raises
    FusionUnavailable quoting the program's last error line."""
    return programs.run_program(name, args, stdin=stdin, unavailable=FusionUnavailable, timeout_s=timeout_s,
                                timeout_fix="use shorter texts or videos, or a faster machine",
                                failure_fix=f"check the arguments in the message; `{name} -version` or "
                                            f"`{name} --version` shows whether the installed {name} works")


@functools.lru_cache(maxsize=None)
def program_version(name: str) -> str:
    """The version string of espeak-ng, ffmpeg or ffprobe, recorded in every case's parameters
    (the same text through another version can give other bytes)."""
    return programs.program_version(name, FusionUnavailable)


def probe(media: MediaBlob | Path | str) -> dict[str, Any]:
    """What ffprobe sees in an audio or video file: {"duration_s", "format", "streams": [{"type",
    "codec", ...}]}, with width/height/fps for video streams and sample_rate/channels for audio."""
    if isinstance(media, MediaBlob):
        with programs.blob_file(media, "modlens-probe-") as path:
            return _probe_path(path)
    return _probe_path(Path(media))


def _probe_path(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"no media file at {path}")
    raw = run_program("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)])
    info = json.loads(raw)
    fmt = info.get("format", {})
    streams = []
    for s in info.get("streams", []):
        stream: dict[str, Any] = {"type": s.get("codec_type"), "codec": s.get("codec_name"),
                                  "duration_s": _float(s.get("duration"))}
        if s.get("codec_type") == "video":
            stream.update(width=s.get("width"), height=s.get("height"), pix_fmt=s.get("pix_fmt"),
                          fps=_rate(s.get("avg_frame_rate")), frames=_int(s.get("nb_frames")))
        elif s.get("codec_type") == "audio":
            stream.update(sample_rate=_int(s.get("sample_rate")), channels=s.get("channels"))
        streams.append(stream)
    return {"duration_s": _float(fmt.get("duration")), "format": fmt.get("format_name"), "streams": streams}


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _rate(value: Any) -> float | None:
    """ffprobe writes frame rates as fractions ("10/1"); "0/0" means unknown."""
    try:
        num, den = str(value).split("/")
        return int(num) / int(den) if int(den) else None
    except (TypeError, ValueError):
        return None
