"""The one place detectors are registered.

Each plugin module defines `create(**options) -> Detector` (raising `DetectorUnavailable`
with a one-line fix when it cannot load) and a module docstring whose first line describes
it. Adding a detector = one file + one line in `PLUGINS`.
"""
from __future__ import annotations

import importlib
from typing import Any

from modlens.detectors.base import Detector, DetectorStatus, DetectorUnavailable

# registry key -> module (relative to modlens.detectors) defining `create(**options)`
PLUGINS: dict[str, str] = {
    "minilm-toxicity": "minilm",
    "profanity-check": "profanity",
    "hf-classifier": "huggingface",
    "cached": "cached",
    "perspective": "perspective",
    "http": "http",
    "jigsaw-bilstm": "keras_jigsaw",
    "ocr": "ocr",
    "hf-image": "hf_image",
}


def available() -> list[str]:
    return list(PLUGINS)


def _module(name: str):
    if name not in PLUGINS:
        raise KeyError(f"unknown detector {name!r}; known: {', '.join(PLUGINS)}")
    return importlib.import_module(f"modlens.detectors.{PLUGINS[name]}")


def create(name: str, /, **options: Any) -> Detector:
    """Load a detector by registry key. Raises DetectorUnavailable (with a fix) or KeyError."""
    try:
        module = _module(name)
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"{name}: {err}", install_fix(err)) from err
    return module.create(**options)


# import name -> pip distribution, where they differ (for the fix line only)
PIP_NAMES = {"sklearn": "scikit-learn", "yaml": "pyyaml", "PIL": "pillow",
             "profanity_check": "alt-profanity-check"}


def install_fix(err: ModuleNotFoundError) -> str:
    """The fix line for a failed plugin import: install the missing third-party package. A
    missing modlens module is a broken install, not something pip can fetch by that name."""
    missing = (err.name or "").split(".")[0]
    if not missing or missing == "modlens":
        return "reinstall modlens (pip install --force-reinstall modlens); this is a packaging bug"
    return f"pip install {PIP_NAMES.get(missing, missing)}"


def modalities(name: str) -> tuple[str, ...]:
    """What a detector can read (a plugin's `MODALITIES`; text when it names none), for the
    listing of detectors that did not load; a loaded one reports its own `modalities`."""
    found: tuple[str, ...] = getattr(_module(name), "MODALITIES", ("text",))
    return found


def describe(name: str) -> str:
    doc = (_module(name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def status(name: str, /, **options: Any) -> DetectorStatus:
    """Try to load a detector and report its status (used by `modlens detectors`)."""
    try:
        det = create(name, **options)
    except DetectorUnavailable as err:
        return DetectorStatus(name, err.status, str(err), err.fix)
    except Exception as err:  # a broken plugin must not break the listing
        return DetectorStatus(name, "error", f"{type(err).__name__}: {err}", "see the log; report a bug")
    try:
        return DetectorStatus(name, "loaded", version=det.version, extra={"modalities": list(det.modalities)})
    finally:
        det.close()
