"""hf-image: any Hugging Face AutoModelForImageClassification (ViT, ResNet, ...), by hub id or local path, CPU or GPU.

Options as hf-classifier's: model, revision, label_map (raw label -> our label), toxicity_label
(a label, or a list of labels whose probabilities are summed), batch_size (images per forward
pass), device ("auto" | "cpu" | "cuda"), dtype ("auto" -> float16 on CUDA, else float32),
multi_label (sigmoid per label; default: from the model config, else softmax), local_files_only,
threshold, frame_rate and max_frames (video sampling). It reads images and the frames of videos:
`score(texts)` has no answer (None) for a text. A video's frames are sampled by ffmpeg
(`modlens.media.av.sample_frames`: `frame_rate` a second from the start, at most `max_frames`,
near-identical consecutive frames dropped) and classified like images; its sound is not heard
(`unscored_media`: audio). An input with several images or frames gets the per-label maximum (the
most harmful picture decides); `details["frames"]` lists each frame's time and toxicity and
`details["max_frame"]` names the one with the highest toxicity.
"""
from __future__ import annotations

import io
from typing import Any, Sequence

from modlens.detectors.base import (FORWARDS_PER_CALL, Detector, DetectorUnavailable, LabelScores, MediaScore,
                                    check_texts)
from modlens.detectors.hf_common import (LabelPlan, default_toxicity_label, load_pretrained, model_version,
                                         pick_dtype, probabilities)
from modlens.detectors.minilm import pick_device
from modlens.media import MediaBlob, MediaInput
from modlens.media.av import FRAME_RATE, MAX_FRAMES
from modlens.paths import portable_model

MODALITIES = ("image", "video")


class HFImageClassifier(Detector):
    name = "hf-image"
    modalities = MODALITIES
    # False although it holds a torch model: `score` (texts) answers None at once; only `score_media`
    # runs the model, and the chunked audit, the one caller that overlaps chunks, scores texts
    releases_gil = False

    def __init__(self, model: Any, processor: Any, *, source: str, source_version: str, device: str, dtype: str,
                 label_map: dict[str, str], toxicity_label: str | list[str], batch_size: int, multi_label: bool,
                 frame_rate: float = FRAME_RATE, max_frames: int = MAX_FRAMES):
        self.model, self.processor = model, processor
        self.frame_rate, self.max_frames = float(frame_rate), int(max_frames)
        self.source, self.device, self.dtype = source, device, dtype
        self.batch_size, self.multi_label = int(batch_size), bool(multi_label)
        # counted in inputs; an input usually carries one image, so passes stay near batch_size rows
        self.max_batch = self.batch_size * FORWARDS_PER_CALL
        self.label_map = dict(label_map)
        self.plan = LabelPlan.build(model.config, self.label_map, toxicity_label, source)
        self.labels, self.toxicity_label = self.plan.labels, self.plan.toxicity_label
        self.version = model_version(portable_model(source), source_version, self.config())

    def config(self) -> dict[str, Any]:
        # device is left out on purpose: where a model runs must not change its version
        return {"model": portable_model(self.source), "label_map": self.label_map, **self.plan.config(),
                "multi_label": self.multi_label, "dtype": self.dtype, "reduce": "max over images and video frames",
                "video_frames": {"rate": self.frame_rate, "max": self.max_frames}}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return [None] * len(check_texts(texts))  # an image model has no answer for a text: missing, never guessed

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        images: list[Any] = []          # decoded RGB images, every input's in one list
        # (input index, sha256, None) of each decoded image; (input index, video sha256, seconds) of a frame
        owner: list[tuple[int, str, float | None]] = []
        details: list[dict[str, Any]] = [{} for _ in inputs]
        for i, item in enumerate(inputs):
            for blob in item.media:
                if blob.kind == "video":
                    self._add_frames(blob, i, images, owner, details[i])
                    continue
                if blob.kind != "image":
                    details[i].setdefault("unscored_media", []).append(blob.kind)
                    continue
                try:
                    images.append(decode(blob))
                except Exception as err:  # a truncated or corrupt file costs only its own score
                    details[i].setdefault("undecodable", []).append({"sha256": blob.sha256, "error": str(err)})
                    continue
                owner.append((i, blob.sha256, None))
            if item.text:
                details[i]["ignored_text"] = True
        per_image = self._forward(images)
        best: list[LabelScores | None] = [None] * len(inputs)
        for (i, sha256, seconds), scores in zip(owner, per_image):
            current = best[i]
            best[i] = scores if current is None else {k: max(v, current[k]) for k, v in scores.items()}
            toxicity = scores[self.toxicity_label]
            if seconds is None:
                details[i].setdefault("images", []).append({"sha256": sha256, "toxicity": toxicity})
                continue
            details[i].setdefault("frames", []).append({"video": sha256, "seconds": seconds, "toxicity": toxicity})
            top = details[i].get("max_frame")
            if top is None or toxicity > top["toxicity"]:
                details[i]["max_frame"] = {"video": sha256, "seconds": seconds, "toxicity": toxicity}
        out = []
        for i, labels in enumerate(best):
            if labels is None:
                details[i]["reason"] = "no image" if "undecodable" not in details[i] else "no decodable image"
            out.append(MediaScore(labels, details[i]))
        return out

    def _add_frames(self, blob: MediaBlob, i: int, images: list[Any], owner: list[tuple[int, str, float | None]],
                    details: dict[str, Any]) -> None:
        """The video's sampled frames, decoded, appended to `images` (owned by input `i`)."""
        from modlens.media.av import AvUnavailable, has_audio, sample_frames

        try:
            frames = sample_frames(blob, rate=self.frame_rate, max_frames=self.max_frames)
            if has_audio(blob):  # the sound is not heard: the case is not fully read here
                details.setdefault("unscored_media", []).append("audio")
        except AvUnavailable as err:  # no ffmpeg, or a broken file: only this video goes unread
            details.setdefault("undecodable", []).append({"sha256": blob.sha256, "error": str(err), "fix": err.fix})
            return
        for frame in frames:
            images.append(decode(frame.image))
            owner.append((i, blob.sha256, frame.seconds))

    def _forward(self, images: list[Any]) -> list[LabelScores]:
        import torch

        out: list[LabelScores] = []
        dtype = getattr(torch, self.dtype)
        with torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                batch = self.processor(images=images[start:start + self.batch_size], return_tensors="pt")
                pixels = batch["pixel_values"].to(device=self.device, dtype=dtype)
                out.extend(self.plan.scores(row) for row in probabilities(self.model(pixel_values=pixels).logits,
                                                                          self.multi_label))
        return out

    def close(self) -> None:
        self.model = None


def decode(blob: MediaBlob) -> Any:
    """The image as RGB (the first frame of a GIF or an animated WebP; transparency on white)."""
    from PIL import Image

    with Image.open(io.BytesIO(blob.data)) as im:
        im.seek(0)
        if im.mode in ("RGBA", "LA", "P"):
            rgba = im.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            return flat
        return im.convert("RGB")


def _load(model: str, revision: str | None, local_files_only: bool | None) -> tuple[Any, Any, str]:
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    # typed as Any: some transformers releases annotate from_pretrained and some do not
    processor_class: Any = AutoImageProcessor

    def load(name: str, **kw: Any) -> tuple[Any, Any]:
        # use_fast=False: the fast processors need torchvision, which modlens does not install
        return (AutoModelForImageClassification.from_pretrained(name, **kw),
                processor_class.from_pretrained(name, use_fast=False, **kw))

    return load_pretrained(model, revision, local_files_only, load, what="image classifier")


def create(*, model: str | None = None, revision: str | None = None, label_map: dict[str, str] | None = None,
           toxicity_label: str | list[str] | None = None, batch_size: int = 16, device: str = "auto",
           dtype: str = "auto", multi_label: bool | None = None, local_files_only: bool | None = None,
           threshold: float | None = None, frame_rate: float = FRAME_RATE,
           max_frames: int = MAX_FRAMES) -> HFImageClassifier:
    try:
        import PIL  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ModuleNotFoundError as err:
        name = "pillow" if err.name == "PIL" else err.name
        raise DetectorUnavailable("missing_dependency", f"hf-image needs {err.name}", f"pip install {name}") from err
    if frame_rate <= 0 or max_frames < 1:
        raise DetectorUnavailable("error", "hf-image: frame_rate must be > 0 and max_frames >= 1",
                                  f"e.g. frame_rate = {FRAME_RATE}, max_frames = {MAX_FRAMES}")
    if not model:
        raise DetectorUnavailable.needs_options("hf-image", ["model"], 'set options.model (hub id or directory), e.g. '
                                                'options = { model = "google/vit-base-patch16-224", toxicity_label = [...] }')
    label_map = dict(label_map or {})
    dev = pick_device(device)
    dtype_name = pick_dtype(dev, dtype)
    m, processor, source_version = _load(model, revision, local_files_only)
    if multi_label is None:
        multi_label = m.config.problem_type == "multi_label_classification"
    if toxicity_label is None:
        toxicity_label = default_toxicity_label(m.config, label_map, model)
    m = m.to(device=dev, dtype=getattr(torch, dtype_name)).eval()
    det = HFImageClassifier(m, processor, source=model, source_version=source_version, device=dev, dtype=dtype_name,
                            label_map=label_map, toxicity_label=toxicity_label, batch_size=batch_size,
                            multi_label=multi_label, frame_rate=frame_rate, max_frames=max_frames)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
