"""asr: speech recognition (pocketsphinx offline, or a Hugging Face ASR model) + OCR of pictures and video frames, then a text detector scores what was heard and read.

What a moderation stack does with speech and video (DUO's decision-level fusion): transcribe the
sound, read the words on screen, put them in the order the video plays them, and judge the text.
Audio clips are transcribed; a video's sound track is transcribed and its frames (sampled by
ffmpeg, `frame_rate` a second, at most `max_frames`, near-identical consecutive frames dropped)
are read by Tesseract, as images are. The fused text is the caption, then every reading in time
order. Each part's own score (caption alone, OCR text alone, transcript alone) is logged in
`details["contributions"]`, so a report can tell which part carried the toxicity.

Options: `text_detector` (registry key, default minilm-toxicity) and `text_options`; `model` (a
Hugging Face automatic-speech-recognition model id or folder; default: pocketsphinx with the
US-English model in its wheel), `revision`, `device` (cpu), `local_files_only`; `ocr` (read
images and frames, default true when Tesseract is installed), `lang`, `psm`, `grey`
(greyscale before OCR), `frame_rate`, `max_frames`; `threshold`.
"""
from __future__ import annotations

from typing import Any, Sequence

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores, MediaScore, config_hash, scoring_config
from modlens.detectors.lru import LruCache
from modlens.media import MediaBlob, MediaInput
from modlens.media.asr import AsrUnavailable, HuggingFaceAsr, PocketSphinx, Transcript
from modlens.media.av import FRAME_RATE, MAX_FRAMES, AvUnavailable, Frame, ffmpeg_path, pcm16k, sample_frames

MODALITIES = ("text", "image", "audio", "video")
CACHE_SIZE = 1024  # transcripts and frame readings kept by media hash (a re-scored case is heard once)
PARTS = ("caption", "ocr", "asr")  # the sources whose own scores are logged as contributions


class AsrDetector(Detector):
    def __init__(self, inner: Detector, engine: PocketSphinx | HuggingFaceAsr, *, ocr: Any = None,
                 frame_rate: float = FRAME_RATE, max_frames: int = MAX_FRAMES):
        self.inner, self.engine, self.ocr = inner, engine, ocr
        self.training = inner.training  # its text detector scores every transcript and text
        self.frame_rate, self.max_frames = float(frame_rate), int(max_frames)
        self.name = f"asr+{inner.name}"
        self.labels, self.toxicity_label, self.threshold = inner.labels, inner.toxicity_label, inner.threshold
        self.max_batch = min(inner.max_batch, 16)
        self.releases_gil = inner.releases_gil  # `score` is the text detector's
        self.modalities = MODALITIES if ocr is not None else ("text", "audio", "video")
        self._heard: LruCache[Transcript] = LruCache(CACHE_SIZE)
        self._frames: LruCache[list[Frame]] = LruCache(CACHE_SIZE)
        ocr_part = f"+tesseract-{ocr.engine_version}" if ocr is not None else ""
        self.version = (f"{inner.version}+{engine.engine}-{engine.version}{ocr_part}"
                        f"+cfg.{config_hash(scoring_config(self.config()))}")

    def config(self) -> dict[str, Any]:
        ocr = None if self.ocr is None else {"engine": "tesseract", "lang": self.ocr.lang, "psm": self.ocr.psm,
                                             "grey": getattr(self.ocr, "grey", False)}
        return {"text_detector": self.inner.name, "text_version": self.inner.version,
                "text_config": self.inner.config(), "asr": self.engine.engine, "asr_version": self.engine.version,
                "sample_rate": 16000, "ocr": ocr, "frame_rate": self.frame_rate, "max_frames": self.max_frames,
                "fused_text": "caption, then OCR text and transcript words in time order, space-joined"}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return self.inner.score(texts)

    def toxicity(self, scores: LabelScores | None) -> float | None:
        return self.inner.toxicity(scores)

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        details = [self._read(item) for item in inputs]
        todo = [i for i, d in enumerate(details) if "reason" not in d]
        # one call to the text detector: every fused text, then every part's text alone
        texts = [details[i]["fused_text"] for i in todo]
        alone: list[tuple[int, str]] = []
        for i in todo:
            for part, text in details[i]["contributions"].items():
                if text["text"] and len(details[i]["contributions"]) > 1:
                    alone.append((i, part))
                    texts.append(text["text"])
        scored = self.inner.score(texts) if texts else []
        labels: list[LabelScores | None] = [None] * len(inputs)
        for i, s in zip(todo, scored):
            labels[i] = s
        for (i, part), s in zip(alone, scored[len(todo):]):
            details[i]["contributions"][part]["toxicity"] = self.inner.toxicity(s)
        for i in todo:  # one part alone: its score is the fused score
            contributions = details[i]["contributions"]
            if len(contributions) == 1:
                next(iter(contributions.values()))["toxicity"] = self.inner.toxicity(labels[i])
        return [MediaScore(lab, d) for lab, d in zip(labels, details)]

    def _read(self, item: MediaInput) -> dict[str, Any]:
        """What this input says, read: {"asr": [...], "ocr": [...], "fused_text", "contributions"},
        or with a "reason" when a reading failed."""
        d: dict[str, Any] = {"asr": [], "ocr": []}
        timeline: list[tuple[float, str, str]] = []  # (seconds from the input's start, source, text)
        offset = 0.0  # media of one input are shown one after another
        images = [b for b in item.media if b.kind == "image"]
        read = self.ocr.read_images(images) if self.ocr is not None and images else {}
        for blob in item.media:
            try:
                if blob.kind == "image":
                    if self.ocr is None:
                        d.setdefault("unscored_media", []).append("image")
                        continue
                    got = read[blob.sha256]
                    if isinstance(got, Exception):
                        raise got
                    d["ocr"].append(self._ocr_entry(blob.sha256, got.text, got.confidence))
                    timeline.append((offset, "ocr", got.text))
                    continue
                heard = self._transcribe(blob)
                d["asr"].append({"sha256": blob.sha256, "engine": self.engine.engine, "version": self.engine.version,
                                 "text": heard.text, "confidence": heard.confidence})
                if heard.words:
                    timeline += [(offset + w.start_s, "asr", w.word) for w in heard.words]
                elif heard.text:
                    timeline.append((offset, "asr", heard.text))
                if blob.kind == "video" and self.ocr is not None:
                    frames, texts = self._read_frames(blob)
                    d["ocr"].append(self._ocr_entry(blob.sha256, " ".join(t for t in texts if t), None,
                                                    frames=[{"seconds": f.seconds, "text": t}
                                                            for f, t in zip(frames, texts)]))
                    timeline += [(offset + f.seconds, "ocr", t) for f, t in zip(frames, texts)]
                elif blob.kind == "video":
                    d.setdefault("unscored_media", []).append("video frames")
            except (AsrUnavailable, AvUnavailable, RuntimeError) as err:
                entry = {"sha256": blob.sha256, "error": str(err)}
                d["asr" if blob.kind != "image" else "ocr"].append(entry)
                d["reason"] = f"{'OCR' if blob.kind == 'image' else 'speech or video reading'} failed: {err}"
                return d
            offset += 1000.0  # the next media starts after this one, whatever its length
        timeline.sort(key=lambda t: t[0])  # stable: at one time, the order read
        caption = item.text.strip()
        words = [text for _, _, text in timeline if text]
        d["fused_text"] = " ".join(([caption] if caption else []) + words)
        d["contributions"] = {part: {"text": text, "toxicity": None} for part, text in (
            ("caption", caption), ("ocr", " ".join(t for _, s, t in timeline if s == "ocr" and t)),
            ("asr", " ".join(t for _, s, t in timeline if s == "asr" and t))) if text or part == "caption" and caption}
        if not d["contributions"]:
            d["contributions"] = {"none": {"text": "", "toxicity": None}}  # nothing heard or read: "" is scored
        return d

    def _ocr_entry(self, sha256: str, text: str, confidence: float | None, **extra: Any) -> dict[str, Any]:
        version = self.ocr.engine_version + (f"+frames.{self.frame_rate:g}fps.{self.max_frames}" if "frames" in extra else "")
        return {"sha256": sha256, "engine": "tesseract", "version": version, "text": text, "confidence": confidence,
                **extra}

    def _transcribe(self, blob: MediaBlob) -> Transcript:
        heard = self._heard.get(blob.sha256)
        if heard is None:
            heard = self.engine.transcribe(pcm16k(blob))
            self._heard.put(blob.sha256, heard)
        return heard

    def _read_frames(self, blob: MediaBlob) -> tuple[list[Frame], list[str]]:
        frames = self._frames.get(blob.sha256)
        if frames is None:
            frames = sample_frames(blob, rate=self.frame_rate, max_frames=self.max_frames)
            self._frames.put(blob.sha256, frames)
        read = self.ocr.read_images([f.image for f in frames])
        texts = []
        for f in frames:
            got = read[f.image.sha256]
            if isinstance(got, Exception):
                raise got
            texts.append(got.text)
        return frames, texts

    def close(self) -> None:
        self.inner.close()


def _hf_engine(model: str, revision: str | None, device: str, local_files_only: bool | None) -> HuggingFaceAsr:
    from modlens.detectors.hf_common import load_pretrained, source_id

    try:
        from transformers import pipeline
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", "asr: a Hugging Face model needs transformers",
                                  "pip install transformers torch") from err

    def load(name: str, **kw: Any) -> tuple[Any, None]:
        model_kw = {"local_files_only": kw["local_files_only"]} if "local_files_only" in kw else {}
        return pipeline("automatic-speech-recognition", model=name, revision=kw.get("revision"), device=device,
                        model_kwargs=model_kw), None

    pipe, _, version = load_pretrained(model, revision, local_files_only, load, what="speech recogniser")
    from modlens.paths import portable_model

    return HuggingFaceAsr(pipe, model=portable_model(model), version=source_id(portable_model(model), version))


def create(*, text_detector: str = "minilm-toxicity", text_options: dict[str, Any] | None = None,
           model: str | None = None, revision: str | None = None, device: str = "cpu",
           local_files_only: bool | None = None, ocr: bool | None = None, lang: str = "eng", psm: int = 11,
           grey: bool = False, frame_rate: float = FRAME_RATE, max_frames: int = MAX_FRAMES,
           threshold: float | None = None) -> AsrDetector:
    from modlens.detectors import registry

    try:
        ffmpeg_path()
    except AvUnavailable as err:
        raise DetectorUnavailable("missing_dependency", f"asr: {err}", err.fix) from err
    if text_detector in ("asr", "ocr"):
        raise DetectorUnavailable("error", f"asr: text_detector cannot be {text_detector}",
                                  "set text_detector = \"minilm-toxicity\"")
    if frame_rate <= 0 or max_frames < 1:
        raise DetectorUnavailable("error", "asr: frame_rate must be > 0 and max_frames >= 1",
                                  f"e.g. frame_rate = {FRAME_RATE}, max_frames = {MAX_FRAMES}")
    try:
        engine: PocketSphinx | HuggingFaceAsr = (_hf_engine(model, revision, device, local_files_only) if model
                                                 else PocketSphinx())
    except AsrUnavailable as err:
        raise DetectorUnavailable("missing_dependency", f"asr: {err}", err.fix) from err
    inner = registry.create_inner("asr", text_detector, text_options)
    reader = None
    if ocr is not False:
        from modlens.detectors.ocr import OcrDetector
        from modlens.media.ocr import OcrUnavailable, tesseract_version

        try:
            reader = OcrDetector(inner, lang=lang, psm=psm, engine_version=tesseract_version(), grey=grey)
        except OcrUnavailable as err:
            if ocr:  # asked for by name: say what is missing
                inner.close()
                raise DetectorUnavailable("missing_dependency", f"asr: {err}", err.fix) from err
    det = AsrDetector(inner, engine, ocr=reader, frame_rate=frame_rate, max_frames=max_frames)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
