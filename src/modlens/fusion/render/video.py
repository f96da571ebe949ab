"""Videos for the paper's video fusions (DUO section 3.3.2, Table 4: V+T, V+A, A+T, V+A+T). A
video is a sequence of segments shown one after another: a still image for some seconds, or a
speech clip played over a still image (or over a blank screen). The fusion layouts are built from
these by the caller, in reading order: A first, then B; docs/FUSION.md "Speech and video".

ffmpeg encodes H.264 (yuv420p, which every browser and moderation API reads) plus AAC audio when
any segment speaks; with one encoder thread and the bitexact flags, the same segments give the
same bytes, so a case's media hash is stable across reruns on the same ffmpeg version."""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps

from modlens.fusion.render.avtools import program_version, run_program
from modlens.fusion.render.speech import wav_seconds
from modlens.fusion.render.text_image import render_text_card
from modlens.media import MediaBlob

STILL_SECONDS = 1.5       # how long a still image or text card stays on screen by default
DEFAULT_SIZE = (480, 360)
DEFAULT_FPS = 10          # stills need few frames; 10 fps keeps files small and durations exact to 0.1 s
AUDIO_RATE = 44100        # speech of any rate is resampled to this (mono) in the video
BACKGROUND = (0, 0, 0)    # the blank screen under speech without an image, and the letterbox bars
VIDEO_CODEC = ["-c:v", "libx264", "-preset", "medium", "-crf", "23", "-pix_fmt", "yuv420p"]
AUDIO_CODEC = ["-c:a", "aac", "-b:a", "96k"]
# the same input -> the same bytes: no encoder or time stamps in the file, one thread everywhere
DETERMINISTIC = ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
                 "-map_metadata", "-1", "-threads", "1", "-filter_complex_threads", "1"]


@dataclass(frozen=True, eq=False)
class ImageSegment:
    """A still picture (a photo, a rendered keyword, a text card) shown for `seconds`."""
    image: Image.Image
    seconds: float = STILL_SECONDS
    role: str = ""  # which part of the seed it carries ("A", "middle", "B"), recorded in the params


@dataclass(frozen=True, eq=False)
class AudioSegment:
    """Speech played over a still image, or over a blank screen when `image` is None; it lasts as
    long as the audio (rounded up to a whole frame)."""
    audio: MediaBlob
    image: Image.Image | None = None
    role: str = ""


Segment = ImageSegment | AudioSegment


def text_card_segment(text: str, seconds: float = STILL_SECONDS, *, size: tuple[int, int] = DEFAULT_SIZE,
                      role: str = "") -> ImageSegment:
    """A text shown as a card (the text modality of a video), rendered like the image fusions'
    words (`render_text_card`: black on white, as large as fits)."""
    return ImageSegment(render_text_card(text, size=size), seconds, role)


def make_video(segments: list[Segment], *, size: tuple[int, int] = DEFAULT_SIZE,
               fps: int = DEFAULT_FPS) -> MediaBlob:
    """The segments, in order, as one video/mp4 (H.264 yuv420p; AAC mono when any segment has
    audio, silence under the stills; no audio stream otherwise). Built by ffmpeg from temporary
    files that are removed afterwards."""
    _check(segments, size, fps)
    frames = [segment_frames(s, fps) for s in segments]
    has_audio = any(isinstance(s, AudioSegment) for s in segments)
    with tempfile.TemporaryDirectory(prefix="modlens-video-") as tmp:
        inputs: list[str] = []  # ffmpeg input arguments; input k is the k-th "-i"
        chains: list[str] = []
        for i, (segment, n_frames) in enumerate(zip(segments, frames, strict=True)):
            still = Path(tmp) / f"still{i}.png"
            _fit(segment.image, size).save(still, format="PNG")
            video_in = inputs.count("-i")
            inputs += ["-loop", "1", "-framerate", str(fps), "-t", f"{(n_frames + 1) / fps:.6f}", "-i", str(still)]
            chains.append(f"[{video_in}:v]trim=end_frame={n_frames},setpts=PTS-STARTPTS,"
                          f"format=yuv420p,setsar=1[v{i}]")
            if not has_audio:
                continue
            n_samples = round(n_frames * AUDIO_RATE / fps)
            if isinstance(segment, AudioSegment):
                clip = Path(tmp) / f"speech{i}.wav"
                clip.write_bytes(segment.audio.data)
                audio_in = inputs.count("-i")
                inputs += ["-i", str(clip)]
                source = (f"[{audio_in}:a]aresample={AUDIO_RATE},"
                          f"aformat=sample_fmts=fltp:channel_layouts=mono,apad=whole_len={n_samples}")
            else:
                source = f"anullsrc=r={AUDIO_RATE}:cl=mono"
            chains.append(f"{source},atrim=end_sample={n_samples},asetpts=PTS-STARTPTS[a{i}]")
        pads = "".join(f"[v{i}]" + (f"[a{i}]" if has_audio else "") for i in range(len(segments)))
        chains.append(f"{pads}concat=n={len(segments)}:v=1:a={int(has_audio)}[v]" + ("[a]" if has_audio else ""))
        out = Path(tmp) / "video.mp4"
        args = ["-hide_banner", "-nostdin", "-y", "-v", "error", *inputs,
                "-filter_complex", ";".join(chains), "-map", "[v]", *VIDEO_CODEC, "-r", str(fps)]
        if has_audio:
            args += ["-map", "[a]", *AUDIO_CODEC, "-ac", "1", "-ar", str(AUDIO_RATE)]
        args += [*DETERMINISTIC, "-movflags", "+faststart", str(out)]
        run_program("ffmpeg", args)
        return MediaBlob(out.read_bytes(), "video/mp4")


def video_params(segments: list[Segment], *, size: tuple[int, int] = DEFAULT_SIZE,
                 fps: int = DEFAULT_FPS) -> dict[str, Any]:
    """What goes into a fused case's parameters for one video: each segment's kind, role and
    shown seconds in order, the frame size and rate, and the encoder settings and version."""
    shown = [segment_frames(s, fps) / fps for s in segments]
    parts = [{"kind": "audio" if isinstance(s, AudioSegment) else "image", "role": s.role,
              "seconds": round(seconds, 3), "screen": "blank" if s.image is None else "image"}
             for s, seconds in zip(segments, shown, strict=True)]
    return {"segments": parts, "order": [p["role"] or p["kind"] for p in parts],
            "duration_s": round(sum(shown), 3), "fps": fps, "size": list(size),
            "audio": any(isinstance(s, AudioSegment) for s in segments),
            "encoder": {"program": "ffmpeg", "version": program_version("ffmpeg"),
                        "video": " ".join(VIDEO_CODEC[1:]), "audio": " ".join(AUDIO_CODEC[1:])}}


def segment_frames(segment: Segment, fps: int) -> int:
    """How many frames a segment is shown for: a still's seconds rounded to a frame (at least
    one), a speech clip's length rounded up so that no word is cut."""
    if isinstance(segment, AudioSegment):
        return max(1, math.ceil(wav_seconds(segment.audio) * fps - 1e-9))
    return max(1, round(segment.seconds * fps))


def _fit(image: Image.Image | None, size: tuple[int, int]) -> Image.Image:
    """The image scaled to fit the frame, centred on the background; transparent parts (emoji,
    rendered words) are laid on white so they look as they would on a page."""
    frame = Image.new("RGB", size, BACKGROUND)
    if image is None:
        return frame
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        image = flat
    fitted = ImageOps.contain(image.convert("RGB"), size)
    frame.paste(fitted, ((size[0] - fitted.width) // 2, (size[1] - fitted.height) // 2))
    return frame


def _check(segments: list[Segment], size: tuple[int, int], fps: int) -> None:
    if not segments:
        raise ValueError("a video needs at least one segment")
    width, height = size
    if width < 16 or height < 16 or width % 2 or height % 2:
        raise ValueError(f"size must be even and at least 16x16 (H.264 yuv420p), not {width}x{height}")
    if not 1 <= fps <= 60:
        raise ValueError(f"fps must be in 1..60, not {fps}")
    for segment in segments:
        if isinstance(segment, ImageSegment) and not segment.seconds > 0:
            raise ValueError(f"an image segment must last more than 0 s, not {segment.seconds}")
        if isinstance(segment, AudioSegment) and segment.audio.kind != "audio":
            raise ValueError(f"an audio segment needs audio, not {segment.audio.mime}")
