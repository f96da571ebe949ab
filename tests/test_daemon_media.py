"""Images attached to live comments through the real daemon app (`comment_media`): a comment with a
picture of text is scored by profanity-check and by ocr(profanity-check), the OCR text and the
image hash are logged, the bytes only when the study keeps them, and every bad input is refused
with its documented code, writing nothing. Tesseract must be installed (Debian tesseract-ocr)."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import sqlite3

import pytest

from modlens.config import parse_study
from modlens.services.detectors import load_detectors

from tests.daemon_helpers import Client, comments_msg, connect, running_daemon
from realtools import requires

pytestmark = requires("tesseract")

CAPTION = "look at this"
WORDS_IN_IMAGE = "you stupid idiot"


def media_study(collect: bool = True, keep_bytes: bool = False, **media):
    return parse_study({
        "study_id": "media-test", "normalizer": {"enabled": False}, "perturbation": {"enabled": False},
        "detectors": [{"name": "profanity-check"},
                      {"name": "ocr", "id": "ocr", "options": {"text_detector": "profanity-check", "workers": 1}}],
        "media": {"collect": collect, "keep_bytes": keep_bytes, **media}})


def text_image(text: str = WORDS_IN_IMAGE, fmt: str = "PNG") -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (640, 160), "white")
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    ImageDraw.Draw(img).text((24, 50), text, fill="black", font=font)
    out = io.BytesIO()
    img.save(out, fmt)
    return out.getvalue()


def item(data: bytes, mime: str = "image/png", position: int = 0, url: str | None = "https://pbs.twimg.com/media/abc.png",
         sha: str | None = None) -> dict:
    return {"mime": mime, "sha256": sha or hashlib.sha256(data).hexdigest(), "data_b64": base64.b64encode(data).decode(),
            "url": url, "position": position}


def media_msg(mid: str, items: list[dict], key: str = "c1", platform: str = "youtube") -> dict:
    return {"type": "comment_media", "id": mid, "platform": platform, "comment_key": key, "items": items}


def query(tmp_path, sql: str, params: tuple = ()) -> list[tuple]:
    con = sqlite3.connect(tmp_path / "study.sqlite")
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


async def session(url: str, *, with_comment: bool = True) -> Client:
    ws = await connect(url)
    c = Client(ws)
    await c.hello()
    if with_comment:
        await c.request(comments_msg("m1", [("c1", CAPTION)]), "comments_ok")
    return c


@pytest.fixture(scope="module")
def loaded_detectors():
    det = load_detectors(media_study().detectors)
    assert not [s for s in det.statuses if s.status != "loaded"], det.statuses
    return det.detectors


def test_comment_image_is_ocr_scored_and_logged_without_its_bytes(tmp_path, loaded_detectors):
    png = text_image()

    async def run():
        async with running_daemon(tmp_path, media_study(), detectors=loaded_detectors) as (url, _):
            c = await session(url)
            ok = await c.request(media_msg("x1", [item(png)]), "comment_media_ok", timeout=60)
            again = await c.request(media_msg("x2", [item(png)]), "comment_media_ok", timeout=60)
            await c.ws.close()
            return ok, again

    ok, again = asyncio.run(run())
    assert ok["type"] == "comment_media_ok", ok
    sha = hashlib.sha256(png).hexdigest()
    assert ok["media"] == [{"position": 0, "sha256": sha, "media_id": ok["media"][0]["media_id"], "kept": False}]
    # only the detector that reads images scores media (profanity-check is text-only)
    assert set(ok["detectors"]) == {"ocr"}
    ocr = ok["detectors"]["ocr"]
    assert ocr["name"] == "ocr+profanity-check" and ocr["version"]
    read = ocr["details"]["ocr"][0]
    assert read["sha256"] == sha and WORDS_IN_IMAGE in read["text"].lower()
    # the caption alone is benign; caption + OCR text is not: the fusion the image carried
    assert ocr["toxicity"] > 0.5

    media = query(tmp_path, "SELECT sha256, kind, mime, n_bytes, path FROM media")
    assert media == [(sha, "image", "image/png", len(png), None)]
    assert query(tmp_path, "SELECT c.comment_key, cm.position, cm.source_url FROM comment_media cm "
                           "JOIN comments c USING (comment_id)") == [("c1", 0, "https://pbs.twimg.com/media/abc.png")]
    ocr_rows = query(tmp_path, "SELECT o.engine, t.text, o.confidence FROM ocr_results o JOIN texts t USING (text_id)")
    assert len(ocr_rows) == 1 and ocr_rows[0][0] == "tesseract" and WORDS_IN_IMAGE in ocr_rows[0][1].lower()
    assert 0 < ocr_rows[0][2] <= 1
    scores = query(tmp_path, "SELECT d.name, s.toxicity, s.details_json FROM comment_media_scores s "
                             "JOIN detectors d USING (detector_id)")
    assert [(n, round(t, 6)) for n, t, _ in scores] == [("ocr+profanity-check", round(ocr["toxicity"], 6))]
    # the text alone, as a text-only stack sees the comment, was scored benign by both detectors
    text_scores = query(tmp_path, "SELECT d.name, s.toxicity FROM scores s JOIN detectors d USING (detector_id) "
                                  "JOIN texts t USING (text_id) WHERE t.text = ?", (CAPTION,))
    assert len(text_scores) == 2 and all(t < 0.5 for _, t in text_scores)
    # re-sending the same images adds no rows
    assert again["media"][0]["media_id"] == ok["media"][0]["media_id"]
    assert query(tmp_path, "SELECT count(*) FROM comment_media")[0][0] == 1
    assert not (tmp_path / "media").exists()


def test_keep_bytes_stores_the_image_content_addressed(tmp_path, loaded_detectors):
    jpg = text_image(fmt="JPEG")

    async def run():
        async with running_daemon(tmp_path, media_study(keep_bytes=True), detectors=loaded_detectors) as (url, _):
            c = await session(url)
            ok = await c.request(media_msg("x1", [item(jpg, "image/jpeg", url="data:image/jpeg;base64,AAAA")]),
                                 "comment_media_ok", timeout=60)
            await c.ws.close()
            return ok

    ok = asyncio.run(run())
    assert ok["type"] == "comment_media_ok", ok
    sha = hashlib.sha256(jpg).hexdigest()
    assert ok["media"][0]["kept"] is True
    path = query(tmp_path, "SELECT path FROM media WHERE sha256 = ?", (sha,))[0][0]
    assert path == f"{sha[:2]}/{sha}.jpg"
    assert (tmp_path / "media" / path).read_bytes() == jpg
    # a data: URL is not an address: nothing is logged as the source
    assert query(tmp_path, "SELECT source_url FROM comment_media") == [(None,)]


def test_hello_ok_tells_the_extension_and_the_consent_text_says_so(tmp_path):
    async def run(cfg):
        async with running_daemon(tmp_path, cfg) as (url, _):
            async with connect(url) as ws:
                return (await Client(ws).hello())["study"]

    off = asyncio.run(run(media_study(collect=False)))
    on = asyncio.run(run(media_study(collect=True, keep_bytes=False, max_bytes=50_000, max_per_comment=2)))
    kept = asyncio.run(run(media_study(collect=True, keep_bytes=True)))
    assert off["media"]["collect"] is False and "image" not in off["consent_text"].lower()
    assert on["media"] == {"collect": True, "keep_bytes": False, "max_bytes": 50_000, "max_per_comment": 2}
    assert on["consent_text"].startswith(off["consent_text"].rstrip())
    assert "Images attached to the comments" in on["consent_text"] and "not the image files" in on["consent_text"]
    assert "image files are kept" in kept["consent_text"]


BAD = {
    "sha256 mismatch": (lambda png: [item(png, sha="0" * 64)], "invalid_fields", "items.0.sha256"),
    "declared type differs from the bytes": (lambda png: [item(png, mime="image/jpeg")], "invalid_fields", "items.0.mime"),
    "not an image at all": (lambda png: [item(b"<html>not an image</html>")], "invalid_fields", "items.0.mime"),
    "not base64": (lambda png: [{**item(png), "data_b64": "***not base64***"}], "invalid_fields", "items.0.data_b64"),
    "over media.max_bytes": (lambda png: [item(png + b"\0" * 40_000)], "too_large", "media.max_bytes"),
    "more than max_per_comment": (lambda png: [item(png, position=i) for i in range(3)], "invalid_fields",
                                  "media.max_per_comment"),
    "positions repeat": (lambda png: [item(png), item(png)], "invalid_fields", "positions"),
    "bad hash format": (lambda png: [item(png, sha="XYZ")], "invalid_fields", "items.0.sha256"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_media_is_refused_and_nothing_is_written(tmp_path, case):
    png = text_image()
    make, code, needle = BAD[case]
    cfg = media_study(max_bytes=len(png) + 20_000, max_per_comment=2)

    async def run():
        async with running_daemon(tmp_path, cfg, detectors=load_detectors(cfg.detectors[:1]).detectors) as (url, _):
            c = await session(url)
            answer = await c.request(media_msg("bad", make(png)), "comment_media_ok", timeout=30)
            await c.ws.close()
            return answer

    answer = asyncio.run(run())
    assert answer["type"] == "error" and answer["id"] == "bad", answer
    assert answer["code"] == code and needle in answer["message"], answer
    assert query(tmp_path, "SELECT count(*) FROM media")[0][0] == 0
    assert query(tmp_path, "SELECT count(*) FROM comment_media")[0][0] == 0


def test_unknown_comment_and_media_off_are_refused(tmp_path):
    png = text_image()

    async def run(cfg, with_comment):
        async with running_daemon(tmp_path, cfg, detectors=load_detectors(cfg.detectors[:1]).detectors) as (url, _):
            c = await session(url, with_comment=with_comment)
            answer = await c.request(media_msg("m", [item(png)]), "comment_media_ok", timeout=30)
            await c.ws.close()
            return answer

    unknown = asyncio.run(run(media_study(), with_comment=False))
    assert unknown["code"] == "unknown_comment" and "youtube/c1" in unknown["message"]
    off = asyncio.run(run(media_study(collect=False), with_comment=True))
    assert off["code"] == "media_not_collected" and "media.collect" in off["message"]
    assert query(tmp_path, "SELECT count(*) FROM media")[0][0] == 0


def test_one_image_of_max_bytes_fits_a_frame_other_messages_keep_their_cap(tmp_path):
    """limits.max_message_bytes is far below one image: comment_media still fits, comments do not."""
    big = text_image()
    big = big + b"\0" * (60_000 - len(big))  # trailing bytes after IEND: still a PNG by its magic
    cfg = media_study(max_bytes=60_000)
    cfg = cfg.model_copy(update={"limits": cfg.limits.model_copy(update={"max_message_bytes": 20_000})})

    async def run():
        async with running_daemon(tmp_path, cfg, detectors=load_detectors(cfg.detectors[:1]).detectors) as (url, _):
            c = await session(url)
            fits = await c.request(media_msg("big", [item(big)]), "comment_media_ok", timeout=30)
            long_comment = await c.request(comments_msg("m2", [("c2", "word " * 5000)]), "comments_ok")
            over = await c.request(media_msg("over", [item(big + b"\0" * 10_000, position=1)]), "comment_media_ok")
            await c.ws.close()
            return fits, long_comment, over

    fits, long_comment, over = asyncio.run(run())
    assert fits["type"] == "comment_media_ok", fits
    assert long_comment["code"] == "too_large" and "20000" in long_comment["message"]
    assert over["code"] == "too_large"


def _image_sentence(consent: str) -> str:
    """The consent text's sentences about comment images (what the participant is told of them)."""
    start = consent.index("Images attached to the comments")
    return consent[start:]


def test_the_consent_text_names_everything_the_log_keeps_of_an_image(tmp_path, loaded_detectors):
    """The participant was told 'only their fingerprints (SHA-256) and sizes are logged', while the
    log of a real run holds the address the page showed the image at and the text OCR read in it."""
    png = text_image()

    async def run():
        async with running_daemon(tmp_path, media_study(), detectors=loaded_detectors) as (url, _):
            ws = await connect(url)
            c = Client(ws)
            consent = (await c.hello())["study"]["consent_text"]
            await c.request(comments_msg("m1", [("c1", CAPTION)]), "comments_ok")
            await c.request(media_msg("x1", [item(png)]), "comment_media_ok", timeout=60)
            await ws.close()
            return consent

    told = _image_sentence(asyncio.run(run()))
    [(source_url,)] = query(tmp_path, "SELECT source_url FROM comment_media")
    [(ocr_text,)] = query(tmp_path, "SELECT t.text FROM ocr_results JOIN texts t USING (text_id)")
    assert source_url and ocr_text  # the real event: both are in the log
    assert "only their fingerprints" not in told, told
    assert "web address" in told and "text read from them" in told, told
    assert "SHA-256" in told and "not the image files" in told, told


def test_images_sent_to_a_remote_detector_are_not_said_to_be_scored_on_this_computer(tmp_path):
    """An http detector with media = "base64" posts each image to its endpoint: the consent text's
    image sentence said 'they are scored on this computer' all the same."""
    cfg = parse_study({
        "study_id": "media-remote", "normalizer": {"enabled": False}, "perturbation": {"enabled": False},
        "detectors": [{"name": "profanity-check"},
                      {"name": "http", "id": "cloud-vision", "options": {
                          "url": "https://moderation.example.com/v1/score", "media": "base64", "score_path": "score"}}],
        "media": {"collect": True}})
    loaded = load_detectors(cfg.detectors)
    assert "image" in loaded.detectors["cloud-vision"].modalities  # it sends the images it scores

    async def run():
        async with running_daemon(tmp_path, cfg, detectors=loaded.detectors) as (url, _):
            async with connect(url) as ws:
                return (await Client(ws).hello())["study"]["consent_text"]

    told = _image_sentence(asyncio.run(run()))
    assert "scored on this computer" not in told, told
    assert "https://moderation.example.com (detector cloud-vision)" in told, told
