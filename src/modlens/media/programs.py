"""The command-line programs modlens runs instead of Python bindings (ffmpeg and ffprobe, espeak-ng,
tesseract): found on PATH, run with a time limit, and a blob handed to them as a file. A missing
program, a timeout or a failed run raises the caller's own error type (media's AvUnavailable and
OcrUnavailable, fusion's FusionUnavailable), built from (message, fix), with a fix a user can apply."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from modlens.errors import ModlensError
from modlens.media import MediaBlob

# program -> how to install it (the Debian package first: that is what CI's `make system-deps` uses)
INSTALL_FIXES: dict[str, str] = {
    "espeak-ng": "install espeak-ng: apt-get install espeak-ng (macOS: brew install espeak-ng)",
    "ffmpeg": "install ffmpeg: apt-get install ffmpeg (macOS: brew install ffmpeg)",
    "ffprobe": "install ffmpeg, which ships ffprobe: apt-get install ffmpeg (macOS: brew install ffmpeg)",
    "tesseract": "install Tesseract: apt-get install tesseract-ocr (macOS: brew install tesseract)",
}

Unavailable = Callable[[str, str], ModlensError]  # (message, fix) -> the caller's error


def program_path(name: str, unavailable: Unavailable) -> str:
    """Where `name` is on PATH, or `unavailable` saying how to install it."""
    path = shutil.which(name)
    if path is None:
        raise unavailable(f"the {name} program is not installed (not found on PATH)",
                          INSTALL_FIXES.get(name, f"install {name}"))
    return path


def run_program(name: str, args: list[str], *, unavailable: Unavailable, timeout_s: float, timeout_fix: str,
                failure_fix: str, stdin: bytes | None = None) -> bytes:
    """Run `name args...` and return its stdout; a timeout or a non-zero exit raises `unavailable`
    quoting the program's last error line, with `timeout_fix` or `failure_fix`."""
    command = [program_path(name, unavailable), *args]
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise unavailable(f"{name} took over {timeout_s:g} s", timeout_fix) from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise unavailable(f"{name} failed (exit {done.returncode}): {lines[-1] if lines else 'no message'}",
                          failure_fix)
    return done.stdout


@contextmanager
def blob_file(blob: MediaBlob, prefix: str) -> Iterator[Path]:
    """The blob written to a temporary file named by its type's extension, removed after: a file, not a
    pipe, since an MP4's index may sit at its end, which ffmpeg and ffprobe cannot seek to on stdin."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        path = Path(tmp) / f"in{blob.extension}"
        path.write_bytes(blob.data)
        yield path
