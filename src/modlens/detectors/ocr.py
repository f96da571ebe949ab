"""ocr: Tesseract reads the text in images, then a text detector scores caption + OCR text (decision-level fusion).

What real moderation stacks do with a picture of text: read it, then judge the words. Options:
`text_detector` (a registry key, default minilm-toxicity), `text_options` (its options), `lang`
(Tesseract language, eng), `psm` (page segmentation mode; 11 finds sparse text anywhere on a
picture), `workers` (images read at once; Tesseract is one process per image and single-threaded
in Debian's build, so two workers use both cores of a small machine), `grey` (greyscale before
OCR). A video's frames are sampled by ffmpeg (`modlens.media.av`: 2 a second, at most 16, a still
read once) and read in time order; its sound is not heard (`unscored_media`: audio; the `asr`
detector hears it), nor is an audio clip.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores, MediaScore, config_hash, scoring_config
from modlens.detectors.lru import LruCache
from modlens.media import MediaBlob, MediaInput
from modlens.media.ocr import TIMEOUT_S, OcrText, OcrUnavailable, read_text, tesseract_version
from modlens.media.programs import failed, run_command

MODALITIES = ("text", "image")
CACHE_SIZE = 4096  # OCR results kept by image hash: a reused meme or a re-scored case is read once


class OcrDetector(Detector):
    modalities = MODALITIES

    def __init__(self, inner: Detector, *, lang: str = "eng", psm: int = 11, workers: int = 1,
                 engine_version: str = "unknown", grey: bool = False):
        if "text" not in inner.modalities:
            raise DetectorUnavailable("error", f"ocr: {inner.name} does not read text",
                                      "set text_detector to a text detector, e.g. minilm-toxicity")
        self.inner = inner
        self.lang, self.psm, self.workers, self.grey = lang, int(psm), max(1, int(workers)), bool(grey)
        self.engine_version = engine_version
        self.name = f"ocr+{inner.name}"
        self.labels, self.toxicity_label, self.threshold = inner.labels, inner.toxicity_label, inner.threshold
        self.training = inner.training  # the text detector scores every text, so its training data is this one's
        self.max_batch = inner.max_batch
        self.releases_gil = inner.releases_gil  # `score` is the text detector's
        self._cache: LruCache[OcrText] = LruCache(CACHE_SIZE)
        self.version = f"{inner.version}+tesseract-{engine_version}+cfg.{config_hash(scoring_config(self.config()))}"

    def config(self) -> dict[str, Any]:
        # workers only changes speed, so it stays out of the version
        grey = {"grey": True} if self.grey else {}  # absent when off: the versions of earlier logs stay valid
        return {"text_detector": self.inner.name, "text_version": self.inner.version,
                "text_config": self.inner.config(), "ocr": "tesseract", "lang": self.lang, "psm": self.psm, **grey,
                "fused_text": "caption + OCR text of each image, space-joined"}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return self.inner.score(texts)  # a comment without images is still scored, by the text detector alone

    def toxicity(self, scores: LabelScores | None) -> float | None:
        return self.inner.toxicity(scores)

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        images = list({b.sha256: b for item in inputs for b in item.of_kind("image")}.values())
        read = self.read_images(images)
        fused: list[str] = []
        details: list[dict[str, Any]] = []
        for item in inputs:
            d: dict[str, Any] = {"ocr": []}
            parts = [item.text.strip()] if item.text.strip() else []
            for blob in item.media:
                if blob.kind == "video":
                    got_video = self._read_video(blob)
                    d["ocr"].append(got_video)
                    if "error" in got_video:
                        d["reason"] = f"OCR failed: {got_video['error']}"
                    elif got_video["text"]:
                        parts.append(got_video["text"])
                    if got_video.get("audio"):
                        d.setdefault("unscored_media", []).append("audio")
                    continue
                if blob.kind != "image":
                    d.setdefault("unscored_media", []).append(blob.kind)
                    continue
                got = read[blob.sha256]
                if isinstance(got, OcrUnavailable):
                    d["ocr"].append({"sha256": blob.sha256, "engine": "tesseract", "version": self.engine_version,
                                     "error": str(got)})
                    d["reason"] = f"OCR failed: {got}"
                    continue
                d["ocr"].append({"sha256": blob.sha256, "engine": "tesseract", "version": self.engine_version,
                                 "text": got.text, "confidence": got.confidence})
                if got.text:
                    parts.append(got.text)
            d["fused_text"] = " ".join(parts)
            if "reason" not in d and not item.text.strip() and not item.of_kind("image") and not item.of_kind("video"):
                # only audio/video: scoring "" would count as a confident "not toxic"
                d["reason"] = "nothing readable: audio and video are not read by ocr"
            fused.append(d["fused_text"])
            details.append(d)
        todo = [i for i, d in enumerate(details) if "reason" not in d]
        scored = self.inner.score([fused[i] for i in todo]) if todo else []
        labels: list[LabelScores | None] = [None] * len(inputs)
        for i, s in zip(todo, scored):
            labels[i] = s
        return [MediaScore(lab, d) for lab, d in zip(labels, details)]

    def read_images(self, images: Sequence[MediaBlob]) -> dict[str, OcrText | OcrUnavailable]:
        """sha256 -> what Tesseract read (or why it could not), from the cache when seen before."""
        out: dict[str, OcrText | OcrUnavailable] = {}
        for blob in images:
            if (kept := self._cache.get(blob.sha256)) is not None:
                out[blob.sha256] = kept
        todo = [b for b in images if b.sha256 not in out]
        if self.workers > 1 and len(todo) > 1:
            with ThreadPoolExecutor(min(self.workers, len(todo)), thread_name_prefix="ocr") as pool:
                results = list(pool.map(self._read_one, todo))
        else:
            results = [self._read_one(b) for b in todo]
        for blob, got in zip(todo, results):
            out[blob.sha256] = got
            if isinstance(got, OcrText):  # failures are not cached: a retry may succeed
                self._cache.put(blob.sha256, got)
        return out

    def _read_video(self, blob: MediaBlob) -> dict[str, Any]:
        """The text on a video's sampled frames, in time order, as one OCR entry of the video."""
        from modlens.media.av import FRAME_RATE, MAX_FRAMES, AvUnavailable, has_audio, sample_frames

        entry: dict[str, Any] = {"sha256": blob.sha256, "engine": "tesseract",
                                 "version": f"{self.engine_version}+frames.{FRAME_RATE:g}fps.{MAX_FRAMES}"}
        try:
            frames = sample_frames(blob)
            entry["audio"] = has_audio(blob)
        except AvUnavailable as err:
            return {**entry, "error": str(err)}
        read = self.read_images([f.image for f in frames])
        texts = []
        for f in frames:
            got = read[f.image.sha256]
            if isinstance(got, OcrUnavailable):
                return {**entry, "error": str(got)}
            texts.append(got.text)
        return {**entry, "text": " ".join(t for t in texts if t), "confidence": None,
                "frames": [{"seconds": f.seconds, "text": t} for f, t in zip(frames, texts)]}

    def _read_one(self, blob: MediaBlob) -> OcrText | OcrUnavailable:
        try:
            return read_text(blob, lang=self.lang, psm=self.psm, grey=self.grey)
        except OcrUnavailable as err:  # this image costs only its own score
            return err

    def close(self) -> None:
        self.inner.close()


def create(*, text_detector: str = "minilm-toxicity", text_options: dict[str, Any] | None = None, lang: str = "eng",
           psm: int = 11, workers: int | None = None, grey: bool = False, threshold: float | None = None) -> OcrDetector:
    from modlens.detectors import registry

    try:
        engine_version = tesseract_version()
        languages = installed_languages()
    except OcrUnavailable as err:
        raise DetectorUnavailable("missing_dependency", f"ocr: {err}", err.fix) from err
    missing = [code for code in lang.split("+") if code not in languages]
    if missing:
        raise DetectorUnavailable("missing_dependency", f"ocr: no Tesseract language data for {'+'.join(missing)}",
                                  f"apt-get install {' '.join('tesseract-ocr-' + m for m in missing)}")
    if text_detector == "ocr":
        raise DetectorUnavailable("error", "ocr: text_detector cannot be ocr itself", "set text_detector = \"minilm-toxicity\"")
    inner = registry.create_inner("ocr", text_detector, text_options)
    try:
        det = OcrDetector(inner, lang=lang, psm=psm, engine_version=engine_version, grey=grey,
                          workers=workers if workers is not None else min(2, os.cpu_count() or 1))
    except DetectorUnavailable:
        inner.close()
        raise
    if threshold is not None:
        det.threshold = float(threshold)
    return det


def installed_languages() -> set[str]:
    """Tesseract's language codes here (`--list-langs`), so a wrong `lang` is a load-time status
    rather than one error per image (Tesseract before 4 listed them on stderr). A listing that exits
    non-zero is OcrUnavailable: what it printed before failing is not the installed languages, and
    its error lines are no language codes."""
    done = run_command("tesseract", ["--list-langs"], unavailable=OcrUnavailable, timeout_s=TIMEOUT_S,
                       timeout_fix="check that `tesseract --list-langs` answers")
    if done.returncode != 0:
        raise failed("tesseract", done, OcrUnavailable, "check that `tesseract --list-langs` runs; reinstall "
                     "tesseract-ocr if it does not")
    lines = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("List of")}
