"""Perspective and generic HTTP detectors against local loopback servers that behave like
the real APIs (quota errors with Google's error JSON, 5xx, slow replies, per-text refusals)."""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web

from threaded_server import ThreadedServer

from modlens.config import StudyConfig
from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.http import parse_path, redact_url
from modlens.detectors.remote import RateLimiter, RemoteError
from modlens.engine import Engine

KEY = "test-key-s3cret"
QUOTA_429 = {"error": {
    "code": 429,
    "message": "Quota exceeded for quota metric 'Analysis requests (AnalyzeComment)' and limit 'Analysis requests "
               "(AnalyzeComment) per minute' of service 'commentanalyzer.googleapis.com' for consumer 'project_number:1'.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
                 "domain": "googleapis.com", "metadata": {"service": "commentanalyzer.googleapis.com"}}]}}
BAD_KEY_400 = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                         "status": "INVALID_ARGUMENT"}}
LANGUAGE_400 = {"error": {"code": 400, "message": "Attribute TOXICITY does not support request languages: xx",
                          "status": "INVALID_ARGUMENT",
                          "details": [{"@type": "type.googleapis.com/google.commentanalyzer.v1alpha1.Error",
                                       "errorType": "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"}]}}


def toxicity_of(text: str) -> float:
    return 0.92 if any(w in text.lower() for w in ("idiot", "stupid")) else 0.04


class FakeServer(ThreadedServer):
    """An aiohttp app in its own thread and loop, so sync and async tests can both use it."""

    def __init__(self):
        self.requests: list[dict] = []      # {"t", "path", "query", "headers", "body"}
        self.script: list[int] = []         # statuses to answer first, one per request, before behaving
        app = web.Application()
        app.router.add_post("/v1alpha1/comments:analyze", self.perspective)
        app.router.add_post("/classify", self.classify)
        app.router.add_post("/batch", self.batch)
        super().__init__(app)

    async def _record(self, request) -> tuple[dict, web.Response | None]:
        body = await request.json()
        self.requests.append({"t": time.monotonic(), "query": dict(request.query), "headers": dict(request.headers),
                              "body": body})
        if self.script:
            status = self.script.pop(0)
            payload = QUOTA_429 if status == 429 else {"error": {"code": status, "message": "backend error",
                                                                  "status": "INTERNAL"}}
            return body, web.json_response(payload, status=status)
        return body, None

    async def perspective(self, request):
        body, scripted = await self._record(request)
        if scripted:
            return scripted
        if request.query.get("key") != KEY:
            return web.json_response(BAD_KEY_400, status=400)
        text = body["comment"]["text"]
        if body.get("doNotStore") is not True or not body.get("requestedAttributes"):
            return web.json_response({"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}},
                                     status=400)
        if text.startswith("LANG:"):
            return web.json_response(LANGUAGE_400, status=400)
        if text.startswith("SLOW"):
            await asyncio.sleep(2)
        scores = {a: {"spanScores": [], "summaryScore": {"value": toxicity_of(text) if a == "TOXICITY" else 0.5,
                                                         "type": "PROBABILITY"}}
                  for a in body["requestedAttributes"]}
        return web.json_response({"attributeScores": scores, "languages": body.get("languages", ["en"]),
                                  "detectedLanguages": ["en"]})

    async def classify(self, request):
        body, scripted = await self._record(request)
        if scripted:
            return scripted
        if request.headers.get("Authorization") != "Bearer abc123":
            return web.json_response({"error": "unauthorized"}, status=401)
        if body["input"]["content"] == "NOT A NUMBER":
            return web.json_response({"result": {"toxicity": "high"}})
        return web.json_response({"result": {"toxicity": round(100 * toxicity_of(body["input"]["content"]))}})

    async def batch(self, request):
        body, scripted = await self._record(request)
        if scripted:
            return scripted
        return web.json_response({"data": [{"label": "toxic", "score": toxicity_of(t)} for t in body["inputs"]]})


@pytest.fixture(scope="module")
def server():
    s = FakeServer()
    yield s
    s.stop()


@pytest.fixture
def fake(server):
    server.requests.clear()
    server.script.clear()
    return server


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("PERSPECTIVE_API_KEY", KEY)


def perspective(fake, **options):
    options = {"endpoint": f"{fake.base}/v1alpha1/comments:analyze", "qps": 50, "backoff_s": 0.02, **options}
    return registry.create("perspective", **options)


# --- Perspective --------------------------------------------------------------------------


def test_missing_key_is_a_status_with_the_fix(monkeypatch):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    status = registry.status("perspective")
    assert status.status == "missing_dependency"
    assert "export PERSPECTIVE_API_KEY=" in status.fix
    with pytest.raises(DetectorUnavailable, match="do not put the API key"):
        registry.create("perspective", api_key="literal")


def test_scores_through_the_blocking_path_with_the_real_request_shape(fake, key):
    det = perspective(fake, attributes=["TOXICITY", "INSULT"])
    try:
        out = det.score(["you are a stupid idiot", "have a nice day"])
    finally:
        det.close()
    assert out[0]["TOXICITY"] > 0.9 > out[1]["TOXICITY"]
    assert out[0]["INSULT"] == 0.5 and det.toxicity(out[0]) == out[0]["TOXICITY"]
    bodies = sorted((r["body"] for r in fake.requests), key=lambda b: b["comment"]["text"])
    assert bodies[1] == {"comment": {"text": "you are a stupid idiot"}, "languages": ["en"],
                         "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}, "doNotStore": True}
    assert all(r["query"] == {"key": KEY} for r in fake.requests)
    described = json.dumps(det.describe())
    assert KEY not in described and KEY not in det.version


def test_rate_limiter_spaces_requests_at_the_configured_qps(fake, key):
    det = perspective(fake, qps=10)
    try:
        det.score([f"comment {i}" for i in range(6)])
    finally:
        det.close()
    times = sorted(r["t"] for r in fake.requests)
    assert len(times) == 6
    assert times[-1] - times[0] >= 0.45  # 5 gaps of 0.1 s (minus clock slack)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= 0.07


async def test_quota_429_and_500_are_retried_with_backoff(fake, key):
    det = perspective(fake)
    fake.script[:] = [429, 500]
    try:
        out = await det.ascore(["you idiot"])
    finally:
        await det.client.aclose()
        det.close()
    assert out == [{"TOXICITY": 0.92}]
    assert det.client.requests == 3 and det.client.retried == 2


async def test_quota_that_never_clears_fails_with_the_api_message_and_no_key(fake, key):
    det = perspective(fake, retries=2)
    fake.script[:] = [429] * 10
    try:
        with pytest.raises(RemoteError) as err:
            await det.ascore(["hello"])
    finally:
        await det.client.aclose()
        det.close()
    msg = str(err.value)
    assert "RESOURCE_EXHAUSTED" in msg and "gave up after 3 attempts" in msg and KEY not in msg
    assert err.value.status == 429 and len(fake.requests) == 3


async def test_bad_key_is_not_retried(fake, monkeypatch):
    monkeypatch.setenv("PERSPECTIVE_API_KEY", "wrong")
    det = perspective(fake)
    try:
        with pytest.raises(RemoteError, match="API key not valid"):
            await det.ascore(["hello"])
    finally:
        await det.client.aclose()
        det.close()
    assert len(fake.requests) == 1


async def test_timeouts_are_retried_then_reported(fake, key):
    det = perspective(fake, timeout_s=0.3, retries=1)
    t0 = time.monotonic()
    try:
        with pytest.raises(RemoteError, match="timed out after 0.3 s"):
            await det.ascore(["SLOW reply"])
    finally:
        await det.client.aclose()
        det.close()
    assert time.monotonic() - t0 < 1.5 and len(fake.requests) == 2


async def test_a_text_the_api_refuses_is_missing_and_the_rest_is_scored(fake, key):
    det = perspective(fake)
    try:
        out = await det.ascore(["LANG: xx", "idiot"])
    finally:
        await det.client.aclose()
        det.close()
    assert out == [None, {"TOXICITY": 0.92}]


async def test_engine_scores_with_perspective_on_the_daemon_loop(fake, key):
    study = StudyConfig(detectors=[], normalizer={"enabled": False}, perturbation={"enabled": False})
    engine = Engine(study, {"persp": perspective(fake)})
    fake.script[:] = [500]
    try:
        results = await engine.score(["stupid", "fine", "LANG: xx"])
    finally:
        await engine.close()
    assert results[0]["persp"].toxicity == 0.92 and results[0]["persp"].error is None
    assert results[1]["persp"].toxicity == 0.04
    assert results[2]["persp"].toxicity is None and "missing" in results[2]["persp"].error
    assert results[0]["persp"].version.startswith("v1alpha1-")


# --- generic HTTP ---------------------------------------------------------------------------


def http_options(fake, **extra):
    return {"url": f"{fake.base}/classify", "headers": {"Authorization": "Bearer ${MY_KEY}"},
            "body": {"input": {"content": "{text}"}}, "score_path": "$.result.toxicity", "scale": 100,
            "qps": 100, "backoff_s": 0.02, **extra}


def test_http_single_mode_with_env_header_and_secret_free_version(fake, monkeypatch):
    monkeypatch.setenv("MY_KEY", "abc123")
    det = registry.create("http", **http_options(fake))
    try:
        out = det.score(["you idiot", "hello there"])
    finally:
        det.close()
    assert out == [{"toxicity": 0.92}, {"toxicity": 0.04}]
    assert fake.requests[0]["headers"]["Authorization"] == "Bearer abc123"
    assert "abc123" not in json.dumps(det.describe())
    monkeypatch.setenv("MY_KEY", "another-secret")  # a new key is not a new detector version
    other = registry.create("http", **http_options(fake))
    assert other.version == det.version
    assert registry.create("http", **http_options(fake, score_path="result.toxicity", scale=10)).version != det.version


def test_http_missing_env_var_and_bad_options_are_statuses(fake, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    status = registry.status("http", **http_options(fake))
    assert status.status == "error" and status.fix == "export MY_KEY=..."
    assert "url" in registry.status("http", score_path="x").message
    monkeypatch.setenv("MY_KEY", "abc123")
    assert "needs one `*`" in registry.status("http", **http_options(fake, batch_size=4, body={"inputs": "{texts}"})).message
    assert "{text}" in registry.status("http", **http_options(fake, body={"input": "fixed"})).message


async def test_http_batch_mode_one_request_per_batch(fake):
    det = registry.create("http", url=f"{fake.base}/batch", body={"inputs": "{texts}", "options": {"wait": True}},
                          score_path="data.*.score", batch_size=3, qps=100)
    try:
        out = await det.ascore(["idiot", "nice", "stupid", "ok"])
    finally:
        await det.client.aclose()
        det.close()
    assert [o["toxicity"] for o in out] == [0.92, 0.04, 0.92, 0.04]
    assert sorted(len(r["body"]["inputs"]) for r in fake.requests) == [1, 3]
    assert fake.requests[0]["body"]["options"] == {"wait": True}


async def test_http_retries_5xx_and_rejects_replies_without_a_probability(fake, monkeypatch):
    monkeypatch.setenv("MY_KEY", "abc123")
    det = registry.create("http", **http_options(fake))
    fake.script[:] = [503]
    try:
        assert await det.ascore(["idiot"]) == [{"toxicity": 0.92}]
        with pytest.raises(RemoteError, match="not a number"):
            await det.ascore(["NOT A NUMBER"])
        unscaled = registry.create("http", **http_options(fake, scale=1))
        with pytest.raises(RemoteError, match="not a probability"):
            await unscaled.ascore(["idiot"])
        wrong_path = registry.create("http", **http_options(fake, score_path="$.data[0].score"))
        with pytest.raises(RemoteError, match="nothing at 'data'"):
            await wrong_path.ascore(["idiot"])
    finally:
        await det.client.aclose()
        det.close()
        for d in (unscaled, wrong_path):
            await d.client.aclose()


def test_json_paths_and_url_redaction():
    assert parse_path("$.result.toxicity") == ["result", "toxicity"]
    assert parse_path("data.0.score") == parse_path("$.data[0].score") == ["data", 0, "score"]
    assert parse_path("results[*].p") == ["results", "*", "p"]
    assert redact_url("https://h/x?api_key=abc&lang=en&token=${T}") == \
        "https://h/x?api_key=REDACTED&lang=en&token=${T}"


async def test_rate_limiter_is_shared_across_concurrent_callers():
    limiter = RateLimiter(qps=20)
    t0 = time.monotonic()
    await asyncio.gather(*(limiter.acquire() for _ in range(5)))
    assert time.monotonic() - t0 >= 0.19
