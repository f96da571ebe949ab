"""`POST /batch` as googleapiclient's `new_batch_http_request()` sends it: the call pattern of
HELM's Perspective client (one analyze per text, `request_id=str(i)`, a callback per part), run
with the real googleapiclient against the daemon (crfm-helm itself is too heavy to install here;
it adds nothing to the wire format but its attribute list). Each part is answered on its own:
one part's error reaches that part's callback only."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from googleapiclient import discovery
from googleapiclient.errors import HttpError

from daemon_helpers import TOKEN, WordListDetector, study
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.perspective import batch

pytestmark = pytest.mark.timeout(120)


class MultiLabel(WordListDetector):
    name, version = "multilabel", "test-ml-1"
    labels = ("toxicity", "insult")
    toxicity_label = "toxicity"

    def score(self, texts):
        return [{"toxicity": s["toxic"], "insult": s["toxic"]} for s in super().score(texts)]


@pytest.fixture
def server(tmp_path):
    app = create_app(study(detectors=[{"name": "profanity-check", "id": "ml"}]), tmp_path / "study.sqlite", TOKEN,
                     detectors={"ml": MultiLabel()})
    srv = ThreadedServer(app)
    yield srv
    srv.stop()


def _client(base: str, key: str = TOKEN):
    return discovery.build("commentanalyzer", "v1alpha1", developerKey=key, static_discovery=False,
                           discoveryServiceUrl=f"{base}/$discovery/rest?version=v1alpha1")


def _run_batch(client, requests: list[Any]) -> dict[str, tuple[Any, Exception | None]]:
    got: dict[str, tuple[Any, Exception | None]] = {}

    def callback(request_id, response, exception):
        got[request_id] = (response, exception)

    b = client.new_batch_http_request()
    for i, request in enumerate(requests):
        b.add(request, request_id=str(i), callback=callback)
    b.execute()
    return got


TEXTS = ["you idiot", "have a nice day", "idiot idiot idiot", "thank you, friend"]


def test_googleapiclient_batch_scores_each_part(server):
    """HELM's pattern: every text of the batch answered, each with its own scores and spans."""
    client = _client(server.base)
    requests = [client.comments().analyze(body={"comment": {"text": t}, "languages": ["en"], "spanAnnotations": True,
                                                "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}})
                for t in TEXTS]
    got = _run_batch(client, requests)
    assert sorted(got) == ["0", "1", "2", "3"]
    for i, text in enumerate(TEXTS):
        response, exception = got[str(i)]
        assert exception is None
        single = client.comments().analyze(body={"comment": {"text": text}, "languages": ["en"],
                                                  "spanAnnotations": True,
                                                  "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}}).execute()
        assert response["attributeScores"] == single["attributeScores"]  # the part answered its own text
    assert got["0"][0]["attributeScores"]["TOXICITY"]["summaryScore"]["value"] > 0
    assert got["1"][0]["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 0


def test_one_parts_error_reaches_that_part_only(server):
    client = _client(server.base)
    requests = [
        client.comments().analyze(body={"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}}),
        client.comments().analyze(body={"comment": {"text": ""}, "requestedAttributes": {"TOXICITY": {}}}),
        client.comments().analyze(body={"comment": {"text": "hi"}, "requestedAttributes": {"FLIRTATION": {}}}),
        client.comments().suggestscore(body={"comment": {"text": "you idiot"}, "clientToken": "t",
                                             "attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.9}}}}),
    ]
    got = _run_batch(client, requests)
    assert got["0"][1] is None and "TOXICITY" in got["0"][0]["attributeScores"]
    empty = got["1"][1]
    assert isinstance(empty, HttpError) and empty.resp.status == 400
    assert empty.error_details[0]["errorType"] == "COMMENT_EMPTY"
    flirt = got["2"][1]
    assert isinstance(flirt, HttpError) and flirt.resp.status == 400
    assert json.loads(flirt.content)["error"]["details"][0]["errorType"] == "ATTRIBUTE_NOT_AVAILABLE"
    assert got["3"] == ({"requestedLanguages": [], "detectedLanguages": ["en"], "clientToken": "t"}, None)


def test_each_part_needs_its_own_key(server):
    good, bad = _client(server.base), _client(server.base, "not-the-key")
    body = {"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {}}}
    got = _run_batch(good, [good.comments().analyze(body=body), bad.comments().analyze(body=body)])
    assert got["0"][1] is None
    refused = got["1"][1]
    assert isinstance(refused, HttpError) and refused.resp.status == 400
    assert json.loads(refused.content)["error"]["message"] == "API key not valid. Please pass a valid API key."


def _post_raw(base: str, data: bytes, content_type: str, path: str = "/batch") -> tuple[int, str, bytes]:
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{base}{path}", data=data, headers={"Content-Type": content_type}) as r:
                return r.status, r.headers.get("Content-Type", ""), await r.read()
    return asyncio.run(go())


def test_crlf_batch_unknown_method_and_malformed_batch(server):
    """A batch written with CRLF throughout (curl users, other client libraries); a part for a
    path the API lacks gets Google's 404 in its part; a body that is not multipart is one 400."""
    body = json.dumps({"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}})
    raw = (f"--b1\r\nContent-Type: application/http\r\nContent-ID: <a+1>\r\n\r\n"
           f"POST /v1alpha1/comments:analyze?key={TOKEN} HTTP/1.1\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}\r\n"
           f"--b1\r\nContent-Type: application/http\r\nContent-ID: <a+2>\r\n\r\n"
           f"GET /v1alpha1/comments:list?key={TOKEN} HTTP/1.1\r\n\r\n\r\n--b1--\r\n").encode()
    status, content_type, data = _post_raw(server.base, raw, "multipart/mixed; boundary=b1")
    assert status == 200 and content_type.startswith("multipart/mixed")
    parts = batch.parse(content_type, data.replace(b"HTTP/1.1 200 OK", b"POST /x HTTP/1.1")
                        .replace(b"HTTP/1.1 404 Not Found", b"POST /y HTTP/1.1"))
    assert [p.content_id for p in parts] == ["response-a+1", "response-a+2"]
    assert json.loads(parts[0].body)["attributeScores"]["TOXICITY"]["summaryScore"]["value"] > 0
    assert json.loads(parts[1].body)["error"] == {"code": 404, "message": "Method not found.", "status": "NOT_FOUND",
                                                  "details": []}
    status, _, data = _post_raw(server.base, body.encode(), "application/json")
    assert status == 400 and json.loads(data)["error"]["status"] == "INVALID_ARGUMENT"
    assert "multipart/mixed" in json.loads(data)["error"]["message"]


def test_a_batch_larger_than_the_body_limit_is_refused_as_a_batch(server):
    """80 comments of 15 KB each, every one within Perspective's 20,480 bytes, make a batch body over
    the server's limit (limits.max_message_bytes, 1 MiB): the refusal says the batch is too large and
    by how much it may be, not COMMENT_TOO_LONG, which no comment of it is."""
    client = _client(server.base)
    requests = [client.comments().analyze(body={"comment": {"text": f"comment {i} " + "word " * 3000},
                                                "requestedAttributes": {"TOXICITY": {}}, "doNotStore": True})
                for i in range(80)]
    with pytest.raises(HttpError) as refused:
        _run_batch(client, requests)
    error = json.loads(refused.value.content)["error"]
    assert refused.value.resp.status == 400 and error["status"] == "INVALID_ARGUMENT"
    assert "COMMENT_TOO_LONG" not in json.dumps(error) and "too long" not in error["message"].lower()
    assert "batch" in error["message"] and "1048576 bytes" in error["message"]
    assert len(_run_batch(client, requests[:40])) == 40  # half of it goes through
