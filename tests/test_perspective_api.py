"""The Perspective-compatible endpoint with real clients: Google's API client built from the
local discovery document, plain aiohttp requests as Perspective's documentation wrote them, and
modlens's own Perspective detector pointed at it. Every documented error in Perspective's shape."""
from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from typing import Any

import aiohttp
import pytest
from googleapiclient import discovery
from googleapiclient.errors import HttpError

from daemon_helpers import TOKEN, WordListDetector, running_daemon, study
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.daemon.perspective_api import ANALYZER
from modlens.perspective import calibration, keys, spans
from modlens.perspective.discovery import SCHEMAS

pytestmark = pytest.mark.timeout(120)
EXAMPLE = {"comment": {"text": "friendly greetings from python"}, "requestedAttributes": {"TOXICITY": {}}}


class MultiLabel(WordListDetector):
    """A Detoxify-like multi-label model: the attributes beyond TOXICITY find it by label name."""
    name, version = "multilabel", "test-ml-1"
    labels = ("toxicity", "severe_toxicity", "insult", "threat")
    toxicity_label = "toxicity"

    def score(self, texts):
        return [{"toxicity": s["toxic"], "severe_toxicity": s["toxic"] / 2, "insult": s["toxic"], "threat": 0.0}
                for s in super().score(texts)]


def _study(**perspective: Any):
    return study(detectors=[{"name": "profanity-check", "id": "ml"}], perspective=perspective)


@pytest.fixture
def server(tmp_path):
    app = create_app(_study(), tmp_path / "study.sqlite", TOKEN, detectors={"ml": MultiLabel()})
    srv = ThreadedServer(app)
    yield srv, tmp_path / "study.sqlite"
    srv.stop()


def _client(base: str, key: str = TOKEN):
    return discovery.build("commentanalyzer", "v1alpha1", developerKey=key, static_discovery=False,
                           discoveryServiceUrl=f"{base}/$discovery/rest?version=v1alpha1")


def test_google_client_analyze_and_suggestscore(server):
    srv, db = server
    client = _client(srv.base)
    got = client.comments().analyze(body={
        "comment": {"text": "you idiot. have a nice day"}, "requestedAttributes": {"TOXICITY": {}, "INSULT": {}},
        "languages": ["en"], "clientToken": "bot-7", "communityId": "forum-a", "spanAnnotations": True}).execute()
    tox = got["attributeScores"]["TOXICITY"]
    assert tox["summaryScore"] == {"value": pytest.approx(1 / 6), "type": "PROBABILITY"}
    assert [(s["begin"], s["end"]) for s in tox["spanScores"]] == [(0, 10), (11, 26)]
    assert tox["spanScores"][0]["score"]["value"] == pytest.approx(0.5)
    assert tox["detector"] == {"key": "ml", "name": "multilabel", "version": "test-ml-1", "label": "toxicity",
                               "calibration": None}
    assert got["attributeScores"]["INSULT"]["detector"]["label"] == "insult"
    assert got["languages"] == ["en"] and got["detectedLanguages"] == ["en"] and got["clientToken"] == "bot-7"
    assert client.comments().suggestscore(body={
        "comment": {"text": "you idiot"}, "attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.9}}},
        "clientToken": "t"}).execute() == {"requestedLanguages": [], "detectedLanguages": ["en"], "clientToken": "t"}


def test_google_client_sees_perspective_errors(server):
    srv, _ = server
    with pytest.raises(HttpError) as bad_key:
        _client(srv.base, "not-the-key").comments().analyze(body=EXAMPLE).execute()
    assert bad_key.value.resp.status == 400
    assert json.loads(bad_key.value.content)["error"]["status"] == "INVALID_ARGUMENT"
    with pytest.raises(HttpError) as empty:
        _client(srv.base).comments().analyze(body={"comment": {"text": ""}, "requestedAttributes": {"TOXICITY": {}}}).execute()
    assert empty.value.resp.status == 400 and empty.value.error_details[0]["errorType"] == "COMMENT_EMPTY"


def _post(base: str, body: Any, *, key: str | None = TOKEN, path: str = "comments:analyze", headers=None):
    async def go():
        params = {"key": key} if key is not None else {}
        async with aiohttp.ClientSession() as s:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            async with s.post(f"{base}/v1alpha1/{path}", params=params, data=data, headers=headers or {}) as r:
                return r.status, await r.json(content_type=None)
    return asyncio.run(go())


def test_documented_plain_request_and_response(server):
    srv, _ = server
    status, got = _post(srv.base, EXAMPLE)
    assert status == 200
    assert set(got) == {"attributeScores", "languages", "detectedLanguages"}
    assert got["attributeScores"]["TOXICITY"]["summaryScore"] == {"value": 0.0, "type": "PROBABILITY"}
    assert got["attributeScores"]["TOXICITY"]["spanScores"] == [
        {"begin": 0, "end": 30, "score": {"value": 0.0, "type": "PROBABILITY"}}]


JA = "これはペンです"
ERRORS = [  # (body, key, status, google status, errorType or None, words in the message)
    ({"comment": {"text": ""}, "requestedAttributes": {"TOXICITY": {}}}, TOKEN, 400, "INVALID_ARGUMENT",
     "COMMENT_EMPTY", "non-empty"),
    ({"requestedAttributes": {"TOXICITY": {}}}, TOKEN, 400, "INVALID_ARGUMENT", "COMMENT_EMPTY", "specified"),
    ({"comment": {"text": "x" * 20_481}, "requestedAttributes": {"TOXICITY": {}}}, TOKEN, 400, "INVALID_ARGUMENT",
     "COMMENT_TOO_LONG", "too long"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {"NOT_AN_ATTRIBUTE": {}}}, TOKEN, 400, "INVALID_ARGUMENT",
     "INVALID_ATTRIBUTE", "Unknown attribute"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {}}, TOKEN, 400, "INVALID_ARGUMENT",
     "NO_REQUESTED_ATTRIBUTES", "at least one attribute"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {}}, "languages": ["ja"]}, TOKEN, 400,
     "INVALID_ARGUMENT", "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE", "does not support request languages: ja"),
    ({"comment": {"text": JA}, "requestedAttributes": {"TOXICITY": {}}}, TOKEN, 400,
     "INVALID_ARGUMENT", "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE", "does not support"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {"PROFANITY": {}}}, TOKEN, 400, "INVALID_ARGUMENT",
     "ATTRIBUTE_NOT_AVAILABLE", "not available here"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {"scoreType": "RAW"}}}, TOKEN, 400,
     "INVALID_ARGUMENT", "INVALID_SCORE_TYPE", "PROBABILITY"),
    ("{not json", TOKEN, 400, "INVALID_ARGUMENT", None, "Invalid JSON payload"),
    (EXAMPLE, "wrong-key", 400, "INVALID_ARGUMENT", None, "API key not valid. Please pass a valid API key."),
    (EXAMPLE, None, 403, "PERMISSION_DENIED", None, "missing a valid API key"),
    ({"comment": {"text": "hi"}, "requestedAttributes": {"toxicity": {}}}, TOKEN, 400, "INVALID_ARGUMENT",
     "INVALID_ATTRIBUTE", "Unknown attribute: toxicity"),
]


@pytest.mark.parametrize("body,key,status,google,error_type,words", ERRORS)
def test_every_documented_error_in_perspectives_shape(server, body, key, status, google, error_type, words):
    srv, _ = server
    got_status, got = _post(srv.base, body, key=key)
    assert got_status == status
    assert set(got) == {"error"} and set(got["error"]) == {"code", "message", "status", "details"}
    assert got["error"]["code"] == status and got["error"]["status"] == google
    assert words in got["error"]["message"]
    if error_type:
        assert got["error"]["details"][0]["errorType"] == error_type
    if error_type == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE":
        assert got["error"]["details"][0]["languageNotSupportedByAttributeError"]["attribute"] == "TOXICITY"


@pytest.mark.parametrize("key,reason,status,google", [("wrong-key", "API_KEY_INVALID", 400, "INVALID_ARGUMENT"),
                                                      (None, "CREDENTIALS_MISSING", 403, "PERMISSION_DENIED")])
def test_key_refusals_carry_googles_error_reasons(server, key, reason, status, google):
    """Google's answers (docs/PERSPECTIVE.md, "Errors"): 400 INVALID_ARGUMENT for a wrong key, 403
    PERMISSION_DENIED for none; the ErrorInfo reason is the value of google.api.ErrorReason."""
    srv, _ = server
    got_status, got = _post(srv.base, EXAMPLE, key=key)
    assert got_status == status and got["error"]["status"] == google
    assert got["error"]["details"] == [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                                        "domain": "googleapis.com",
                                        "metadata": {"service": "commentanalyzer.googleapis.com"}}]


def test_attribute_names_are_upper_case_as_documented(server):
    """Perspective's names are upper case; another case is an unknown attribute (with a hint),
    so a client never reads a response key other than the one it asked for."""
    srv, _ = server
    status, got = _post(srv.base, {"comment": {"text": "hi"}, "requestedAttributes": {"Insult": {}}})
    assert status == 400 and got["error"]["details"][0] == {
        "@type": "type.googleapis.com/google.commentanalyzer.v1alpha1.Error", "errorType": "INVALID_ATTRIBUTE",
        "attribute": "Insult"}
    assert "INSULT" in got["error"]["message"]
    status, got = _post(srv.base, {"comment": {"text": "hi"}, "attributeScores": {
        "toxicity": {"summaryScore": {"value": 0.2}}}}, path="comments:suggestscore")
    assert status == 400 and got["error"]["details"][0]["errorType"] == "INVALID_ATTRIBUTE"
    status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "requestedAttributes": {"INSULT": {}, "TOXICITY": {}}})
    assert status == 200 and set(got["attributeScores"]) == {"INSULT", "TOXICITY"}


def test_an_attribute_named_in_study_toml_can_be_requested(tmp_path):
    app = create_app(_study(attributes={"RUDENESS": {"detector": "ml", "label": "insult"}}), tmp_path / "s.sqlite",
                     TOKEN, detectors={"ml": MultiLabel()})
    srv = ThreadedServer(app)
    try:
        status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "requestedAttributes": {"RUDENESS": {}}})
    finally:
        srv.stop()
    assert status == 200 and got["attributeScores"]["RUDENESS"]["summaryScore"]["value"] == pytest.approx(0.5)
    assert got["attributeScores"]["RUDENESS"]["detector"]["label"] == "insult"


def test_the_api_key_never_reaches_the_log(server, caplog):
    """`modlens pair --api-key`'s key is scrubbed like the pairing token: in a header quoted by a
    traceback, in a message, in the access log's request line."""
    caplog.set_level(logging.DEBUG)
    api_key = keys.rotate()
    try:
        raise ValueError(f"b'POST /v1alpha1/comments:analyze HTTP/1.1\\r\\nX-Goog-Api-Key: {api_key}\\r\\n'")
    except ValueError:
        logging.getLogger("aiohttp.server").exception("Error handling request")
    logging.getLogger("modlens.daemon").warning("a client sent %s", api_key)
    logging.getLogger("aiohttp.access").info('127.0.0.1 "POST /v1alpha1/comments:analyze?key=%s HTTP/1.1" 200', api_key)
    assert caplog.text.count("[redacted]") >= 3 and api_key not in caplog.text


def test_goog_api_key_header_is_scrubbed_without_knowing_the_key():
    from modlens.protocol.security import scrub

    assert "abc123" not in scrub("b'POST /v1alpha1/comments:analyze HTTP/1.1\\r\\nx-goog-api-key: abc123\\r\\n'")
    assert scrub("X-Goog-Api-Key: abc123") == "X-Goog-Api-Key: [redacted]"


@pytest.mark.parametrize("headers,words", [({"Origin": "https://evil.example"}, "web pages"),
                                           ({"Host": "evil.example"}, "loopback")])
def test_web_origins_and_foreign_hosts_refused(server, headers, words):
    srv, _ = server
    status, got = _post(srv.base, EXAMPLE, headers=headers)
    assert status == 403 and got["error"]["status"] == "PERMISSION_DENIED" and words in got["error"]["message"]


def test_drop_unsupported_and_threshold(server):
    srv, _ = server
    status, got = _post(srv.base, {"comment": {"text": "hello you idiot"}, "dropUnsupportedAttributes": True,
                                   "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.5}, "PROFANITY": {},
                                                           "INSULT": {"scoreThreshold": 0.2}}})
    assert status == 200 and list(got["attributeScores"]) == ["INSULT"]  # PROFANITY dropped, TOXICITY below 0.5


def _scores_committed(srv: ThreadedServer) -> None:
    """Waits for the scores the endpoint writes after answering (`Analyzer.drain`)."""
    asyncio.run_coroutine_threadsafe(srv.runner.app[ANALYZER].drain(), srv.loop).result(10)


def _api_rows(db):
    con = sqlite3.connect(db)
    try:
        return (con.execute("SELECT c.comment_key, p.title FROM comments c JOIN pages p USING (page_id) "
                            "WHERE c.platform = 'api'").fetchall(),
                dict(con.execute("SELECT l.name, l.value FROM labels l JOIN comments c USING (comment_id) "
                                 "WHERE c.platform = 'api'").fetchall()),
                con.execute("SELECT count(*) FROM texts WHERE text LIKE '%secret comment%'").fetchone()[0])
    finally:
        con.close()


def test_calls_are_logged_except_with_do_not_store(server):
    srv, db = server
    body = {**EXAMPLE, "comment": {"text": "a secret comment"}, "doNotStore": True, "communityId": "c1"}
    assert _post(srv.base, body)[0] == 200
    assert _api_rows(db) == ([], {}, 0)  # honoured: not the text, not the call
    assert _post(srv.base, {**body, "doNotStore": False, "clientToken": "tok-1", "sessionId": "s-9"})[0] == 200
    comments, labels, texts = _api_rows(db)
    assert [title for _, title in comments] == ["c1"] and texts == 1
    assert labels["api.client_token"] == "tok-1" and labels["api.session_id"] == "s-9"
    assert labels["api.endpoint"] == "analyze" and labels["api.attributes"] == "TOXICITY"
    _scores_committed(srv)  # the call was committed before its answer, its scores just after
    con = sqlite3.connect(db)
    scored = con.execute("SELECT d.name, d.version FROM scores s JOIN texts t USING (text_id) JOIN detectors d "
                         "USING (detector_id) WHERE t.text = 'a secret comment'").fetchall()
    con.close()
    assert scored == [("multilabel", "test-ml-1")]


def test_separate_api_key_and_no_key_in_the_log(server, caplog):
    srv, _ = server
    caplog.set_level(logging.DEBUG)
    api_key = keys.rotate()
    assert _post(srv.base, EXAMPLE, key=api_key)[0] == 200
    assert _post(srv.base, EXAMPLE, key=api_key + "x")[0] == 400
    assert _post(srv.base, EXAMPLE, key=None, headers={"X-Goog-Api-Key": api_key})[0] == 200
    assert api_key not in caplog.text and TOKEN not in caplog.text


def test_calibration_applied_only_when_asked(server):
    srv, _ = server
    body = {"comment": {"text": "idiot"}, "requestedAttributes": {"TOXICITY": {}}}
    status, got = _post(srv.base, {**body, "calibrated": True})
    assert status == 400 and got["error"]["status"] == "FAILED_PRECONDITION" and "calibrate" in got["error"]["message"]
    cal = calibration.fit("TOXICITY", "multilabel", "test-ml-1", [i / 20 for i in range(21)],
                          [(i / 20) ** 2 for i in range(21)], source="test", holdout=0.3, label="toxicity")
    calibration.save(cal)
    assert _post(srv.base, body)[1]["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 1.0
    got = _post(srv.base, {**body, "comment": {"text": "you idiot"}, "calibrated": True})[1]["attributeScores"]["TOXICITY"]
    assert got["summaryScore"]["value"] == pytest.approx(cal.apply(0.5)) and got["summaryScore"]["value"] < 0.5
    assert got["detector"]["calibration"]["id"] == cal.id


def test_a_calibrated_call_logs_the_map_and_what_its_thresholds_left_out(server):
    """A threshold applies to the calibrated score, and the log keeps the uncalibrated one: without
    the map (`api.calibrations`, the id the response names) and the decision (`api.withheld`) the
    log cannot tell what the client was sent. Here the logged score (0.5) is above the threshold
    (0.3) while the calibrated one the client would have seen (0.25) is below it: nothing was sent."""
    srv, db = server
    cal = calibration.fit("TOXICITY", "multilabel", "test-ml-1", [i / 20 for i in range(21)],
                          [(i / 20) ** 2 for i in range(21)], source="test", holdout=0.3, label="toxicity")
    calibration.save(cal)
    status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "calibrated": True, "clientToken": "under",
                                   "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.3}}})
    assert status == 200 and got["attributeScores"] == {}
    text = "idiot. hello there"  # summary 1/3 -> about 1/9 (sent); spans 1.0 (sent) and 0.0 (left out)
    status, got = _post(srv.base, {"comment": {"text": text}, "calibrated": True, "clientToken": "spans",
                                   "spanAnnotations": True, "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.1}}})
    sent = got["attributeScores"]["TOXICITY"]
    assert status == 200 and sent["summaryScore"]["value"] == pytest.approx(cal.apply(1 / 3))
    _scores_committed(srv)
    labels = _call_labels(db, "under")
    assert json.loads(labels["api.calibrations"]) == {"TOXICITY": cal.id}
    # calibrated, though the client was sent no score: what it was sent is api.withheld's to say
    assert json.loads(labels["api.calibrated"]) is True
    assert json.loads(labels["api.withheld"]) == {"TOXICITY": {"summary": True, "spans": [[0, 9]]}}
    con = sqlite3.connect(db)
    logged = con.execute("SELECT s.toxicity FROM scores s JOIN texts t USING (text_id) WHERE t.text = 'you idiot'").fetchone()
    con.close()
    assert logged[0] == pytest.approx(0.5) and cal.apply(logged[0]) < 0.3  # the log's value alone reads "sent"
    labels = _call_labels(db, "spans")
    withheld = json.loads(labels["api.withheld"])["TOXICITY"]
    assert withheld["summary"] is False and withheld["spans"] == [[7, 18]]
    shown = [[s["begin"], s["end"]] for s in sent["spanScores"]]
    assert sorted(shown + withheld["spans"]) == [[b, e] for b, e, _ in spans.sentences(text)]
    # no threshold, not calibrated: nothing to record beyond the scores
    status, _ = _post(srv.base, {"comment": {"text": "you idiot"}, "clientToken": "plain",
                                 "requestedAttributes": {"TOXICITY": {}}})
    _scores_committed(srv)
    labels = _call_labels(db, "plain")
    assert status == 200 and "api.withheld" not in labels and "api.calibrations" not in labels


def test_modlens_perspective_detector_round_trip(server):
    """modlens's own Perspective client (written against Google's service) reads our answers."""
    from modlens.detectors.perspective import PerspectiveDetector

    srv, _ = server
    det = PerspectiveDetector(TOKEN, endpoint=f"{srv.base}/v1alpha1/comments:analyze", attributes=["TOXICITY", "INSULT"],
                              qps=100.0, retries=0)

    async def go():
        try:
            return await det.ascore(["you idiot", "have a nice day"])
        finally:
            await det.client.aclose()
    assert asyncio.run(go()) == [{"TOXICITY": 0.5, "INSULT": 0.5}, {"TOXICITY": 0.0, "INSULT": 0.0}]


async def test_perspective_only_and_shared_batchers(tmp_path):
    det = MultiLabel(delay_s=0.05)
    async with running_daemon(tmp_path, _study(), detectors={"ml": det}, extension_protocol=False) as (url, _app):
        base = url.replace("ws://", "http://").removesuffix("/ws")
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{base}/ws") as r:
                assert r.status == 404  # no extension socket
            async def one(i: int):
                async with s.post(f"{base}/v1alpha1/comments:analyze", params={"key": TOKEN},
                                  json={"comment": {"text": f"comment number {i}"}, "doNotStore": True,
                                        "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}}) as r:
                    return r.status
            assert await asyncio.gather(*(one(i) for i in range(16))) == [200] * 16
    assert sum(det.calls) == 16 and len(det.calls) < 16  # 16 concurrent calls, fewer model calls


def test_discovery_document_points_at_this_server(server):
    srv, _ = server
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{srv.base}/discovery/v1/apis/commentanalyzer/v1alpha1/rest") as r:
                return await r.json()
    doc = asyncio.run(go())
    assert doc["rootUrl"] == f"{srv.base}/" and doc["resources"]["comments"]["methods"]["analyze"]["path"] == \
        "v1alpha1/comments:analyze"


def test_report_shows_api_traffic_per_community(server):
    from modlens.analysis.report import render_html, report_from_db

    srv, db = server
    for body, path in [({**EXAMPLE, "communityId": "forum-a", "clientToken": "x"}, "comments:analyze"),
                       ({**EXAMPLE, "communityId": "forum-a", "clientToken": "y"}, "comments:analyze"),
                       ({**EXAMPLE, "communityId": "forum-a", "doNotStore": True}, "comments:analyze"),
                       ({"comment": {"text": "hi"}, "communityId": "forum-a",
                         "attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.1}}}}, "comments:suggestscore"),
                       ({**EXAMPLE, "comment": {"text": "you idiot"}}, "comments:analyze")]:
        assert _post(srv.base, body, path=path)[0] == 200
    _scores_committed(srv)
    report = report_from_db(db)
    api = report["sections"]["api"]
    assert api["n_calls"] == 4
    assert api["communities"]["forum-a"] == {"analyze": 2, "suggestscore": 1, "client_tokens": 2, "sessions": 0,
                                             "calibrated": 0, "mean_score": {"multilabel@test-ml-1": 0.0}}
    assert api["communities"]["(no communityId)"]["mean_score"] == {"multilabel@test-ml-1": 0.5}
    assert "Perspective API traffic" in render_html(report)


@pytest.mark.parametrize("text", ["   ", "\n\t ", "\u200b\u00a0"])
def test_a_blank_comment_is_refused_as_empty_and_never_scored(server, text):
    """A whitespace-only comment is Perspective's COMMENT_EMPTY, as the live daemon treats it
    (`blank_reason`): not a detector's 0.0 answered as a probability and logged as a score."""
    srv, db = server
    for path, body in [("comments:analyze", {"comment": {"text": text}, "requestedAttributes": {"TOXICITY": {}}}),
                       ("comments:suggestscore", {"comment": {"text": text},
                                                  "attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.1}}}})]:
        status, got = _post(srv.base, body, path=path)
        assert status == 400 and got["error"]["details"][0]["errorType"] == "COMMENT_EMPTY", (path, got)
        assert got["error"]["message"] == "Comment must be non-empty."
    _scores_committed(srv)
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM comments WHERE platform = 'api'").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 0
    finally:
        con.close()


def test_span_scores_below_the_threshold_are_left_out(server):
    """scoreThreshold: "Don't return scores for this attribute that are below this threshold" (the
    discovery document's AttributeParameters): a span's score is one of them, not only the summary."""
    srv, _ = server
    status, got = _post(srv.base, {"comment": {"text": "you idiot. have a nice day"}, "spanAnnotations": True,
                                   "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.1}, "INSULT": {}}})
    assert status == 200
    tox = got["attributeScores"]["TOXICITY"]
    assert tox["summaryScore"]["value"] == pytest.approx(1 / 6)
    assert [(s["begin"], s["end"], s["score"]["value"]) for s in tox["spanScores"]] == [(0, 10, 0.5)]
    # without a threshold every span is there, the clean one included
    assert [s["score"]["value"] for s in got["attributeScores"]["INSULT"]["spanScores"]] == [0.5, 0.0]


class Failing(MultiLabel):
    def score(self, texts):
        raise RuntimeError("the model's worker died")


@pytest.mark.parametrize("do_not_store", [False, True])
def test_a_failed_detector_is_in_the_daemon_log_and_the_study_log(tmp_path, caplog, do_not_store):
    """The 500 of a detector that failed is said in the daemon log (which detector, why; never the
    text), and a logged call keeps the detector's error for its text, as any scored text does (so
    `modlens rescore` retries it), instead of a call that looks answered with its scores lost."""
    caplog.set_level(logging.WARNING, logger="modlens.daemon")
    db = tmp_path / "study.sqlite"
    app = create_app(_study(), db, TOKEN, detectors={"ml": Failing()})
    srv = ThreadedServer(app)
    try:
        status, got = _post(srv.base, {"comment": {"text": "a private failing comment"}, "doNotStore": do_not_store,
                                       "requestedAttributes": {"TOXICITY": {}}})
        _scores_committed(srv)
    finally:
        srv.stop()
    assert status == 500 and got["error"]["status"] == "INTERNAL"
    failed = [r.getMessage() for r in caplog.records if "could not score" in r.getMessage()]
    assert failed and "ml" in failed[0] and "the model's worker died" in failed[0]
    assert "private failing comment" not in caplog.text
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT s.error FROM scores s JOIN texts t USING (text_id) "
                           "WHERE t.text = 'a private failing comment'").fetchall()
        texts = con.execute("SELECT count(*) FROM texts WHERE text LIKE '%private failing%'").fetchone()[0]
    finally:
        con.close()
    if do_not_store:
        assert rows == [] and texts == 0
    else:
        assert len(rows) == 1 and "the model's worker died" in rows[0][0]


def test_suggested_span_scores_are_logged_not_dropped(server):
    """suggestscore takes an attribute's score as a summary, as spans, or both (Google's
    SuggestCommentScoreRequest: "To specify scores on specific subparts of the comment, use the
    span_scores field"). The 200 says the suggestion was stored: its spans were dropped, and a
    suggestion of spans alone was refused."""
    srv, db = server
    text = "you idiot. have a nice day"
    both = {"summaryScore": {"value": 0.4}, "spanScores": [
        {"begin": 0, "end": 10, "score": {"value": 0.9, "type": "PROBABILITY"}}, {"begin": 11, "end": 26, "score": {"value": 0.0}}]}
    assert _post(srv.base, {"comment": {"text": text}, "attributeScores": {"TOXICITY": both}, "clientToken": "a"},
                 path="comments:suggestscore")[0] == 200
    spans_only = {"spanScores": [{"begin": 0, "end": 10, "score": {"value": 1}}]}
    status, got = _post(srv.base, {"comment": {"text": text}, "attributeScores": {"INSULT": spans_only}, "clientToken": "b"},
                        path="comments:suggestscore")
    assert status == 200, got
    con = sqlite3.connect(db)
    try:
        labels = {(tok, name): value for tok, name, value in con.execute(
            "SELECT t.value, l.name, l.value FROM labels l JOIN labels t USING (comment_id) "
            "WHERE t.name = 'api.client_token' AND l.name LIKE 'api.suggested%'")}
    finally:
        con.close()
    assert labels[("a", "api.suggested.TOXICITY")] in ("0.4", 0.4)
    assert json.loads(labels[("a", "api.suggested_spans.TOXICITY")]) == [[0, 10, 0.9], [11, 26, 0.0]]
    assert json.loads(labels[("b", "api.suggested_spans.INSULT")]) == [[0, 10, 1.0]]
    assert ("b", "api.suggested.INSULT") not in labels
    for bad in [{"begin": 5, "end": 3, "score": {"value": 0.5}}, {"begin": 0, "end": 27, "score": {"value": 0.5}},
                {"begin": 0, "score": {"value": 0.5}}, {"begin": 0, "end": 3, "score": {"value": 1.5}},
                {"begin": 0, "end": 3, "score": {"value": 0.5, "type": "STD_DEV_SCORE"}}]:
        status, got = _post(srv.base, {"comment": {"text": text}, "attributeScores": {"TOXICITY": {"spanScores": [bad]}}},
                            path="comments:suggestscore")
        assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT", (bad, got)


def test_the_log_records_no_language_where_none_was_detected(server):
    """A comment with no letters has no language to detect: the call's `api.languages` is `und`
    (what the response says, as Perspective said it), never a default such as English."""
    srv, db = server
    status, got = _post(srv.base, {"comment": {"text": "🤡🤡 💀"}, "dropUnsupportedAttributes": True,
                                   "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["languages"] == ["und"] and got["detectedLanguages"] == ["und"]
    _, labels, _ = _api_rows(db)
    assert labels["api.languages"] == "und"


def _call_labels(db, client_token: str) -> dict[str, str]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT l.name, l.value FROM labels l JOIN labels t USING (comment_id) "
                                "WHERE t.name = 'api.client_token' AND t.value = ? AND l.source = 'api'",
                                (client_token,)).fetchall())
    finally:
        con.close()


def test_the_log_says_which_attributes_were_answered_and_which_dropped(server):
    """With dropUnsupportedAttributes the client gets scores for some of the attributes it asked
    for: the log says which (`api.answered`), which were dropped (`api.dropped`) and the thresholds
    under which a score was left out (`api.score_thresholds`), beside what was asked (`api.attributes`)."""
    srv, db = server
    asked = {"TOXICITY": {"scoreThreshold": 0.5}, "PROFANITY": {}, "INSULT": {"scoreThreshold": 0.2}}
    status, got = _post(srv.base, {"comment": {"text": "hello you idiot"}, "dropUnsupportedAttributes": True,
                                   "requestedAttributes": asked, "clientToken": "dropping"})
    assert status == 200 and list(got["attributeScores"]) == ["INSULT"]  # TOXICITY's 1/6 is below its 0.5
    labels = _call_labels(db, "dropping")
    assert labels["api.attributes"] == "TOXICITY,PROFANITY,INSULT"  # asked for, as before
    assert labels["api.answered"] == "TOXICITY,INSULT" and labels["api.dropped"] == "PROFANITY"
    assert json.loads(labels["api.score_thresholds"]) == {"TOXICITY": 0.5, "INSULT": 0.2}
    # every attribute answered: none dropped, said as such (an old log has no `api.dropped` at all)
    status, got = _post(srv.base, {"comment": {"text": "hello you idiot"}, "clientToken": "all",
                                   "requestedAttributes": {"TOXICITY": {}, "INSULT": {}}})
    assert status == 200 and set(got["attributeScores"]) == {"TOXICITY", "INSULT"}
    labels = _call_labels(db, "all")
    assert labels["api.answered"] == "TOXICITY,INSULT" and labels["api.dropped"] == ""
    assert "api.score_thresholds" not in labels
    # nothing detected: every attribute dropped, nothing answered
    status, got = _post(srv.base, {"comment": {"text": "😂😂"}, "dropUnsupportedAttributes": True, "clientToken": "und",
                                   "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"] == {}
    labels = _call_labels(db, "und")
    assert (labels["api.answered"], labels["api.dropped"], labels["api.languages"]) == ("", "TOXICITY", "und")


def test_a_call_with_every_attribute_dropped_is_not_logged_as_calibrated(server):
    """`api.calibrated` says a map was applied to each answered attribute (the report counts such
    calls): a calibrated call whose every attribute was dropped had none applied."""
    srv, db = server
    status, got = _post(srv.base, {"comment": {"text": "😂😂"}, "dropUnsupportedAttributes": True, "calibrated": True,
                                   "clientToken": "none-answered", "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"] == {}
    labels = _call_labels(db, "none-answered")
    assert labels["api.answered"] == "" and json.loads(labels["api.calibrated"]) is False
    assert "api.calibrations" not in labels
    cal = calibration.fit("TOXICITY", "multilabel", "test-ml-1", [i / 20 for i in range(21)],
                          [(i / 20) ** 2 for i in range(21)], source="test", holdout=0.3, label="toxicity")
    calibration.save(cal)
    status, got = _post(srv.base, {"comment": {"text": "you idiot"}, "calibrated": True, "clientToken": "answered",
                                   "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"]["TOXICITY"]["detector"]["calibration"]["id"] == cal.id
    assert json.loads(_call_labels(db, "answered")["api.calibrated"]) is True


TEXT_TYPES = SCHEMAS["TextEntry"]["properties"]["type"]["enum"]  # in their numbers' order


def test_a_comment_type_number_names_the_type_googles_discovery_document_numbers(server):
    """Pinned apart from SCHEMAS, which the code reads too: a reordered enum would move both alike.
    Google's discovery document numbers TextType TEXT_TYPE_UNSPECIFIED, PLAIN_TEXT, HTML: 1 is
    scored as PLAIN_TEXT, 2 refused as HTML."""
    srv, _ = server
    status, got = _post(srv.base, {"comment": {"text": "you idiot", "type": 1}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 0.5
    status, got = _post(srv.base, {"comment": {"text": "you idiot", "type": 2}, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 400 and got["error"]["message"].startswith("comment.type HTML is not supported")


@pytest.mark.parametrize("kind", ["HTML", "MARKDOWN", 3])
def test_a_comment_type_that_cannot_be_honoured_is_refused_not_scored(server, kind):
    """Perspective documented `comment.type` as PLAIN_TEXT or HTML, and scored PLAIN_TEXT only: the
    detectors here read markup as words, so an HTML comment is refused (400, nothing logged, no
    score), and a value that is no TextType at all is refused as Google's parser refused it."""
    srv, db = server
    status, got = _post(srv.base, {"comment": {"text": "<b>you idiot</b>", "type": kind},
                                   "requestedAttributes": {"TOXICITY": {}}, "clientToken": "typed"})
    assert status == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
    assert "comment.type" in got["error"]["message"] and "attributeScores" not in got
    assert _api_rows(db) == ([], {}, 0)
    status, _ = _post(srv.base, {"comment": {"text": "you idiot", "type": kind}, "attributeScores": {
        "TOXICITY": {"summaryScore": {"value": 0.9}}}}, path="comments:suggestscore")
    assert status == 400


@pytest.mark.parametrize("kind", [t for t in TEXT_TYPES if t != "HTML"] + [None])
def test_plain_text_comments_are_scored(server, kind):
    srv, _ = server
    comment = {"text": "you idiot", **({"type": kind} if kind else {})}
    status, got = _post(srv.base, {"comment": comment, "requestedAttributes": {"TOXICITY": {}}})
    assert status == 200 and got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 0.5


@pytest.mark.parametrize("number", range(len(TEXT_TYPES)))
def test_a_comment_type_given_by_its_number_is_that_type(server, number):
    """Google's JSON parser read an enum's number as the name it numbers (1 is PLAIN_TEXT, scored
    there): a number is answered as its name is, HTML the one type refused."""
    srv, _ = server
    by_name = _post(srv.base, {"comment": {"text": "you idiot", "type": TEXT_TYPES[number]},
                               "requestedAttributes": {"TOXICITY": {}}})
    by_number = _post(srv.base, {"comment": {"text": "you idiot", "type": number},
                                 "requestedAttributes": {"TOXICITY": {}}})
    assert by_number == by_name
    if TEXT_TYPES[number] == "HTML":
        assert by_number[0] == 400 and by_number[1]["error"]["message"].startswith("comment.type HTML is not supported")
    else:
        assert by_number[0] == 200 and by_number[1]["attributeScores"]["TOXICITY"]["summaryScore"]["value"] == 0.5


class OtherModel(MultiLabel):
    """Another model whose release happens to carry the same version string."""
    name = "othermodel"


def test_a_map_is_applied_only_to_the_detector_and_label_it_was_fit_on(tmp_path):
    """A map fitted on one detector's label says nothing about another label of it (a study that
    maps TOXICITY to `insult` instead of `toxicity`), nor about another detector whose version
    string happens to be the same: such a call is refused as uncalibrated, not calibrated with it."""
    cal = calibration.fit("TOXICITY", "multilabel", "test-ml-1", [i / 20 for i in range(21)],
                          [(i / 20) ** 2 for i in range(21)], source="test", holdout=0.3, label="toxicity")
    calibration.save(cal)
    body = {"comment": {"text": "you idiot"}, "calibrated": True, "requestedAttributes": {"TOXICITY": {}}}
    for attributes, detector, applied in (({}, MultiLabel(), True),
                                          ({"TOXICITY": {"detector": "ml", "label": "insult"}}, MultiLabel(), False),
                                          ({}, OtherModel(), False)):
        app = create_app(_study(attributes=attributes), tmp_path / "s.sqlite", TOKEN, detectors={"ml": detector})
        srv = ThreadedServer(app)
        try:
            status, got = _post(srv.base, body)
        finally:
            srv.stop()
        if applied:
            assert status == 200 and got["attributeScores"]["TOXICITY"]["detector"]["calibration"]["id"] == cal.id
        else:
            assert status == 400 and got["error"]["status"] == "FAILED_PRECONDITION", (attributes, detector.name)


def test_a_suggestion_logs_its_languages_as_an_analyze_call_does(server):
    """Every logged call carries `api.languages` (docs/PERSPECTIVE.md, "What is logged"): the
    languages the request gave, else the one detected. A suggestion had none, so a study of the
    log by language left every suggestion out."""
    srv, db = server
    score = {"TOXICITY": {"summaryScore": {"value": 0.9}}}
    for token, extra, expected in (("detected", {}, "es"), ("given", {"languages": ["en"]}, "en"),
                                   ("none", {}, "und")):
        text = "🤬🤬" if token == "none" else "No me gusta nada lo que dices, eres una persona muy mala."
        status, got = _post(srv.base, {"comment": {"text": text}, "attributeScores": score, "clientToken": token,
                                       **extra}, path="comments:suggestscore")
        assert status == 200 and got["requestedLanguages"] == extra.get("languages", [])
        assert _call_labels(db, token)["api.languages"] == expected
