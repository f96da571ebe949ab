"""Every built-in detector's `releases_gil` is true to what its `score` does. The engine overlaps an
audit's chunks by that declaration alone (`chunks.compute.frees_the_loop`), so a model detector that
forgets it loses the overlap and a plain-Python one that claims it gains only a second chunk to lose
on a stop. Each built-in is loaded as it loads here (the tiny HF models the hf tests save; the shipped
MiniLM and its int8 and ONNX Runtime twins; Tesseract and pocketsphinx for the media wrappers) and
scores a few texts while every torch module's forward and every ONNX Runtime (and, where installed,
Keras) run is counted: the declaration must say whether one ran. A new built-in fails here until it has
a loader below."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import pytest
import torch

from modlens.chunks.compute import frees_the_loop
from modlens.detectors import registry
from modlens.detectors.base import Detector, DetectorUnavailable
from realtools import requires
from test_detector_hf_image import save_tiny_vit
from test_detectors_hf import LABEL_MAP, save_tiny_bert

TEXTS = ["you are a stupid idiot", "have a nice day", "the cat sat on the mat"]


def _cached(tmp: Path) -> Detector:
    table = tmp / "scores.csv"
    table.write_text("text,score\n" + "".join(f"{t},0.5\n" for t in TEXTS), encoding="utf-8")
    return registry.create("cached", path=str(table), text_col="text", score_col="score")


def _perspective(tmp: Path) -> Detector:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PERSPECTIVE_API_KEY", "not-a-key")  # loads without a request; never scores here
        return registry.create("perspective")


SHARED_MINILM = lambda tmp: pytest.fail("stands for the session's `minilm` fixture")  # noqa: E731

# (test id, registry key, loader from a scratch folder, marks)
LOADERS: list[tuple[str, str, Callable[[Path], Detector], Sequence[Any]]] = [
    ("minilm-toxicity", "minilm-toxicity", SHARED_MINILM, ()),
    ("minilm-toxicity-6", "minilm-toxicity-6", lambda tmp: registry.create("minilm-toxicity-6"), ()),
    ("minilm-toxicity-int8", "minilm-toxicity-int8", lambda tmp: registry.create("minilm-toxicity-int8"), ()),
    ("minilm-toxicity-onnx-int8", "minilm-toxicity-onnx-int8",
     lambda tmp: registry.create("minilm-toxicity-onnx-int8", cache_dir=str(tmp / "models")), ()),
    ("profanity-check", "profanity-check", lambda tmp: registry.create("profanity-check"), ()),
    ("hf-classifier", "hf-classifier", lambda tmp: registry.create(
        "hf-classifier", model=str(save_tiny_bert(tmp / "bert")), label_map=LABEL_MAP, toxicity_label="rude"), ()),
    ("cached", "cached", _cached, ()),
    ("perspective", "perspective", _perspective, ()),
    ("http", "http", lambda tmp: registry.create("http", url="http://127.0.0.1:9/score", score_path="$.toxicity"), ()),
    ("jigsaw-bilstm", "jigsaw-bilstm", lambda tmp: registry.create("jigsaw-bilstm"), (requires("keras"),)),
    # the media wrappers' `score` is their text detector's: over a model and over plain Python
    ("ocr+minilm-toxicity", "ocr", lambda tmp: registry.create("ocr"), (requires("tesseract"),)),
    ("ocr+profanity-check", "ocr", lambda tmp: registry.create("ocr", text_detector="profanity-check"),
     (requires("tesseract"),)),
    # holds a torch model, yet its `score` (texts) answers None without it: it must not declare
    ("hf-image", "hf-image", lambda tmp: registry.create("hf-image", model=str(save_tiny_vit(tmp / "vit"))), ()),
    ("asr+minilm-toxicity", "asr", lambda tmp: registry.create("asr"), (requires("ffmpeg", "tesseract"),)),
    ("asr+profanity-check", "asr", lambda tmp: registry.create("asr", text_detector="profanity-check", ocr=False),
     (requires("ffmpeg"),)),
]


def model_runs(det: Detector, texts: Sequence[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """How many torch module forwards, ONNX Runtime runs and Keras predicts `det.score(texts)` makes."""
    runs = 0

    def count(*_: Any) -> None:
        nonlocal runs
        runs += 1

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            count()
            return real(*args, **kwargs)
        return call

    for module, owner in (("onnxruntime", "InferenceSession"), ("tensorflow", "keras.Model")):
        if module in sys.modules:  # a detector that runs one has imported it by now
            cls: Any = sys.modules[module]
            for part in owner.split("."):
                cls = getattr(cls, part)
            monkeypatch.setattr(cls, "run" if module == "onnxruntime" else "predict",
                                counted(getattr(cls, "run" if module == "onnxruntime" else "predict")))
    hook = torch.nn.modules.module.register_module_forward_pre_hook(count)
    try:
        det.score(list(texts))
    finally:
        hook.remove()
    return runs


def test_every_built_in_detector_has_a_loader_here():
    assert {key for _, key, _, _ in LOADERS} == set(registry.PLUGINS)


@pytest.fixture(params=[pytest.param(load, id=tid, marks=list(marks)) for tid, _, load, marks in LOADERS])
def detector(request, tmp_path):
    if request.param is SHARED_MINILM:  # the session's minilm-toxicity (its load is the session's cost): not closed here
        yield request.getfixturevalue("minilm")
        return
    det = request.param(tmp_path)
    yield det
    det.close()


def test_a_detector_declares_releases_gil_exactly_when_its_score_runs_a_model(detector, monkeypatch):
    if detector.remote:  # its requests are awaited on the loop; scoring one here would need its service
        assert frees_the_loop(detector)
        return
    runs = model_runs(detector, TEXTS, monkeypatch)
    assert detector.releases_gil == (runs > 0), (
        f"{detector.name} declares releases_gil = {detector.releases_gil}, but its score ran {runs} model call(s)")
    assert frees_the_loop(detector) == (runs > 0)


def test_the_check_sees_a_model_that_is_not_declared(monkeypatch):
    """The check above fails for a detector that runs a torch model and keeps the default."""
    class Forgot(Detector):
        name, version, labels, toxicity_label = "forgot", "1", ("toxicity",), "toxicity"

        def __init__(self) -> None:
            self.model = torch.nn.Linear(4, 1)

        def score(self, texts: Sequence[str]) -> list[Any]:
            with torch.inference_mode():
                out = torch.sigmoid(self.model(torch.ones(len(texts), 4)))[:, 0].tolist()
            return [{"toxicity": p} for p in out]

    det = Forgot()
    assert model_runs(det, TEXTS, monkeypatch) == 1 and not det.releases_gil and not frees_the_loop(det)


@pytest.mark.parametrize("declared", ["releases_gil", "remote"])
def test_the_registry_refuses_a_declaration_that_is_not_a_bool(declared, monkeypatch):
    """A plug-in's `releases_gil = "no"` would be truthy: the engine would overlap a plain detector."""
    class Plugin(Detector):
        name, version, labels, toxicity_label = "plugin", "1", ("toxicity",), "toxicity"

        def score(self, texts: Sequence[str]) -> list[Any]:
            return [{"toxicity": 0.0} for _ in texts]

    setattr(Plugin, declared, "no")
    monkeypatch.setattr(registry.DETECTORS, "load", lambda name: SimpleNamespace(create=lambda **_: Plugin()))
    with pytest.raises(DetectorUnavailable, match=f"{declared} must be True or False, not 'no'") as err:
        registry.create("plugin")
    assert err.value.status == "error" and f"declare {declared}" in err.value.fix


def test_a_plug_in_that_declares_nothing_is_not_overlapped(monkeypatch):
    class Plugin(Detector):
        name, version, labels, toxicity_label = "plugin", "1", ("toxicity",), "toxicity"

        def score(self, texts: Sequence[str]) -> list[Any]:
            return [{"toxicity": 0.0} for _ in texts]

    monkeypatch.setattr(registry.DETECTORS, "load", lambda name: SimpleNamespace(create=lambda **_: Plugin()))
    det = registry.create("plugin")
    assert det.releases_gil is False and not frees_the_loop(det)
