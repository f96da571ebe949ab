"""Protocol models, parsing errors, handshake checks, token storage, and the generated doc."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from modlens import pairing, paths
from modlens import protocol as p
from modlens.protocol import ErrorCode, ProtocolError
from modlens.protocol.doc import render
from modlens.protocol.security import check_handshake, host_is_loopback, offered_token, origin_allowed
from modlens.live import TokenBucket

REPO = Path(__file__).resolve().parents[1]


def _code(raw) -> tuple[ErrorCode, str | None, str]:
    with pytest.raises(ProtocolError) as info:
        p.parse_client_message(raw)
    return info.value.code, info.value.id, info.value.message


def test_parse_valid_messages():
    msg = p.parse_client_message(json.dumps({"type": "ping", "id": "x"}))
    assert isinstance(msg, p.Ping) and msg.id == "x"
    c = p.parse_client_message(json.dumps({
        "type": "comments", "id": "c", "page": {"url": "u", "platform": "youtube", "page_key": "v"},
        "items": [{"key": "k", "text": "t", "future_field": 1}]}))
    assert isinstance(c, p.Comments) and c.variants is True and c.items[0].key == "k"


@pytest.mark.parametrize("raw, code, mid, needle", [
    ("{not json", ErrorCode.bad_json, None, "JSON"),
    (b"\xff\xfe", ErrorCode.bad_json, None, "JSON"),
    ("[1, 2]", ErrorCode.bad_json, None, "object"),
    ('{"type": "ping"}', ErrorCode.invalid_fields, None, "id"),
    ('{"type": "ping", "id": "' + "x" * 129 + '"}', ErrorCode.invalid_fields, None, "id"),
    ('{"type": "dance", "id": "d"}', ErrorCode.unknown_type, "d", "dance"),
    ('{"type": "hello", "id": "h", "protocol": 2, "client": "c", "token": "t", "rater_id": "r"}',
     ErrorCode.invalid_fields, "h", "protocol"),
    ('{"type": "hello", "id": "h", "protocol": 1, "client": "c", "token": "t", "rater_id": "r", "consent_at": "yesterday"}',
     ErrorCode.invalid_fields, "h", "consent_at"),
    ('{"type": "comments", "id": "c", "page": {"url": "u", "platform": "You Tube", "page_key": "v"}, "items": [{"key": "k", "text": "t"}]}',
     ErrorCode.invalid_fields, "c", "page.platform"),
    ('{"type": "comments", "id": "c", "page": {"url": "u", "platform": "x", "page_key": "v"}, "items": [{"key": "k"}]}',
     ErrorCode.invalid_fields, "c", "items.0.text"),
    ('{"type": "rating", "id": "r", "comment": {"platform": "x", "key": "k"}, "values": {}, "anchors": {"vs_hard": "bigger", "vs_extreme": "less"}}',
     ErrorCode.invalid_fields, "r", "anchors.vs_hard"),
])
def test_parse_errors_name_code_id_and_field(raw, code, mid, needle):
    got_code, got_id, message = _code(raw)
    assert (got_code, got_id) == (code, mid)
    assert needle in message


def test_sniff_id_recovers_id_from_a_broken_frame():
    assert p.sniff_id('{"type": "comments", "id": "page-7", "items": [' + "x" * 10) == "page-7"
    assert p.sniff_id("garbage") is None


def test_error_message_shape():
    m = ProtocolError(ErrorCode.rate_limited, "slow down", "a", 120).to_message()
    assert m == {"type": "error", "id": "a", "code": "rate_limited", "message": "slow down", "retry_after_ms": 120}
    assert "retry_after_ms" not in ProtocolError(ErrorCode.bad_json, "x").to_message()


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:8765", True), ("localhost", True), ("localhost:1", True), ("[::1]:8765", True),
    ("127.3.4.5", True), ("evil.example:8765", False), ("192.168.1.4:8765", False), ("", False),
    (None, False), ("localhost.evil.com", False), ("127.0.0.1:80x", False), ("[::1]x", False),
])
def test_host_must_be_loopback(host, ok):
    assert host_is_loopback(host) is ok


@pytest.mark.parametrize("origin, ok", [
    (None, True), ("chrome-extension://abcdef", True), ("moz-extension://1234-5678", True),
    ("https://www.youtube.com", False), ("http://localhost:8765", False), ("null", False),
    ("chrome-extension://", False), ("file://", False),
])
def test_origin_must_be_an_extension(origin, ok):
    assert origin_allowed(origin) is ok


def test_token_from_subprotocol_or_bearer():
    assert offered_token({"Sec-WebSocket-Protocol": "modlens.v1, modlens.token.abc"}) == "abc"
    assert offered_token({"Authorization": "Bearer xyz"}) == "xyz"
    assert offered_token({"Authorization": "Basic xyz"}) is None


def test_handshake_refusals_in_order():
    good = {"Host": "127.0.0.1:8765", "Sec-WebSocket-Protocol": "modlens.v1, modlens.token.sekrit"}
    assert check_handshake(good, "sekrit") is None
    assert check_handshake({**good, "Host": "attacker.com"}, "sekrit").status == 403
    assert check_handshake({**good, "Host": "attacker.com"}, "sekrit", allow_remote_host=True) is None
    assert check_handshake({**good, "Origin": "https://evil.com"}, "sekrit").status == 403
    assert check_handshake({"Host": "localhost"}, "sekrit").status == 401
    assert check_handshake(good, "other").status == 401


def test_token_bucket_refuses_past_burst_and_refills():
    now = [0.0]
    bucket = TokenBucket(rate=10.0, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(3)] == [0, 0, 0]
    wait = bucket.take()
    assert 90 <= wait <= 101  # one token takes 100 ms at 10/s
    now[0] += 0.1
    assert bucket.take() == 0


def test_pairing_token_is_private_stable_and_rotates(modlens_home):
    assert pairing.read() is None
    token = pairing.ensure()
    assert len(token) >= 40 and pairing.ensure() == token
    mode = stat.S_IMODE(os.stat(paths.token_file()).st_mode)
    assert mode == 0o600
    source = pairing.TokenSource()
    assert source() == token
    new = pairing.rotate()
    assert new != token and pairing.read() == new
    os.utime(paths.token_file(), ns=(1, 1))  # make sure the mtime differs even on coarse clocks
    assert source() == new
    assert pairing.matches(new, new) and not pairing.matches(token, new) and not pairing.matches(None, new)


def test_protocol_doc_is_generated_from_the_models():
    doc = (REPO / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert doc == render(), "docs/PROTOCOL.md is stale: python -m modlens.protocol.doc > docs/PROTOCOL.md"
    for code in ErrorCode:
        assert f"`{code.value}`" in doc
    for kind in [*p.CLIENT_MESSAGES, *p.SERVER_MESSAGES]:
        assert f"### `{kind}`" in doc


# --- hostile input, at the unit level (the real-daemon tests are test_daemon_hostile_*) ----------

def test_depth_is_bounded_before_decoding():
    from modlens.protocol.parse import json_depth_exceeds

    nest = lambda n: '{"a": ' + "[" * n + "]" * n + "}"  # noqa: E731
    assert not json_depth_exceeds(nest(p.MAX_JSON_DEPTH - 1))
    assert json_depth_exceeds(nest(p.MAX_JSON_DEPTH))
    assert not json_depth_exceeds('{"a": "' + "[" * 500 + '"}')          # brackets inside a string
    assert not json_depth_exceeds('{"a": "\\"' + "{" * 500 + '"}')      # after an escaped quote
    assert json_depth_exceeds('{"a": "\\\\", "b": ' + "[" * 500)        # after an escaped backslash
    assert not json_depth_exceeds('"' + "\\" * 999)                     # unterminated: a string to the end
    code, mid, message = _code('{"type":"ping","id":"x","a":' + "[" * 980 + "]" * 980 + "}")
    assert (code, mid) == (ErrorCode.bad_json, "x") and "nested" in message


@pytest.mark.parametrize("raw, code", [
    ('{"type": "ping", "id": "\\ud800"}', ErrorCode.invalid_fields),
    ('{"type": "dance", "id": "ok", "x": 1}', ErrorCode.unknown_type),
    ('{"type": "\\ud800", "id": "ok"}', ErrorCode.unknown_type),
    ('{"type": "ping", "id": "\\udfff", ', ErrorCode.bad_json),
])
def test_lone_surrogates_never_escape_as_encoding_errors(raw, code):
    got, mid, message = _code(raw)
    assert got == code
    assert mid in (None, "ok")
    json.dumps(ProtocolError(got, message, mid).to_message(), ensure_ascii=False).encode("utf-8")


def test_strict_types():
    base = {"type": "rating", "id": "r", "comment": {"platform": "x", "key": "k"}, "values": {"a": "b"}}
    assert p.parse_client_message(json.dumps({**base, "time_spent_ms": 5})).time_spent_ms == 5
    for bad in (True, 5.0, "5"):
        assert _code(json.dumps({**base, "time_spent_ms": bad}))[0] is ErrorCode.invalid_fields
    hello = {"type": "hello", "id": "h", "protocol": 1, "client": "c", "token": "t", "rater_id": "r"}
    for bad in (True, 1.0):
        assert "protocol" in _code(json.dumps({**hello, "protocol": bad}))[2]


def test_tokens_compare_as_bytes_whatever_the_characters():
    assert pairing.matches("abc", "abc")
    for presented in ("\udcff\udcfe", "\ud800", "é", "abc\x00", ""):
        assert not pairing.matches(presented, "abc")


def test_handshake_refuses_repeated_headers_and_absolute_targets():
    from multidict import CIMultiDict

    good = CIMultiDict({"Host": "127.0.0.1:8765", "Sec-WebSocket-Protocol": "modlens.v1, modlens.token.sekrit"})
    assert check_handshake(good, "sekrit", target="/ws") is None
    for name, value in (("Origin", "chrome-extension://abc"), ("Host", "evil.example"),
                        ("Authorization", "Bearer sekrit")):
        twice = good.copy()
        twice.add(name, value)
        if name != "Host":
            twice.add(name, value)
        assert check_handshake(twice, "sekrit", target="/ws").status == 403
    for target in ("http://evil.example/ws", "//evil.example/ws", "*", "evil.example:80"):
        assert check_handshake(good, "sekrit", target=target).status == 400
    assert check_handshake({"Host": "localhost", "Authorization": "Bearer \udcff"}, "sekrit").status == 401


def test_log_lines_lose_their_secrets():
    from modlens.protocol.security import scrub

    assert scrub('"GET /status?token=abc HTTP/1.1" 200', ["zzz"]) == '"GET /status?[redacted] HTTP/1.1" 200'
    assert "abc" not in scrub("b'GET /ws HTTP/1.1\\nAuthorization: Bearer abc\\n\\x00'")
    assert "abc" not in scrub("b'Sec-WebSocket-Protocol: modlens.v1, modlens.token.abc\\x7f'")
    assert scrub("the token is abc", ["abc"]) == "the token is [redacted]"


def test_every_client_message_type_has_a_handler():
    from modlens.daemon.app import HANDLERS
    from modlens.protocol.messages import CLIENT_MESSAGES

    assert set(HANDLERS) == set(CLIENT_MESSAGES)
