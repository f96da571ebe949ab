"""The generic HTTP detector sending media (base64 JSON or multipart) to a local aiohttp server
that checks the SHA-256 of the bytes it received, as a cloud moderation API would get them."""
from __future__ import annotations

import base64
import hashlib

import pytest
from aiohttp import web

from threaded_server import ThreadedServer
from media_helpers import blank_image, silent_wav

from modlens.config import StudyConfig
from modlens.detectors import registry
from modlens.engine import Engine
from modlens.media import MediaInput


class MediaServer(ThreadedServer):
    """Scores 0.9 when the text says "idiot" or an image arrived intact, else 0.1; every
    request's text and received media (with the SHA-256 computed here) are recorded."""

    def __init__(self):
        self.requests: list[dict] = []
        self.script: list[int] = []  # statuses to answer first, one per request
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/json", self.json_api)
        app.router.add_post("/form", self.form_api)
        super().__init__(app)

    def reply(self, text: str, media: list[dict]) -> web.Response:
        self.requests.append({"text": text, "media": media})
        if self.script:
            return web.json_response({"error": "busy"}, status=self.script.pop(0))
        intact = [m for m in media if m["received_sha256"] == m["claimed_sha256"] and m["mime"].startswith("image/")]
        return web.json_response({"result": {"score": 0.9 if "idiot" in text or intact else 0.1}})

    async def json_api(self, request):
        body = await request.json()
        items = body.get("media") if "media" in body else body.get("input", {}).get("attachments", [])
        media = [{"mime": m["mime"], "claimed_sha256": m["sha256"],
                  "received_sha256": hashlib.sha256(base64.b64decode(m["data_b64"])).hexdigest()}
                 for m in items or []]
        text = body["comment"] if "comment" in body else body["input"]["text"]
        return self.reply(text, media)

    async def form_api(self, request):
        fields, media = {}, []
        reader = await request.multipart()
        async for part in reader:
            data = await part.read()
            if part.filename:
                media.append({"field": part.name, "mime": part.headers.get("Content-Type"), "filename": part.filename,
                              "claimed_sha256": part.filename.split(".")[0],
                              "received_sha256": hashlib.sha256(data).hexdigest()})
            else:
                fields[part.name] = data.decode()
        resp = self.reply(fields.get("text", ""), media)
        self.requests[-1]["fields"] = fields
        return resp


@pytest.fixture(scope="module")
def server():
    s = MediaServer()
    yield s
    s.stop()


@pytest.fixture
def fake(server):
    server.requests.clear()
    server.script.clear()
    return server


def http(fake, path="/json", **options):
    return registry.create("http", **{"url": fake.base + path, "score_path": "result.score", "qps": 200,
                                      "backoff_s": 0.01, **options})


def test_base64_json_carries_every_media_item_intact(fake):
    image, wav = blank_image(), silent_wav()
    det = http(fake, body={"comment": "{text}"}, media="base64")
    try:
        assert det.modalities == ("text", "image", "audio", "video")
        out = det.score_media([MediaInput("look", (image, wav)), MediaInput("nice", (wav,)), MediaInput("you idiot")])
    finally:
        det.close()
    got = {r["text"]: r["media"] for r in fake.requests}
    assert [(m["mime"], m["claimed_sha256"], m["received_sha256"]) for m in got["look"]] == [
        ("image/png", image.sha256, image.sha256), ("audio/wav", wav.sha256, wav.sha256)]
    assert got["you idiot"] == []
    assert [o.labels for o in out] == [{"toxicity": 0.9}, {"toxicity": 0.1}, {"toxicity": 0.9}]
    assert out[0].details == {"media_sent": [{"sha256": image.sha256, "mime": "image/png"},
                                             {"sha256": wav.sha256, "mime": "audio/wav"}]}


def test_base64_at_a_placeholder_in_a_nested_body(fake):
    image = blank_image(color=(10, 20, 30))
    det = http(fake, body={"input": {"text": "{text}", "attachments": "{media}"}}, media="base64")
    try:
        out = det.score_media([MediaInput("caption", (image,))])
    finally:
        det.close()
    assert fake.requests[0]["media"][0]["received_sha256"] == image.sha256
    assert out[0].labels == {"toxicity": 0.9}


def test_multipart_sends_a_text_field_and_one_file_per_item_even_after_a_retry(fake):
    a, b = blank_image(color=(1, 2, 3)), blank_image(size=(30, 30))
    det = http(fake, path="/form", media="multipart", media_field="files")
    fake.script[:] = [503]  # the first attempt fails: the retry must send the files again
    try:
        out = det.score_media([MediaInput("two pictures", (a, b))])
    finally:
        det.close()
    assert len(fake.requests) == 2
    for req in fake.requests:
        assert req["fields"] == {"text": "two pictures"}
        assert [(m["field"], m["mime"], m["filename"], m["received_sha256"]) for m in req["media"]] == [
            ("files", "image/png", a.sha256 + ".png", a.sha256), ("files", "image/png", b.sha256 + ".png", b.sha256)]
    assert out[0].labels == {"toxicity": 0.9}


def test_media_off_by_default_sends_the_text_alone_and_keeps_old_versions(fake):
    det = http(fake, body={"comment": "{text}"})
    try:
        assert det.modalities == ("text",) and "media" not in det.config()
        out = det.score_media([MediaInput("look", (blank_image(),)), MediaInput("plain")])
    finally:
        det.close()
    assert [r["media"] for r in fake.requests] == [[], []]
    assert out[0].details == {"ignored_media": True} and out[1].details == {}
    assert out[0].labels == {"toxicity": 0.1}  # the image never reached the API
    with_media = http(fake, body={"comment": "{text}"}, media="base64")
    assert with_media.version != det.version and with_media.config()["media"] == "base64"


def test_bad_media_options_are_statuses(fake):
    def status(**kw):
        return registry.status("http", **{"url": fake.base + "/json", "score_path": "result.score", **kw})

    assert "media must be one of" in status(media="zip").message
    st = status(media="base64", batch_size=4, body={"inputs": "{texts}"}, score_path="r.*.s")
    assert st.status == "error" and "batch_size = 1" in st.message
    assert "flat body" in status(media="multipart", body={"input": {"text": "{text}"}}).message
    assert "JSON object body" in status(media="base64", body=["{text}"]).message


async def test_engine_awaits_the_http_detector_on_its_own_loop(fake):
    image = blank_image(color=(200, 0, 0))
    det = http(fake, body={"comment": "{text}"}, media="base64")
    engine = Engine(StudyConfig(detectors=[], normalizer={"enabled": False}, perturbation={"enabled": False}),
                    {"api": det})
    try:
        results = await engine.score_media([MediaInput("hello", (image,)), MediaInput("hello")])
    finally:
        await engine.close()
    assert [r["api"].toxicity for r in results] == [0.9, 0.1]
    assert results[0]["api"].details["media_sent"][0]["sha256"] == image.sha256
    assert fake.requests[0]["media"][0]["received_sha256"] == image.sha256
    assert results[0]["api"].name == "http" and results[0]["api"].version == det.version
