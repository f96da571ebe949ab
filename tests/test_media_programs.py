"""The programs behind media and fusion (ffmpeg, ffprobe, espeak-ng, tesseract) found and run one way
(`media.programs`): a missing program, a failed run and a blob handed over as a file, each seen through
a caller that raises its own error type with a fix."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from modlens.media import MediaBlob, av, ocr, programs


def test_a_missing_program_raises_the_callers_error_with_how_to_install_it(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no program on the PATH
    with pytest.raises(av.AvUnavailable, match="ffmpeg program is not installed") as err:
        av.ffmpeg_path()
    assert err.value.fix == av.INSTALL_FIX and "apt-get install ffmpeg" in av.INSTALL_FIX
    with pytest.raises(ocr.OcrUnavailable, match="tesseract program is not installed") as ocr_err:
        ocr.read_text(b"not read")
    assert "apt-get install tesseract-ocr" in ocr_err.value.fix


def test_a_failed_run_quotes_the_programs_last_error_line_with_the_callers_fix() -> None:
    with pytest.raises(av.AvUnavailable, match=r"^ffmpeg failed \(exit \d+\): .+") as err:
        av.pcm16k(MediaBlob(b"RIFF\x00\x00\x00\x00WAVE, but no sound", "audio/wav"))
    assert "ffplay" in err.value.fix
    with pytest.raises(ocr.OcrUnavailable, match=r"^tesseract failed \(exit \d+\): .+") as ocr_err:
        ocr.read_text(b"\x89PNG not an image", lang="xyz")
    assert ocr_err.value.fix.endswith("(apt-get install tesseract-ocr-xyz)")


def test_a_blob_is_handed_over_as_a_file_named_by_its_type_and_removed_after() -> None:
    with programs.blob_file(MediaBlob(b"RIFF....WAVE", "audio/wav"), "modlens-test-") as path:
        assert path.suffix == ".wav" and path.read_bytes() == b"RIFF....WAVE"
    assert not path.exists() and not path.parent.exists()


_UNREAD_MP4 = MediaBlob(b"\x00\x00\x00\x18ftypisom, not read further", "video/mp4")


def _slow_ffmpeg(folder: Path) -> None:
    """An `ffmpeg` that lists no frames at once but hangs when asked for the streams (`-hide_banner`,
    what has_audio runs): a real program that outlasts the time limit."""
    script = folder / "ffmpeg"
    script.write_text('#!/bin/sh\ncase " $* " in *" -hide_banner "*) exec sleep 30;; esac\nexit 0\n')
    script.chmod(0o755)


def test_a_program_that_outlasts_its_time_limit_raises_the_callers_error(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _slow_ffmpeg(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(av, "TIMEOUT_S", 0.3)
    with pytest.raises(av.AvUnavailable, match=r"^ffmpeg took over 0.3 s") as err:
        av.has_audio(_UNREAD_MP4)
    assert err.value.fix == "use shorter clips"


def test_a_video_whose_sound_check_times_out_gets_an_error_in_its_ocr_entry(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from modlens.detectors import registry

    det = registry.create("ocr", text_detector="profanity-check")  # with the real programs
    try:
        _slow_ffmpeg(tmp_path)
        monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
        monkeypatch.setattr(av, "TIMEOUT_S", 0.3)
        entry = det._read_video(_UNREAD_MP4)
    finally:
        det.close()
    assert entry["error"].startswith("ffmpeg took over 0.3 s") and "text" not in entry
