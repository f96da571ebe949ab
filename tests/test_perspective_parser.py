"""The Perspective endpoint reads bodies as Google's front end did and answers hostile ones in
Google's error shapes: Perspective's documented curl sample (bare-name keys) sent by real curl,
unknown fields, other methods, a 100k-deep body, a lone surrogate; never a 500, never a traceback."""
from __future__ import annotations

import json
import logging
import subprocess

import pytest

from daemon_helpers import TOKEN
import test_perspective_api as api
from test_perspective_api import EXAMPLE, _post

from modlens.perspective.body import decode
from modlens.perspective.errors import PerspectiveError

pytestmark = pytest.mark.timeout(120)
server = api.server  # the same daemon fixture as the endpoint's own tests

# Perspective's quickstart, as printed (docs: developers.perspectiveapi.com), address and key changed
CURL_SAMPLE = """{comment: {text: "what kind of idiot name is foo?"},
       languages: ["en"],
       requestedAttributes: {TOXICITY:{}} }"""


def _curl(url: str, *args: str) -> tuple[int, dict]:
    out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *args, url], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    body, _, status = out.rpartition("\n")
    return int(status), json.loads(body)


def test_the_documented_curl_sample_works_as_printed(server):
    srv, _ = server
    status, got = _curl(f"{srv.base}/v1alpha1/comments:analyze?key={TOKEN}",
                        "-H", "Content-Type: application/json", "--data", CURL_SAMPLE)
    assert status == 200, got
    assert 0 <= got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] <= 1
    assert got["languages"] == ["en"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_get_googles_json_404(server, method):
    srv, _ = server
    status, got = _curl(f"{srv.base}/v1alpha1/comments:analyze?key={TOKEN}", "-X", method)
    assert status == 404
    assert got == {"error": {"code": 404, "message": "Method not found.", "status": "NOT_FOUND", "details": []}}


def test_unknown_fields_are_refused_as_google_refuses_them(server):
    srv, _ = server
    body = {**EXAMPLE, "doNotStor": True, "comment": {"text": "hi", "lang": "en"},
            "requestedAttributes": {"TOXICITY": {"scoreThreshhold": 0.5}}}
    status, got = _post(srv.base, body)
    assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
    assert got["error"]["message"].split("\n") == [  # in the body's order
        "Invalid JSON payload received. Unknown name \"lang\" at 'comment': Cannot find field.",
        "Invalid JSON payload received. Unknown name \"scoreThreshhold\" at 'requestedAttributes.TOXICITY': "
        "Cannot find field.",
        "Invalid JSON payload received. Unknown name \"doNotStor\": Cannot find field."]
    detail, = got["error"]["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert [v.get("field") for v in detail["fieldViolations"]] == ["comment", "requestedAttributes.TOXICITY", None]


def test_documented_optional_fields_are_not_unknown(server):
    srv, _ = server
    body = {**EXAMPLE, "comment": {"text": "hi", "type": "PLAIN_TEXT"}, "doNotStore": True,
            "context": {"entries": [{"text": "the article", "type": "PLAIN_TEXT"}]}, "sessionId": "s",
            "spanAnnotations": True, "dropUnsupportedAttributes": True, "clientToken": "t", "communityId": "c"}
    assert _post(srv.base, body)[0] == 200
    suggest = {"comment": {"text": "hi"}, "attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.2}}}}
    assert _post(srv.base, suggest, path="comments:suggestscore")[0] == 200
    status, got = _post(srv.base, {**suggest, "requestedAttributes": {}}, path="comments:suggestscore")
    assert status == 400 and "Unknown name \"requestedAttributes\"" in got["error"]["message"]


@pytest.mark.parametrize("raw,words", [
    ("[" * 100_000, "Nested deeper than"),
    ("{" + '"a":{' * 100_000, "Nested deeper than"),
    ('{"comment": {"text": "bad \\ud800 half"}, "requestedAttributes": {"TOXICITY": {}}}',
     "Invalid value at 'comment.text': not Unicode text"),
    ('{"comment": {"text": "hi"}, "clientToken": "\\udfff", "requestedAttributes": {"TOXICITY": {}}}',
     "Invalid value at 'clientToken'"),
    (b'{"comment": {"text": "\xff\xfe"}}', "not UTF-8"),
    ("  \n", "The body is empty"),
    ("{comment: {text: 'single quotes'}}", "Expected a value"),
    ('{comment: {text: __import__("os")}}', "Unexpected name '__import__'"),
])
def test_hostile_bodies_get_invalid_argument_and_no_traceback(server, caplog, raw, words):
    srv, _ = server
    caplog.set_level(logging.DEBUG)
    status, got = _post(srv.base, raw)
    assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
    assert words in got["error"]["message"]
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text


def test_the_lenient_reader_is_json_plus_bare_names_only():
    assert decode(CURL_SAMPLE.encode()) == {"comment": {"text": "what kind of idiot name is foo?"},
                                            "languages": ["en"], "requestedAttributes": {"TOXICITY": {}}}
    assert decode(b'{a_1: [1, -2.5e3, true, null, "x\\n"], "b": {}, $c: []}') == {
        "a_1": [1, -2500.0, True, None, "x\n"], "b": {}, "$c": []}
    for bad in (b"{a: 1,}", b"{a 1}", b"{1: 2}", b"{a: 1} trailing", b'{a: "unterminated}', b"{a: NaN}",
                b"{a: [1 2]}", b"{a: {b: 1}"):
        with pytest.raises(PerspectiveError) as err:
            decode(bad)
        assert err.value.status == "INVALID_ARGUMENT"
        assert err.value.message.startswith("Invalid JSON payload received.")


def test_a_body_cut_short_by_the_client_leaves_no_traceback(server, caplog):
    import socket
    import time

    srv, _ = server
    caplog.set_level(logging.DEBUG)
    with socket.create_connection(("127.0.0.1", int(srv.base.rsplit(":", 1)[1])), timeout=10) as sock:
        sock.sendall(f"POST /v1alpha1/comments:analyze?key={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Length: 100\r\n\r\n0123456789".encode())
        sock.shutdown(socket.SHUT_WR)  # gone before the rest of the body
        sock.recv(4096)
    time.sleep(0.5)
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text
