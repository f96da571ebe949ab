"""Clients that hard-code `https://commentanalyzer.googleapis.com` reach modlens with no change
to their code (`modlens serve --perspective-proxy`): `requests` and Google's own client
(googleapiclient over httplib2) are given only the environment modlens prints, and call Google's
real address. Everything stays on loopback: the proxy answers CONNECT for that one host by
terminating TLS itself and never opens a connection (a CONNECT to anything else is refused and
the other end sees no connection). Also the errors these clients parse: PyPerspective's empty-body
key probe (it reads `error.details[0]`) and perspective.py's parse of the language error."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from cryptography import x509

from daemon_helpers import TOKEN, WordListDetector, study
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app
from modlens.daemon.perspective_proxy import DropIn, start_drop_in
from modlens.perspective import dropin as dropin_rules, tls
from modlens.perspective.dropin import check_connect, serve_lines

pytestmark = pytest.mark.timeout(120)
GOOGLE = "https://commentanalyzer.googleapis.com"
ANALYZE = f"{GOOGLE}/v1alpha1/comments:analyze"


class Tox(WordListDetector):
    name, version = "wordlist", "test-1"


@pytest.fixture
def dropin(tmp_path, monkeypatch):
    app = create_app(study(detectors=[{"name": "profanity-check", "id": "ml"}]), tmp_path / "study.sqlite", TOKEN,
                     detectors={"ml": Tox()})
    srv = ThreadedServer(app)
    proxy: DropIn = asyncio.run_coroutine_threadsafe(start_drop_in(app, srv.runner, "127.0.0.1", 0),
                                                     srv.loop).result(30)
    env = tls.environment(proxy.material, f"http://127.0.0.1:{proxy.port}")
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield srv, proxy, env
    asyncio.run_coroutine_threadsafe(proxy.close(), srv.loop).result(10)
    srv.stop()


def test_requests_reaches_modlens_at_googles_address(dropin):
    got = requests.post(ANALYZE, params={"key": TOKEN}, timeout=30,
                        json={"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}})
    assert got.status_code == 200
    score = got.json()["attributeScores"]["TOXICITY"]
    assert score["summaryScore"]["value"] > 0 and score["detector"]["version"] == "test-1"


def test_pyperspective_key_probe_constructs_and_wrong_key_is_told(dropin):
    """PyPerspective 1.0.4's constructor, as it is written: `requests.post(base_url, params={"key":
    key}).json()` (no body), then `"reason" in r["error"]["details"][0]` and reason API_KEY_INVALID."""
    def probe(key: str) -> str:
        r = requests.post(ANALYZE, params={"key": key}, timeout=30).json()
        if "error" in r and "reason" in r["error"]["details"][0] and r["error"]["details"][0]["reason"] == "API_KEY_INVALID":
            return "InvalidAuthKey"
        return "constructed"
    assert probe(TOKEN) == "constructed"
    assert probe("not-the-key") == "InvalidAuthKey"
    empty = requests.post(ANALYZE, params={"key": TOKEN}, timeout=30)
    assert empty.status_code == 400
    assert empty.json()["error"]["details"][0]["errorType"] == "COMMENT_EMPTY"
    assert empty.json()["error"]["message"] == "Comment must be specified."


GOOGLE_CLIENT = r"""
import json, sys
from googleapiclient import discovery, errors
key = sys.argv[1]
# perspective.py 0.3.4's construction, unchanged: Google's discovery address written in
client = discovery.build("commentanalyzer", "v1alpha1", developerKey=key,
    discoveryServiceUrl="https://commentanalyzer.googleapis.com/$discovery/rest?version=v1alpha1",
    static_discovery=False)
ok = client.comments().analyze(body={"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}}).execute()
out = {"score": ok["attributeScores"]["TOXICITY"]["summaryScore"]["value"]}
try:
    client.comments().analyze(body={"comment": {"text": "hola"}, "languages": ["es"],
                                    "requestedAttributes": {"TOXICITY": {}}}).execute()
except errors.HttpError as exceptionDetails:
    # perspective.py 0.3.4's parse of the language error, as it is written
    if "does not support request languages" in str(exceptionDetails):
        attribute = str(exceptionDetails).replace(f"<HttpError 400 when requesting https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze?key={key}&alt=json returned \"Attribute ", "").split()[0]
        language = str(exceptionDetails)[str(exceptionDetails).find(attribute):].replace(attribute, "").replace(" does not support request languages: ", "").split("\"")[0]
        out.update(attribute=attribute, language=language)
b = client.new_batch_http_request()
got = {}
for i, text in enumerate(["you idiot", "hello friend"]):
    b.add(client.comments().analyze(body={"comment": {"text": text}, "requestedAttributes": {"TOXICITY": {}}}),
          request_id=str(i), callback=lambda rid, resp, exc: got.__setitem__(rid, resp["attributeScores"]["TOXICITY"]["summaryScore"]["value"]))
b.execute()
out["batch"] = got
print(json.dumps(out))
"""


def test_googles_client_unchanged_through_the_proxy(dropin):
    """Google's client with Google's discovery address, its environment only as modlens prints it;
    a fresh process, since httplib2 reads HTTPLIB2_CA_CERTS when it is imported."""
    _, _, env = dropin
    run = subprocess.run([sys.executable, "-c", GOOGLE_CLIENT, TOKEN], capture_output=True, text=True, timeout=90,
                         env={**os.environ, **env})
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["score"] > 0
    assert (out["attribute"], out["language"]) == ("TOXICITY", "es")
    assert out["batch"]["0"] > 0 and out["batch"]["1"] == 0


def _connect(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        return data


def test_other_targets_refused_and_never_connected(dropin):
    _, proxy, _ = dropin
    bystander = socket.create_server(("127.0.0.1", 0))
    bystander.settimeout(0.5)
    port = bystander.getsockname()[1]
    for head in (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(),
                 b"CONNECT www.google.com:443 HTTP/1.1\r\nHost: www.google.com:443\r\n\r\n",
                 b"CONNECT commentanalyzer.googleapis.com:80 HTTP/1.1\r\n\r\n",
                 f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()):
        answer = _connect(proxy.port, head)
        assert answer.split(b" ", 2)[1] in (b"403", b"405"), answer
    with pytest.raises(TimeoutError):
        bystander.accept()  # the proxy connected nowhere
    bystander.close()
    assert check_connect(b"CONNECT COMMENTANALYZER.googleapis.com:443 HTTP/1.1\r\n\r\n") is None


def test_the_head_the_proxy_reads_and_the_door_it_opens():
    """What the socket peeks at is read by `dropin.head` (a whole head, TLS, more to come, too long),
    and only the drop-in's connections take Google's Host and an absolute-form target."""
    connect = b"CONNECT commentanalyzer.googleapis.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"
    assert dropin_rules.head(connect + b"early body") == connect
    assert dropin_rules.head(b"\x16\x03\x01\x02\x00") == dropin_rules.TLS_HELLO
    assert dropin_rules.head(connect[:-2]) == dropin_rules.INCOMPLETE
    assert dropin_rules.head(b"GET / HTTP/1.1\r\nX: " + b"a" * dropin_rules.HEAD_LIMIT) is None
    url = f"{GOOGLE}/v1alpha1/comments:analyze?key=K"
    assert dropin_rules.door(url, via_drop_in=True) == ("/", tls.GOOGLE_HOST)
    assert dropin_rules.door("/v1alpha1/comments:analyze", via_drop_in=True) == ("/v1alpha1/comments:analyze", tls.GOOGLE_HOST)
    assert dropin_rules.door(url, via_drop_in=False) == (url, None)  # refused there as an absolute-form target


def test_google_host_only_on_the_drop_in_and_only_google_host_there(dropin):
    srv, proxy, env = dropin
    plain = requests.post(f"{srv.base}/v1alpha1/comments:analyze", params={"key": TOKEN}, timeout=30,
                          headers={"Host": "commentanalyzer.googleapis.com"}, proxies={"http": "", "https": ""},
                          json={"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {}}})
    assert plain.status_code == 403 and "loopback" in plain.json()["error"]["message"]
    # on the drop-in's TLS connection, a Host other than Google's is refused
    ctx = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as raw:
        raw.sendall(b"CONNECT commentanalyzer.googleapis.com:443 HTTP/1.1\r\n\r\n")
        assert raw.recv(4096).startswith(b"HTTP/1.1 200")
        with ctx.wrap_socket(raw, server_hostname="commentanalyzer.googleapis.com") as s:
            body = b'{"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {}}}'
            s.sendall(b"POST /v1alpha1/comments:analyze?key=" + TOKEN.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
    assert data.startswith(b"HTTP/1.1 403") and b"drop-in answers for Host commentanalyzer.googleapis.com" in data


def test_the_authority_can_vouch_for_googles_perspective_host_only(dropin):
    _, proxy, env = dropin
    m = proxy.material
    ca = x509.load_pem_x509_certificate(m.ca_cert.read_bytes())
    constraint = ca.extensions.get_extension_for_class(x509.NameConstraints)
    assert constraint.critical
    assert constraint.value.permitted_subtrees == [x509.DNSName("commentanalyzer.googleapis.com")]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length == 0
    # no file keeps the authority's private key: only the server's key is on disk
    keys = [p for p in Path(m.folder).iterdir() if b"PRIVATE KEY" in p.read_bytes()]
    assert keys == [m.server_key] and oct(m.server_key.stat().st_mode & 0o777) == "0o600"
    # a TLS client checking another name against this certificate refuses it
    ctx = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as raw:
        raw.sendall(b"CONNECT commentanalyzer.googleapis.com:443 HTTP/1.1\r\n\r\n")
        assert raw.recv(4096).startswith(b"HTTP/1.1 200")
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(raw, server_hostname="www.googleapis.com")
    assert serve_lines(m, "127.0.0.1", proxy.port)[0] == f"export HTTPS_PROXY=http://127.0.0.1:{proxy.port}"


def test_a_plain_proxy_request_for_googles_url_is_answered_and_others_are_not(dropin):
    """Clients whose HTTP library does not tunnel (axios 0.18, under the npm client) send
    `POST https://commentanalyzer.googleapis.com/...` to the proxy itself: answered by modlens, on
    a kept-alive connection too; the same for another host is refused and goes nowhere."""
    _, proxy, _ = dropin
    body = b'{"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}}'
    one = (b"POST https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze?key=" + TOKEN.encode()
           + b" HTTP/1.1\r\nHost: commentanalyzer.googleapis.com\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        s.sendall(one + one.replace(b"you idiot", b"hello you").replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    answers = data.split(b"HTTP/1.1 ")[1:]
    assert [a[:3] for a in answers] == [b"200", b"200"], data[:500]
    scores = [json.loads(a.split(b"\r\n\r\n", 1)[1])["attributeScores"]["TOXICITY"]["summaryScore"]["value"]
              for a in answers]
    assert scores[0] > 0 and scores[1] == 0
    # a kept-alive connection cannot turn into a proxy for anywhere else
    other = one.replace(b"https://commentanalyzer.googleapis.com", b"http://127.0.0.1:9")
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        s.sendall(one + other)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
            if data.count(b"HTTP/1.1 ") >= 2:
                break
    first, second = data.split(b"HTTP/1.1 ")[1:3]
    assert first[:3] == b"200" and second[:3] == b"400", data[:500]  # Google's: the target must be a path
    assert b"the request target must be a path" in second
    assert _connect(proxy.port, other).startswith(b"HTTP/1.1 403")


def test_tls_straight_to_the_proxy_with_googles_url(dropin):
    """axios 0.18 (the npm client's) speaks TLS to an http:// proxy itself, SNI and Host Google's,
    and writes the whole URL in the request line: answered like a tunnel's request."""
    _, proxy, env = dropin
    ctx = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    body = b'{"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}}}'
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="commentanalyzer.googleapis.com") as s:
            s.sendall(b"POST https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze?key=" + TOKEN.encode()
                      + b" HTTP/1.1\r\nHost: commentanalyzer.googleapis.com\r\nContent-Type: application/json\r\n"
                      b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    assert json.loads(data.split(b"\r\n\r\n", 1)[1])["attributeScores"]["TOXICITY"]["summaryScore"]["value"] > 0


def test_the_material_is_kept_and_made_again_before_it_ends(tmp_path, monkeypatch):
    first = tls.ensure(tmp_path)
    ca = first.ca_cert.read_bytes()
    assert tls.ensure(tmp_path).ca_cert.read_bytes() == ca  # kept: a client that trusts it keeps trusting it
    monkeypatch.setattr(tls, "RENEW_DAYS", tls.VALID_DAYS + 1)  # as if its end were a week away
    assert tls.ensure(tmp_path).ca_cert.read_bytes() != ca
