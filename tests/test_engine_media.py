"""Engine.score_media: a study's detectors (profanity-check, text only, and ocr over the embedded
MiniLM) scoring comments with images rendered here, through the engine's second batcher."""
from __future__ import annotations

import asyncio
import threading

import pytest
from media_helpers import silent_wav, text_image
from realtools import requires

from modlens.config import StudyConfig
from modlens.detectors.base import Detector, MediaScore
from modlens.engine import Engine
from modlens.media import MediaInput

OFF = {"normalizer": {"enabled": False}, "perturbation": {"enabled": False}}
pytestmark = requires("tesseract")


@pytest.fixture(scope="module")
def images():
    return {"insult": text_image("you are a stupid idiot"), "greeting": text_image("have a nice day"),
            "pigs": text_image("women are pigs")}


async def test_profanity_check_and_ocr_score_comments_with_images(images):
    study = StudyConfig(detectors=[{"name": "profanity-check"}, {"name": "ocr", "id": "ocr-minilm"}], **OFF)
    engine = Engine(study)
    assert [s.status for s in engine.statuses] == ["loaded", "loaded"], engine.statuses
    inputs = [MediaInput("my holiday photo", (images["insult"],)), MediaInput("my holiday photo", (images["greeting"],)),
              MediaInput("my holiday photo"), MediaInput("", (silent_wav(),)),
              MediaInput("my holiday photo", (images["insult"],))]  # the same input twice: scored once
    try:
        results = await engine.score_media(inputs)
        texts = await engine.score(["my holiday photo you are a stupid idiot", "my holiday photo have a nice day",
                                    "my holiday photo"], only=["ocr-minilm"])
        ocr_runner = engine.runners["ocr-minilm"]
        batches, items = ocr_runner.media_batcher.batches, ocr_runner.media_batcher.items
    finally:
        await engine.close()
    assert len(results) == 5 and all(set(r) == {"profanity-check", "ocr-minilm"} for r in results)
    assert batches == 1 and items == 4  # every input in one score_media call, the duplicate folded in

    # the text-only detector saw the caption alone, and says so
    prof = [r["profanity-check"] for r in results]
    assert prof[0].details == {"ignored_media": True} and prof[2].details == {}
    assert prof[0].toxicity == prof[1].toxicity == prof[2].toxicity  # same caption, same score: blind to the image

    ocr = [r["ocr-minilm"] for r in results]
    assert ocr[0].name == "ocr+minilm-toxicity" and "+tesseract-" in ocr[0].version
    assert ocr[0].details["fused_text"] == "my holiday photo you are a stupid idiot"
    assert ocr[1].details["fused_text"] == "my holiday photo have a nice day"
    assert ocr[0].details["ocr"][0]["sha256"] == images["insult"].sha256
    # decision-level fusion: exactly the text detector's score of caption + OCR text
    for i in range(3):
        assert ocr[i].toxicity == pytest.approx(texts[i]["ocr-minilm"].toxicity, abs=1e-6)
        assert ocr[i].error is None
    assert ocr[0].toxicity > 0.5 > ocr[1].toxicity
    assert ocr[0].toxicity > 0.5 > ocr[2].toxicity  # the caption alone is benign; with its image it is not
    assert ocr[4].toxicity == ocr[0].toxicity
    # audio only: no answer, with the reason in the error and the details kept
    assert ocr[3].toxicity is None and ocr[3].labels is None
    assert ocr[3].error.startswith("missing: nothing readable") and ocr[3].details["unscored_media"] == ["audio"]
    row = ocr[0].to_dict()
    assert row["details"]["fused_text"] and row["toxicity"] == ocr[0].toxicity
    assert prof[2].to_dict()["details"] == {}


class ThreadRecorder(Detector):
    """Records which thread ran each call; its media call fails for inputs that say so."""
    name, version, labels, toxicity_label = "recorder", "1", ("toxic",), "toxic"
    max_batch = 8

    def __init__(self):
        self.threads: list[tuple[str, str]] = []

    def score(self, texts):
        self.threads.append(("text", threading.current_thread().name))
        return [{"toxic": 0.5} for _ in texts]

    def score_media(self, inputs):
        self.threads.append(("media", threading.current_thread().name))
        if any(i.text == "fail" for i in inputs):
            raise RuntimeError("model crashed")
        return [MediaScore({"toxic": len(i.media) / 10}, {"seen": len(i.media)}) for i in inputs]


async def test_text_and_media_share_the_worker_thread_and_failures_are_errors(images):
    det = ThreadRecorder()
    engine = Engine(StudyConfig(detectors=[], **OFF), {"rec": det})
    try:
        text_out, media_out = await asyncio.gather(
            engine.score(["a", "b"]), engine.score_media([MediaInput("c", (images["pigs"],)), MediaInput("d")]))
        failed = await engine.score_media([MediaInput("fail")])
    finally:
        await engine.close()
    assert [r["rec"].toxicity for r in text_out] == [0.5, 0.5]
    assert [r["rec"].toxicity for r in media_out] == [0.1, 0.0]
    assert media_out[0]["rec"].details == {"seen": 1}
    assert {kind for kind, _ in det.threads} == {"text", "media"}
    assert len({name for _, name in det.threads}) == 1 and det.threads[0][1].startswith("det-rec")
    assert failed[0]["rec"].toxicity is None and failed[0]["rec"].error == "RuntimeError: model crashed"
