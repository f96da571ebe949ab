"""The asr detector: pocketsphinx (its wheel's US-English model) on espeak-ng speech, a tiny randomly
initialised wav2vec2 CTC model built here (the code path of any Hugging Face ASR model id), a
video's sound and frames read in the order they play, each part's contribution, and failures."""
from __future__ import annotations

import json

import pytest

from modlens.detectors import registry
from modlens.media import MediaInput
from modlens.media.answers import ocr_failures
from modlens.media.asr import AsrUnavailable
from realtools import requires

pytestmark = requires("espeak-ng", "ffmpeg", "tesseract")


@pytest.fixture(scope="module")
def det():
    d = registry.create("asr", text_detector="profanity-check")
    yield d
    d.close()


def speech(text: str):
    from modlens.fusion.render.speech import synthesize

    return synthesize(text, voice="en-us", speed_wpm=130)


def test_pocketsphinx_transcribes_speech_with_times_and_confidence(det):
    from modlens.media.av import pcm16k

    clip = speech("hello world")
    heard = det.engine.transcribe(pcm16k(clip))
    assert heard.text and 0 <= heard.confidence <= 1
    starts = [w.start_s for w in heard.words]
    assert starts == sorted(starts) and all(w.end_s >= w.start_s for w in heard.words)
    out = det.score_media([MediaInput("", (clip,))])[0]
    assert out.labels is not None
    [entry] = out.details["asr"]
    assert entry == {"sha256": clip.sha256, "engine": "pocketsphinx", "version": det.engine.version,
                     "text": heard.text, "confidence": heard.confidence}
    assert out.details["fused_text"] == heard.text
    assert det.version.startswith("alt-profanity-check") and "+pocketsphinx-5." in det.version


def test_video_is_heard_and_read_in_the_order_it_plays(det):
    from modlens.fusion.render.video import AudioSegment, make_video, text_card_segment

    clip = speech("hello")
    video = make_video([AudioSegment(clip, None, "A"), text_card_segment("idiots", role="B")])
    out = det.score_media([MediaInput("caption", (video,))])[0]
    heard = out.details["asr"][0]["text"]
    [read] = out.details["ocr"]
    assert read["sha256"] == video.sha256 and "idiots" in read["text"].lower()
    assert [f["seconds"] for f in read["frames"]] == sorted(f["seconds"] for f in read["frames"])
    # the caption first, then the speech (played first), then the card shown after it
    assert out.details["fused_text"] == f"caption {heard} {read['text']}"
    parts = out.details["contributions"]
    assert set(parts) == {"caption", "ocr", "asr"}
    alone = det.inner.score([parts["ocr"]["text"]])[0]
    assert parts["ocr"]["toxicity"] == pytest.approx(det.inner.toxicity(alone))


def test_a_failed_recognition_is_an_error_not_a_score(det, monkeypatch):
    def broken(pcm):
        raise AsrUnavailable("decoder crashed", "reinstall pocketsphinx")

    monkeypatch.setattr(det.engine, "transcribe", broken)
    clip = speech("hello there")
    out = det.score_media([MediaInput("", (clip,)), MediaInput("plain text")])
    assert out[0].labels is None and "decoder crashed" in out[0].details["reason"]
    assert ocr_failures(out[0].details) == ["decoder crashed"]
    assert out[1].labels is not None  # the batch's other inputs are scored


def test_hugging_face_asr_model_by_folder_matches_the_pipeline(tmp_path):
    import torch
    import transformers
    from modlens.media.av import pcm16k

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, **{c: i + 5 for i, c in enumerate("etaoinsrhdlu")}}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    tok = transformers.Wav2Vec2CTCTokenizer(str(tmp_path / "vocab.json"), word_delimiter_token="|")
    fe = transformers.Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, return_attention_mask=False)
    transformers.Wav2Vec2Processor(feature_extractor=fe, tokenizer=tok).save_pretrained(str(tmp_path / "m"))
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
                                         conv_stride=(5, 4), conv_kernel=(10, 4), num_conv_pos_embeddings=8,
                                         num_conv_pos_embedding_groups=2, do_stable_layer_norm=False)
    transformers.Wav2Vec2ForCTC(config).save_pretrained(str(tmp_path / "m"))

    det = registry.create("asr", text_detector="profanity-check", model=str(tmp_path / "m"), ocr=False)
    assert det.engine.engine == "hf-asr" and det.engine.version.startswith("dir.")
    assert det.modalities == ("text", "audio", "video")
    clip = speech("hello world")
    out = det.score_media([MediaInput("", (clip,))])[0]
    import numpy as np

    pipe = transformers.pipeline("automatic-speech-recognition", model=str(tmp_path / "m"), device="cpu")
    audio = np.frombuffer(pcm16k(clip), dtype="<i2").astype(np.float32) / 32768.0
    want = " ".join(pipe({"raw": audio, "sampling_rate": 16000})["text"].split())
    assert out.details["asr"][0]["text"] == want and out.details["asr"][0]["confidence"] is None
    assert out.details["asr"][0]["engine"] == "hf-asr"
    other = registry.create("asr", text_detector="profanity-check", model=str(tmp_path / "m"), ocr=False)
    assert other.version == det.version  # the same weights, the same version
