"""Speech and video for fused cases (docs/FUSION.md "Speech and video"), with the real espeak-ng,
ffmpeg and ffprobe: durations and streams are read back with ffprobe, and what plays when is
checked by decoding the video's frames and sound."""
from __future__ import annotations

import io
import struct
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from modlens.fusion.render import FusionUnavailable, to_png_blob
from modlens.fusion.render.avtools import probe
from modlens.media import MediaBlob, MediaError
from realtools import requires

pytestmark = requires("espeak-ng", "ffmpeg", "ffprobe")

from modlens.fusion.render.speech import canonical_wav, speech_params, synthesize, wav_seconds  # noqa: E402
from modlens.fusion.render.video import (  # noqa: E402
    AudioSegment,
    ImageSegment,
    make_video,
    text_card_segment,
    video_params,
)

RED = (200, 30, 30)
SIZE = (480, 360)


def photo() -> Image.Image:
    """A stand-in for keyword A's picture: a plain red image of another shape than the frame."""
    return Image.new("RGB", (300, 200), RED)


def text_card(text: str) -> Image.Image:
    """A stand-in text card: black words on white filling the frame."""
    card = Image.new("RGB", SIZE, "white")
    ImageDraw.Draw(card).text((40, 160), text, fill="black")
    return card


def png_blob() -> MediaBlob:
    out = io.BytesIO()
    photo().save(out, format="PNG")
    return MediaBlob.from_bytes(out.getvalue())


def frame_at(video: MediaBlob, seconds: float, tmp_path: Path) -> np.ndarray:
    path = tmp_path / f"{video.sha256}.mp4"
    path.write_bytes(video.data)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-ss", f"{seconds}", "-i", str(path), "-frames:v", "1",
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(SIZE[1], SIZE[0], 3)


def loudness(video: MediaBlob, tmp_path: Path, start: float, end: float) -> float:
    """RMS of the soundtrack between two times (16-bit scale)."""
    path = tmp_path / f"{video.sha256}.mp4"
    path.write_bytes(video.data)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vn", "-f", "s16le", "-ac", "1",
                          "-ar", "8000", "-"], capture_output=True, check=True).stdout
    samples = np.frombuffer(raw, np.int16).astype(float)[int(start * 8000):int(end * 8000)]
    return float(np.sqrt(np.mean(samples ** 2)))


def stream_types(video: MediaBlob) -> list[str]:
    return sorted(s["type"] for s in probe(video)["streams"])


# --- speech -------------------------------------------------------------------------------------

def test_speech_is_a_wav_whose_length_grows_with_the_text() -> None:
    short = synthesize("women are")
    long = synthesize("women are lazy and stupid and they should all go away")
    assert short.mime == long.mime == "audio/wav"
    assert 0.3 < wav_seconds(short) < wav_seconds(long)
    info = probe(long)
    assert [s["type"] for s in info["streams"]] == ["audio"]
    assert info["streams"][0]["codec"] == "pcm_s16le"
    assert info["duration_s"] == pytest.approx(wav_seconds(long), abs=0.01)
    # the header's sizes are exact, not espeak-ng's streaming placeholders
    assert struct.unpack("<I", long.data[4:8])[0] == len(long.data) - 8


def test_same_speech_arguments_give_the_same_bytes_and_other_arguments_other_bytes() -> None:
    first = synthesize("buy cheap pills", speed_wpm=160, pitch=40)
    assert synthesize("buy cheap pills", speed_wpm=160, pitch=40).sha256 == first.sha256
    assert synthesize("buy cheap pills", speed_wpm=160, pitch=70).sha256 != first.sha256
    assert wav_seconds(synthesize("buy cheap pills", speed_wpm=300)) < wav_seconds(first)


def test_a_text_that_looks_like_an_option_is_spoken() -> None:
    assert wav_seconds(synthesize("-v is a word here")) > 0.3


def test_speech_params_record_the_engine_and_its_version() -> None:
    params = speech_params(voice="en-gb", speed_wpm=140, pitch=30, seed=7)
    assert params["engine"] == "espeak-ng"
    assert params["engine_version"][0].isdigit()
    assert (params["voice"], params["speed_wpm"], params["pitch"], params["seed"]) == ("en-gb", 140, 30, 7)


def test_bad_speech_arguments_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="empty"):
        synthesize("   ")
    with pytest.raises(ValueError, match="speed_wpm"):
        synthesize("hello", speed_wpm=20)
    with pytest.raises(ValueError, match="pitch"):
        synthesize("hello", pitch=120)
    with pytest.raises(FusionUnavailable, match="voice") as err:
        synthesize("hello", voice="xx-bogus")
    assert err.value.fix


def test_canonical_wav_fills_in_placeholder_sizes_and_keeps_the_samples() -> None:
    samples = struct.pack("<6h", 0, 100, -100, 2000, -2000, 5)
    fmt = struct.pack("<HHIIHH", 1, 1, 22050, 44100, 2, 16)
    streamed = (b"RIFF" + struct.pack("<I", 0x7FFFF024) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
                + b"data" + struct.pack("<I", 0x7FFFF000) + samples)
    fixed = canonical_wav(streamed)
    with wave.open(io.BytesIO(fixed), "rb") as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getnframes()) == (1, 22050, 6)
        assert wav.readframes(6) == samples


# --- video --------------------------------------------------------------------------------------

def test_two_stills_make_a_silent_video_of_their_summed_length(tmp_path: Path) -> None:
    video = make_video([ImageSegment(photo(), 1.5), ImageSegment(text_card("pigs"), 1.5)])
    info = probe(video)
    assert video.mime == "video/mp4"
    assert info["duration_s"] == pytest.approx(3.0, abs=0.15)
    assert [(s["type"], s["codec"]) for s in info["streams"]] == [("video", "h264")]
    assert (info["streams"][0]["width"], info["streams"][0]["height"]) == SIZE
    assert info["streams"][0]["pix_fmt"] == "yuv420p"
    # A first: the red photo (letterboxed, so its centre is red), then the white card
    red = frame_at(video, 0.5, tmp_path)[SIZE[1] // 2, SIZE[0] // 2].astype(int)
    white = frame_at(video, 2.2, tmp_path)[10, 10].astype(int)
    assert red[0] > 150 and red[1] < 80 and red[2] < 80
    assert min(white) > 230


def test_the_same_segments_give_the_same_video_bytes() -> None:
    speech = synthesize("women are")
    segments = [AudioSegment(speech), ImageSegment(photo(), 1.0)]
    assert make_video(segments).sha256 == make_video(segments).sha256


def test_an_image_with_speech_has_both_streams_and_lasts_at_least_the_speech() -> None:
    speech = synthesize("are pigs")
    video = make_video([AudioSegment(speech, photo())])
    info = probe(video)
    assert stream_types(video) == ["audio", "video"]
    assert info["duration_s"] >= wav_seconds(speech) - 0.01
    assert info["duration_s"] < wav_seconds(speech) + 0.2  # rounded up to a frame, not padded further


@pytest.mark.parametrize("layout", ["V+T", "V+A", "A+T", "V+A+T"])
def test_the_papers_video_layouts_have_their_streams_and_play_a_before_b(layout: str, tmp_path: Path) -> None:
    # "women are pigs": A = "women", middle = "are", B = "pigs" (docs/FUSION.md, Speech and video)
    segments = {
        "V+T": [ImageSegment(photo(), role="A"), ImageSegment(text_card("are pigs"), role="B")],
        "V+A": [ImageSegment(photo(), role="A"), AudioSegment(synthesize("are pigs"), role="B")],
        "A+T": [AudioSegment(synthesize("women are"), role="A"), ImageSegment(text_card("pigs"), role="B")],
        "V+A+T": [ImageSegment(photo(), role="A"), ImageSegment(text_card("are"), role="middle"),
                  AudioSegment(synthesize("pigs"), role="B")],
    }[layout]
    video = make_video(segments)
    params = video_params(segments)
    assert stream_types(video) == (["video"] if layout == "V+T" else ["audio", "video"])
    assert params["order"] == (["A", "middle", "B"] if layout == "V+A+T" else ["A", "B"])
    assert probe(video)["duration_s"] == pytest.approx(params["duration_s"], abs=0.1)
    if layout == "V+T":
        return
    starts = np.cumsum([0.0] + [s["seconds"] for s in params["segments"]])
    spoken = [i for i, s in enumerate(segments) if isinstance(s, AudioSegment)][0]
    silent = [i for i, s in enumerate(segments) if isinstance(s, ImageSegment)][0]
    # speech plays only in its own segment; the stills are silent
    assert loudness(video, tmp_path, starts[spoken], starts[spoken + 1]) > 300
    assert loudness(video, tmp_path, starts[silent] + 0.1, starts[silent + 1] - 0.1) < 30


@requires("tesseract")
def test_a_text_card_segment_shows_its_words_in_the_video(tmp_path: Path) -> None:
    from modlens.media.ocr import read_text

    card = text_card_segment("are pigs", 1.0, role="B")
    assert card.image.size == SIZE and card.role == "B" and card.seconds == 1.0
    video = make_video([ImageSegment(photo(), 1.0), card])
    shown = to_png_blob(Image.fromarray(frame_at(video, 1.5, tmp_path)))
    assert read_text(shown, psm=6).text.lower().split() == ["are", "pigs"]
    first = to_png_blob(Image.fromarray(frame_at(video, 0.5, tmp_path)))
    assert read_text(first, psm=6).n_words == 0


def test_speech_without_an_image_plays_over_a_blank_screen(tmp_path: Path) -> None:
    video = make_video([AudioSegment(synthesize("women are")), ImageSegment(text_card("pigs"), 1.0)])
    assert frame_at(video, 0.3, tmp_path).max() < 30


def test_video_params_describe_segments_in_order_with_the_encoder() -> None:
    speech = synthesize("women are")
    segments = [AudioSegment(speech, role="A"), ImageSegment(photo(), 1.24, role="B")]
    params = video_params(segments, fps=10)
    assert [s["kind"] for s in params["segments"]] == ["audio", "image"]
    assert params["segments"][0]["screen"] == "blank"
    assert params["segments"][0]["seconds"] >= wav_seconds(speech)
    assert params["segments"][1]["seconds"] == pytest.approx(1.2)  # rounded to whole frames
    assert params["fps"] == 10 and params["size"] == [480, 360] and params["audio"] is True
    assert params["encoder"]["version"][0].isdigit()


def test_bad_video_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one segment"):
        make_video([])
    with pytest.raises(ValueError, match="even"):
        make_video([ImageSegment(photo())], size=(481, 360))
    with pytest.raises(ValueError, match="more than 0"):
        make_video([ImageSegment(photo(), 0)])
    with pytest.raises(ValueError, match="needs audio"):
        make_video([AudioSegment(png_blob())])


# --- missing programs ---------------------------------------------------------------------------

def test_a_missing_program_is_reported_with_how_to_install_it(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    speech = synthesize("women are")  # made while the programs are still there
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(FusionUnavailable) as err:
        synthesize("hello")
    assert "espeak-ng" in str(err.value) and "apt-get install espeak-ng" in err.value.fix
    with pytest.raises(FusionUnavailable) as err:
        make_video([AudioSegment(speech)])
    assert "ffmpeg" in str(err.value) and "apt-get install ffmpeg" in err.value.fix
    with pytest.raises(FusionUnavailable) as err:
        probe(speech)
    assert "ffprobe" in str(err.value) and "ffmpeg" in err.value.fix


def test_a_wav_that_is_not_pcm_is_refused_clearly() -> None:
    fmt = struct.pack("<HHIIHH", 3, 1, 22050, 88200, 4, 32)  # IEEE float samples
    floats = (b"RIFF" + struct.pack("<I", 36 + 8) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
              + b"data" + struct.pack("<I", 8) + struct.pack("<2f", 0.0, 0.5))
    with pytest.raises(MediaError, match="PCM"):
        make_video([AudioSegment(MediaBlob(floats, "audio/wav"))])
