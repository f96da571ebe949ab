"""The one place detectors are registered.

Each plugin module defines `create(**options) -> Detector` (raising `DetectorUnavailable`
with a one-line fix when it cannot load) and a module docstring whose first line describes
it. Adding a detector = one file + one line in `PLUGINS`; an installed package adds one
through the `modlens.detectors` entry point (see CONTRIBUTING.md).
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from modlens.detectors.base import Detector, DetectorStatus, DetectorUnavailable
from modlens.names import MODULES, PluginError, Registry

# registry key -> module (relative to modlens.detectors) defining `create(**options)`
PLUGINS: dict[str, str] = {
    "minilm-toxicity": "minilm",
    "minilm-toxicity-6": "minilm6",
    "minilm-toxicity-int8": "minilm_int8",
    "minilm-toxicity-onnx-int8": "minilm_onnx",
    "profanity-check": "profanity",
    "hf-classifier": "huggingface",
    "cached": "cached",
    "perspective": "perspective",
    "http": "http",
    "jigsaw-bilstm": "keras_jigsaw",
    "ocr": "ocr",
    "hf-image": "hf_image",
    "asr": "asr",
}


DETECTORS: Registry[ModuleType] = Registry("detector", "modlens.detectors", PLUGINS, group="modlens.detectors",
                                           needs=("create",), kind=MODULES)


def available() -> list[str]:
    """Built-in detectors, then those installed packages add."""
    return DETECTORS.names()


def create(name: str, /, **options: Any) -> Detector:
    """Load a detector by registry key. Raises DetectorUnavailable (with a fix) or UnknownName."""
    try:
        module = DETECTORS.load(name)
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"{name}: {err}", install_fix(err)) from err
    except PluginError as err:
        cause = err.__cause__
        if isinstance(cause, ModuleNotFoundError):
            raise DetectorUnavailable("missing_dependency", str(err), install_fix(cause)) from err
        raise DetectorUnavailable("error", str(err), err.fix) from err
    detector: Detector = module.create(**options)
    for declared in ("remote", "releases_gil"):  # the engine overlaps chunks by them: a truthy "no" must not pass
        value = getattr(detector, declared)
        if not isinstance(value, bool):
            detector.close()
            raise DetectorUnavailable("error", f"{name}: {declared} must be True or False, not {value!r}",
                                      f"declare {declared} = True or False on the detector class (docs/DETECTORS.md)")
    return detector


def accepted_options(name: str) -> list[str] | None:
    """The option names `name`'s `create` takes, read from its signature (no model is loaded);
    None when it takes any (`**options`) or its module cannot be imported here: a missing optional
    package is the load's to report, not a reason to refuse a study made where it is installed."""
    try:
        params = inspect.signature(DETECTORS.load(name).create).parameters.values()
    except (ImportError, PluginError, ValueError, TypeError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def unknown_options(name: str, options: Mapping[str, Any]) -> list[str]:
    """The options a study gives `name` that its `create` does not take (each would fail the
    detector on every participant's computer at `serve`)."""
    takes = accepted_options(name)
    return [] if takes is None else [o for o in options if o not in takes]


def create_inner(wrapper: str, name: str, options: dict[str, Any] | None) -> Detector:
    """The text detector a media detector (`ocr`, `asr`) wraps, its errors worded as the wrapper's."""
    try:
        return create(name, **(options or {}))
    except KeyError as err:
        raise DetectorUnavailable("error", f"{wrapper}: {err.args[0]}", "set text_detector to a registry key") from err
    except DetectorUnavailable as err:
        raise DetectorUnavailable(err.status, f"{wrapper}: text detector {name}: {err}", err.fix) from err


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
    found: tuple[str, ...] = getattr(DETECTORS.load(name), "MODALITIES", ("text",))
    return found


def describe(name: str) -> str:
    doc = (DETECTORS.load(name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def status(name: str, /, **options: Any) -> DetectorStatus:
    """Try to load a detector and report its status (used by `modlens detectors`); an installed
    plug-in's status names its package (`extra["package"]`)."""
    origin = DETECTORS.origin(name)
    extra: dict[str, Any] = {"package": origin} if origin else {}
    try:
        det = create(name, **options)
    except DetectorUnavailable as err:
        return DetectorStatus(name, err.status, str(err), err.fix, extra=extra)
    except Exception as err:  # a broken plugin must not break the listing
        fix = f"report a bug to {origin.split()[0]}" if origin else "see the log; report a bug"
        return DetectorStatus(name, "error", f"{type(err).__name__}: {err}", fix, extra=extra)
    try:
        training = det.training.summary() if det.training is not None else "not declared"
        extra = {**extra, "modalities": list(det.modalities), "training": training}
        label_training = getattr(det, "label_training", None)
        if label_training:  # multi-label heads: each label's version and training data
            extra["labels"] = dict(label_training)
        return DetectorStatus(name, "loaded", version=det.version, extra=extra)
    finally:
        det.close()
