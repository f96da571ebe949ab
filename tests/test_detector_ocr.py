"""The `ocr` detector: real Tesseract over images rendered here, then a real text detector
(profanity-check: fast and lexical, so what it sees decides its score) over caption + OCR text."""
from __future__ import annotations

import json

import pytest
from media_helpers import blank_image, silent_wav, text_image
from realtools import requires

from modlens.detectors import ocr as ocr_module
from modlens.detectors import registry
from modlens.media import MediaBlob, MediaInput
from modlens.media.ocr import tesseract_version

pytestmark = requires("tesseract")


@pytest.fixture(scope="module")
def det():
    d = registry.create("ocr", text_detector="profanity-check")
    yield d
    d.close()


@pytest.fixture(scope="module")
def profanity():
    return registry.create("profanity-check")


def test_identity_labels_and_version(det, profanity):
    assert det.name == "ocr+profanity-check" and det.modalities == ("text", "image")
    assert det.labels == profanity.labels and det.toxicity_label == profanity.toxicity_label
    assert det.threshold == profanity.threshold
    assert det.version.startswith(f"{profanity.version}+tesseract-{tesseract_version()}+cfg.")
    other = registry.create("ocr", text_detector="profanity-check", psm=6)
    assert other.version != det.version  # the page segmentation mode changes what is read
    assert registry.create("ocr", text_detector="profanity-check", workers=1).version == det.version
    assert registry.create("ocr", text_detector="profanity-check", threshold=0.2).threshold == 0.2


def test_version_follows_the_text_detectors_version_not_its_settings(minilm):
    """The text detector's own version names what decides its scores; options of it that do not
    (minilm-toxicity's batch_size, its folder) must not make the ocr detector another version."""
    texts = ["you are a stupid idiot", "have a nice day", "what a load of rubbish this is"]
    a = registry.create("ocr", text_detector="minilm-toxicity", text_options={"batch_size": 2})
    b = registry.create("ocr", text_detector="minilm-toxicity", text_options={"batch_size": 64})
    try:
        assert a.inner.version == b.inner.version == minilm.version
        assert [s["toxic"] for s in a.score(texts)] == pytest.approx([s["toxic"] for s in b.score(texts)], abs=1e-6)
        assert a.version == b.version
        assert a.config()["text_config"]["batch_size"] == 2  # still logged beside
    finally:
        a.close()
        b.close()


def test_plain_texts_are_scored_by_the_text_detector(det, profanity):
    texts = ["you are a stupid idiot", "have a nice day"]
    assert det.score(texts) == profanity.score(texts)


def test_fused_text_is_caption_plus_what_tesseract_read(det, profanity):
    insult = text_image("you are a stupid idiot")
    out = det.score_media([MediaInput("look at this", (insult,)), MediaInput("look at this")])
    d = out[0].details
    assert d["ocr"][0]["text"] == "you are a stupid idiot"  # golden: a plain background reads back exactly
    assert d["ocr"][0]["sha256"] == insult.sha256 and d["ocr"][0]["engine"] == "tesseract"
    assert d["ocr"][0]["version"] == tesseract_version() and 0.5 < d["ocr"][0]["confidence"] <= 1
    assert d["fused_text"] == "look at this you are a stupid idiot"
    assert out[0].labels == profanity.score([d["fused_text"]])[0]  # the inner detector decided, on the fused text
    assert out[1].details == {"ocr": [], "fused_text": "look at this"}
    assert out[1].labels == profanity.score(["look at this"])[0]
    # the metamorphic point of the whole pipeline: the caption alone is benign, caption + image is not
    assert det.toxicity(out[0].labels) > 0.5 > det.toxicity(out[1].labels)


def test_several_images_an_image_only_reply_and_an_empty_picture(det):
    a, b = text_image("you are"), text_image("a stupid idiot", fmt="JPEG")
    out = det.score_media([MediaInput("", (a, b)), MediaInput("", (blank_image(),))])
    assert out[0].details["fused_text"] == "you are a stupid idiot"
    assert [o["sha256"] for o in out[0].details["ocr"]] == [a.sha256, b.sha256]
    blank = out[1].details["ocr"][0]
    assert blank["text"] == "" and blank["confidence"] is None
    assert out[1].labels is not None and out[1].details["fused_text"] == ""  # a picture without words is benign


def test_audio_and_video_are_not_read(det):
    wav = silent_wav()
    out = det.score_media([MediaInput("what a nice day", (wav,)), MediaInput("", (wav,))])
    assert out[0].labels is not None and out[0].details["unscored_media"] == ["audio"]
    assert out[0].details["fused_text"] == "what a nice day"
    # nothing readable: no answer rather than a confident "not toxic" for an empty text
    assert out[1].labels is None and out[1].details["unscored_media"] == ["audio"]
    assert "not read" in out[1].details["reason"]


def test_an_unreadable_image_costs_only_its_own_input(det):
    broken = MediaBlob(text_image("idiot").data[:80], "image/png")  # a PNG header, cut short
    good = text_image("stupid idiot")
    out = det.score_media([MediaInput("caption", (broken,)), MediaInput("", (good,))])
    assert out[0].labels is None and out[0].details["reason"].startswith("OCR failed")
    assert out[0].details["ocr"][0]["sha256"] == broken.sha256 and "error" in out[0].details["ocr"][0]
    assert out[1].details["fused_text"] == "stupid idiot" and out[1].labels is not None


def test_ocr_results_are_cached_by_image_hash(monkeypatch):
    det = registry.create("ocr", text_detector="profanity-check", workers=2)
    calls = []
    real = ocr_module.read_text

    def counting(blob, **kw):  # a spy: the real Tesseract still runs
        calls.append(blob.sha256)
        return real(blob, **kw)

    monkeypatch.setattr(ocr_module, "read_text", counting)
    imgs = [text_image(w) for w in ("idiot", "hello", "stupid")]
    first = det.score_media([MediaInput("", (imgs[0],)), MediaInput("", (imgs[1], imgs[0])),
                             MediaInput("", (imgs[2],))])
    assert sorted(calls) == sorted(i.sha256 for i in imgs)  # the repeated image was read once, in parallel
    again = det.score_media([MediaInput("", (imgs[2], imgs[1]))])
    assert len(calls) == 3  # all from the cache
    assert again[0].details["fused_text"] == "stupid hello"
    assert [o.details["fused_text"] for o in first] == ["idiot", "hello idiot", "stupid"]
    det._cache.size = 1
    det.score_media([MediaInput("", (text_image("nice"),))])
    assert len(det._cache) == 1  # bounded: the oldest entries go


def test_missing_tesseract_language_and_text_detector_are_statuses(monkeypatch, tmp_path):
    st = registry.status("ocr", text_detector="profanity-check", lang="xyz")
    assert st.status == "missing_dependency" and st.fix == "apt-get install tesseract-ocr-xyz"
    st = registry.status("ocr", text_detector="no-such-detector")
    assert st.status == "error" and "no-such-detector" in st.message
    st = registry.status("ocr", text_detector="hf-classifier")  # needs a model: its own status and fix
    assert st.status == "needs_options" and st.message.startswith("ocr: text detector hf-classifier") and st.fix
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on the PATH
    tesseract_version.cache_clear()
    try:
        st = registry.status("ocr", text_detector="profanity-check")
    finally:
        monkeypatch.undo()
        tesseract_version.cache_clear()
    assert st.status == "missing_dependency" and "apt-get install tesseract-ocr" in st.fix


def test_detectors_listing_shows_what_each_detector_reads(capsys, monkeypatch):
    from modlens.cli import detectors as listing
    from modlens.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real, collected = listing.collect, []
    monkeypatch.setattr(listing, "collect", lambda presets=True: collected.append(real(presets)) or collected[-1])
    assert main(["detectors", "--json", "--no-presets"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["ocr"]["status"] == "loaded" and rows["ocr"]["extra"]["modalities"] == ["text", "image"]
    assert rows["minilm-toxicity"]["extra"]["modalities"] == ["text"]
    assert rows["hf-image"]["status"] == "needs_options" and rows["hf-image"]["extra"]["modalities"] == ["image", "video"]
    assert rows["http"]["extra"]["modalities"] == ["text", "image", "audio", "video"]  # what it can send
    # the plain listing prints the statuses the JSON listing collected: loading every detector
    # again (the MiniLM ONNX export included) would only repeat that work
    assert len(collected) == 1
    monkeypatch.setattr(listing, "collect", lambda presets=True: collected[0] if not presets else pytest.fail("presets"))
    assert main(["detectors", "--no-presets"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ocr "))
    assert "text,image" in line and "loaded" in line
