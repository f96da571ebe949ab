"""hf-image, loaded from tiny random ViT and ResNet classifiers saved in tmp_path: the same code
path a hub model such as google/vit-base-patch16-224 takes (AutoImageProcessor without
torchvision, batched forward passes, label map, toxicity label, device and dtype choice)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import torch
from PIL import Image

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable  # noqa: E402
from modlens.detectors.hf_common import pick_dtype  # noqa: E402
from modlens.media import MediaBlob, MediaInput  # noqa: E402
from realtools import requires

ID2LABEL = {0: "ok", 1: "toxic"}


def save_tiny_vit(path, seed=0):
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(seed)
    config = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=37, num_labels=2, id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()})
    ViTForImageClassification(config).save_pretrained(str(path))
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(str(path))
    return path


def save_tiny_resnet(path, seed=0):
    from transformers import ConvNextImageProcessor, ResNetConfig, ResNetForImageClassification

    torch.manual_seed(seed)
    config = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic", num_labels=3,
                          id2label={0: "benign", 1: "hateful", 2: "sexual"})
    ResNetForImageClassification(config).save_pretrained(str(path))
    # the processor microsoft/resnet-50 ships with (resize shortest edge + centre crop)
    ConvNextImageProcessor(size={"shortest_edge": 32}, crop_pct=1.0).save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    return save_tiny_vit(tmp_path_factory.mktemp("tiny-vit"))


def png(color, size=(40, 30), mode="RGB") -> MediaBlob:
    """A small picture with a diagonal stripe, so images differ in more than their mean."""
    im = Image.new(mode, size, color)
    for i in range(min(size)):
        im.putpixel((i, i), (0, 0, 0) if mode == "RGB" else (0, 0, 0, 255))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return MediaBlob(buf.getvalue(), "image/png")


def jpeg(color) -> MediaBlob:
    buf = io.BytesIO()
    Image.new("RGB", (50, 50), color).save(buf, format="JPEG")
    return MediaBlob(buf.getvalue(), "image/jpeg")


def reference(model_dir, blob: MediaBlob) -> np.ndarray:
    """An independent forward pass, one image, no modlens code."""
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    processor = AutoImageProcessor.from_pretrained(str(model_dir), use_fast=False)
    model = AutoModelForImageClassification.from_pretrained(str(model_dir)).eval()
    image = Image.open(io.BytesIO(blob.data)).convert("RGB")
    with torch.no_grad():
        logits = model(**processor(images=[image], return_tensors="pt")).logits[0]
    return torch.softmax(logits, -1).numpy()


def test_vit_probabilities_match_an_independent_forward_pass(vit):
    det = registry.create("hf-image", model=str(vit))
    assert det.name == "hf-image" and det.modalities == ("image", "video")
    assert det.labels == ("ok", "toxic") and det.toxicity_label == "toxic"  # binary: second label by convention
    assert det.device == "cpu" and det.dtype == "float32"
    blobs = [png((200, 30, 30)), png((20, 200, 90), size=(64, 64)), jpeg((10, 10, 250))]
    out = det.score_media([MediaInput("", (b,)) for b in blobs])
    for blob, got in zip(blobs, out):
        probs = np.array([got.labels["ok"], got.labels["toxic"]])
        assert np.all((probs >= 0) & (probs <= 1)) and abs(probs.sum() - 1) < 1e-5  # softmax
        np.testing.assert_allclose(probs, reference(vit, blob), atol=1e-5)
        assert det.toxicity(got.labels) == got.labels["toxic"]
        assert got.details["images"] == [{"sha256": blob.sha256, "toxicity": got.labels["toxic"]}]
    assert len({round(o.labels["toxic"], 6) for o in out}) == 3  # different pictures, different scores


def test_batches_equal_one_by_one_and_runs_are_deterministic(vit):
    det = registry.create("hf-image", model=str(vit), batch_size=2)
    inputs = [MediaInput("", (png((i * 40 % 255, 90, 200 - i * 30)),)) for i in range(5)]
    batched = [o.labels for o in det.score_media(inputs)]  # passes of 2, 2 and 1 images
    single = [det.score_media([i])[0].labels for i in inputs]
    for a, b in zip(batched, single):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], abs=1e-5)
    again = registry.create("hf-image", model=str(vit), batch_size=2)
    assert [o.labels for o in again.score_media(inputs)] == batched
    assert again.version == det.version


def test_several_images_give_the_per_label_maximum(vit):
    det = registry.create("hf-image", model=str(vit))
    a, b, c = png((250, 250, 250)), png((0, 120, 0)), png((120, 0, 200), mode="RGB", size=(32, 48))
    alone = [det.score_media([MediaInput("", (x,))])[0].labels for x in (a, b, c)]
    both = det.score_media([MediaInput("caption", (a, b, c))])[0]
    for label in det.labels:
        assert both.labels[label] == pytest.approx(max(s[label] for s in alone), abs=1e-6)
    assert [i["sha256"] for i in both.details["images"]] == [a.sha256, b.sha256, c.sha256]
    assert both.details["ignored_text"] is True


def test_text_has_no_answer_and_inputs_without_images_are_missing(vit, tmp_path):
    det = registry.create("hf-image", model=str(vit))
    assert det.score(["you are an idiot", ""]) == [None, None]
    with pytest.raises(TypeError):
        det.score("one string")
    wav = MediaBlob(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28), "audio/wav")
    out = det.score_media([MediaInput("only text"), MediaInput("", (wav,)), MediaInput("", (png((1, 2, 3)),))])
    assert out[0].labels is None and out[0].details["reason"] == "no image"
    assert out[1].labels is None and out[1].details == {"unscored_media": ["audio"], "reason": "no image"}
    assert out[2].labels is not None


def test_transparent_and_broken_images(vit):
    det = registry.create("hf-image", model=str(vit))
    clear = png((0, 0, 0, 0), mode="RGBA")
    broken = MediaBlob(png((9, 9, 9)).data[:60], "image/png")  # a real PNG header, cut short
    white = png((255, 255, 255))  # the same stripe, drawn on opaque white
    out = det.score_media([MediaInput("", (clear,)), MediaInput("", (broken,)), MediaInput("", (broken, clear)),
                           MediaInput("", (white,))])
    assert out[0].labels == pytest.approx(out[3].labels, abs=1e-6)  # transparency is flattened onto white
    assert out[1].labels is None and out[1].details["reason"] == "no decodable image"
    assert out[1].details["undecodable"][0]["sha256"] == broken.sha256
    assert out[2].labels == pytest.approx(out[0].labels)  # the broken image costs only itself


def test_label_map_combined_toxicity_and_version(vit):
    det = registry.create("hf-image", model=str(vit), label_map={"ok": "benign", "toxic": "hateful"},
                          toxicity_label=["hateful"], threshold=0.3)
    assert det.labels == ("benign", "hateful", "toxicity") and det.toxicity_label == "toxicity"
    assert det.threshold == 0.3
    s = det.score_media([MediaInput("", (png((5, 5, 5)),))])[0].labels
    assert s["toxicity"] == pytest.approx(s["hateful"])
    plain = registry.create("hf-image", model=str(vit))
    assert det.version != plain.version and plain.version.startswith("dir.")
    assert "cpu" not in plain.version  # where it runs is not part of the version
    with pytest.raises(DetectorUnavailable, match="not among"):
        registry.create("hf-image", model=str(vit), toxicity_label="nsfw")


def test_tiny_resnet_through_the_same_code(tmp_path):
    path = save_tiny_resnet(tmp_path / "tiny-resnet")
    with pytest.raises(DetectorUnavailable, match="which one is toxicity"):
        registry.create("hf-image", model=str(path))  # three labels: no convention to guess from
    det = registry.create("hf-image", model=str(path), toxicity_label=["hateful", "sexual"], batch_size=3)
    blobs = [png((200, 10, 10)), jpeg((10, 200, 10)), png((90, 90, 90), size=(80, 20)), png((3, 3, 200))]
    out = det.score_media([MediaInput("", (b,)) for b in blobs])
    for blob, got in zip(blobs, out):
        assert abs(got.labels["benign"] + got.labels["hateful"] + got.labels["sexual"] - 1) < 1e-5
        assert got.labels["toxicity"] == pytest.approx(got.labels["hateful"] + got.labels["sexual"])
        np.testing.assert_allclose([got.labels[k] for k in ("benign", "hateful", "sexual")], reference(path, blob),
                                   atol=1e-5)


def test_missing_model_is_a_status_with_a_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    st = registry.status("hf-image")
    assert st.status == "needs_options" and "model" in st.fix
    st = registry.status("hf-image", model=str(tmp_path / "no-such-dir") + "/")
    assert st.status == "missing_weights" and st.fix
    empty = tmp_path / "empty"
    empty.mkdir()
    st = registry.status("hf-image", model=str(empty))
    assert st.status == "missing_weights" and "save_pretrained" in st.fix
    st = registry.status("hf-image", model="google/vit-base-patch16-224")  # not cached here, offline
    assert st.status == "missing_weights" and st.fix == "run once online: hf download google/vit-base-patch16-224"


def test_cuda_and_fp16_selection_logic(vit):
    """This machine has no GPU, so only the choice is tested: auto picks float16 on CUDA and
    float32 on CPU, and asking for CUDA where there is none is a status, not a crash."""
    assert pick_dtype("cuda", "auto") == "float16" and pick_dtype("cuda:1", "auto") == "float16"
    assert pick_dtype("cpu", "auto") == "float32" and pick_dtype("cpu", "bf16") == "bfloat16"
    with pytest.raises(DetectorUnavailable, match="unknown dtype"):
        pick_dtype("cpu", "float8")
    if not torch.cuda.is_available():
        st = registry.status("hf-image", model=str(vit), device="cuda")
        assert st.status == "error" and "CUDA" in st.message
    else:  # on a GPU machine the real branch runs: float16 weights, float16 pixels, same answers
        det = registry.create("hf-image", model=str(vit))
        assert det.device == "cuda" and det.dtype == "float16"
        assert next(det.model.parameters()).dtype == torch.float16
        blob = png((200, 30, 30))
        got = det.score_media([MediaInput("", (blob,))])[0].labels
        np.testing.assert_allclose([got["ok"], got["toxic"]], reference(vit, blob), atol=5e-3)


needs_ffmpeg = requires("ffmpeg")


def still(color):
    im = Image.new("RGB", (64, 48), color)
    for i in range(48):
        im.putpixel((i, i), (0, 0, 0))
    return im


@needs_ffmpeg
def test_video_frames_are_classified_and_the_most_toxic_frame_decides(vit):
    from modlens.fusion.render.video import ImageSegment, make_video
    from modlens.media.av import sample_frames

    det = registry.create("hf-image", model=str(vit))
    assert det.modalities == ("image", "video")
    video = make_video([ImageSegment(still((230, 20, 20))), ImageSegment(still((20, 20, 230))),
                        ImageSegment(still((20, 200, 20)))], size=(64, 48))
    frames = sample_frames(video)  # what the detector is documented to read: 2 a second, stills once each
    assert [f.seconds for f in frames] == [0.0, 1.5, 3.0]
    per_frame = [reference(vit, f.image) for f in frames]  # independent forward passes of those frames
    extra = png((120, 120, 10))
    got, with_image = det.score_media([MediaInput("", (video,)), MediaInput("", (video, extra))])
    assert "unscored_media" not in got.details  # no audio track: everything was read
    assert [(f["video"], f["seconds"]) for f in got.details["frames"]] == [(video.sha256, f.seconds) for f in frames]
    np.testing.assert_allclose([f["toxicity"] for f in got.details["frames"]], [p[1] for p in per_frame], atol=1e-5)
    np.testing.assert_allclose([got.labels["ok"], got.labels["toxic"]], np.max(per_frame, axis=0), atol=1e-5)
    top = int(np.argmax([p[1] for p in per_frame]))
    assert got.details["max_frame"]["seconds"] == frames[top].seconds
    assert got.details["max_frame"]["toxicity"] == pytest.approx(got.labels["toxic"])
    # a video beside an image: the maximum over the image and every frame
    image_alone = reference(vit, extra)
    assert with_image.labels["toxic"] == pytest.approx(max(image_alone[1], got.labels["toxic"]), abs=1e-5)
    assert with_image.details["images"][0]["sha256"] == extra.sha256


@needs_ffmpeg
def test_video_sound_is_unscored_and_a_broken_video_costs_only_itself(vit):
    from fused_helpers import wav
    from modlens.fusion.render.video import AudioSegment, ImageSegment, make_video

    det = registry.create("hf-image", model=str(vit), max_frames=1)
    talking = make_video([ImageSegment(still((230, 20, 20))), AudioSegment(wav(1.0), still((20, 20, 230)))],
                         size=(64, 48))
    broken = MediaBlob(talking.data[: len(talking.data) // 3], "video/mp4")
    heard, cut, cut_and_image = det.score_media([MediaInput("", (talking,)), MediaInput("", (broken,)),
                                                 MediaInput("", (broken, png((9, 9, 9))))])
    # the frames are classified (max_frames=1: only the first), the speech is not heard: not fully read here
    assert [f["seconds"] for f in heard.details["frames"]] == [0.0]
    assert heard.labels is not None and heard.details["unscored_media"] == ["audio"]
    assert cut.labels is None and cut.details["reason"] == "no decodable image"
    assert cut.details["undecodable"][0]["sha256"] == broken.sha256 and cut.details["undecodable"][0]["error"]
    assert cut_and_image.labels is not None and len(cut_and_image.details["images"]) == 1
    with pytest.raises(DetectorUnavailable, match="frame_rate"):
        registry.create("hf-image", model=str(vit), frame_rate=0)
    # the frame sampling is part of the version: other frames, other scores
    assert det.version != registry.create("hf-image", model=str(vit)).version
