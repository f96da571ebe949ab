"""The command-line programs modlens runs instead of Python bindings (ffmpeg and ffprobe, espeak-ng,
tesseract): found on PATH, run with a time limit, and a blob handed to them as a file. A missing
program, a timeout or a failed run raises the caller's own error type (media's AvUnavailable and
OcrUnavailable, fusion's FusionUnavailable), built from (message, fix), with a fix a user can apply."""
from __future__ import annotations

import shutil
import signal
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


def run_command(name: str, args: list[str], *, unavailable: Unavailable, timeout_s: float, timeout_fix: str,
                stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `name args...` and return what it did, whatever its exit code (ffmpeg without an output
    file lists a file's streams and exits 1); only a missing program or a timeout raises `unavailable`."""
    command = [program_path(name, unavailable), *args]
    try:
        return subprocess.run(command, input=stdin, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise unavailable(f"{name} took over {timeout_s:g} s", timeout_fix) from None


def run_program(name: str, args: list[str], *, unavailable: Unavailable, timeout_s: float, timeout_fix: str,
                failure_fix: str, stdin: bytes | None = None) -> bytes:
    """Run `name args...` and return its stdout; a timeout or a non-zero exit raises `unavailable`
    quoting the program's last error line, with `timeout_fix` or `failure_fix`."""
    done = run_command(name, args, unavailable=unavailable, timeout_s=timeout_s, timeout_fix=timeout_fix, stdin=stdin)
    if done.returncode != 0:
        raise failed(name, done, unavailable, failure_fix)
    return done.stdout


def failed(name: str, done: subprocess.CompletedProcess[bytes], unavailable: Unavailable, fix: str) -> ModlensError:
    """The error for a program that exited non-zero (`run_command`'s caller checks): its exit code and
    last error line, with `fix`. One killed by a signal (a crash: a negative return code) prints
    nothing of it: the signal is named instead."""
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    said = lines[-1] if lines else "no message"
    if done.returncode < 0:
        try:
            how = f"killed by signal {signal.Signals(-done.returncode).name}"
        except ValueError:
            how = f"killed by signal {-done.returncode}"
        return unavailable(f"{name} failed ({how}){': ' + said if lines else ''}", fix)
    return unavailable(f"{name} failed (exit {done.returncode}): {said}", fix)


# program -> (its version flag, the word its version follows): "ffmpeg version 5.1.6-0+deb12u1 Copyright ...",
# "eSpeak NG text-to-speech: 1.51 Data at: ...", "tesseract 5.3.0\n leptonica-1.82.0 ..."
_VERSION_FLAGS = {"espeak-ng": ("--version", "text-to-speech:"), "tesseract": ("--version", "tesseract")}
VERSION_TIMEOUT_S = 60


def program_version(name: str, unavailable: Unavailable) -> str:
    """The installed program's version string, which goes into detector versions and case parameters
    (another version of the program can read or make other bytes). Not cached here: callers cache it,
    so a test that takes the program off the PATH can clear their cache."""
    flag, marker = _VERSION_FLAGS.get(name, ("-version", "version"))
    done = run_command(name, [flag], unavailable=unavailable, timeout_s=VERSION_TIMEOUT_S,
                       timeout_fix=f"check that `{name} {flag}` answers")
    if done.returncode != 0:
        raise failed(name, done, unavailable, f"check that `{name} {flag}` runs; reinstall {name} if it does not")
    # Tesseract before 4 printed its version on stderr
    words = (done.stdout or done.stderr).decode("utf-8", "replace").split()
    if marker in words[:4] and words.index(marker) + 1 < len(words):
        return words[words.index(marker) + 1]
    return " ".join(words[:3]) or "unknown"


@contextmanager
def blob_file(blob: MediaBlob, prefix: str) -> Iterator[Path]:
    """The blob written to a temporary file named by its type's extension, removed after: a file, not a
    pipe, since an MP4's index may sit at its end, which ffmpeg and ffprobe cannot seek to on stdin."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        path = Path(tmp) / f"in{blob.extension}"
        path.write_bytes(blob.data)
        yield path
