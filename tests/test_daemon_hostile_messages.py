"""Hostile and malformed messages against a real `modlens serve`: every
bad frame is answered with one `error` and the socket stays open; nothing is processed that the
protocol does not allow (binary frames, lax types); a socket whose handler fails is closed and
freed, not kept alive by its heartbeat."""
from __future__ import annotations

import asyncio
import gc
import json
import random
import sqlite3

import pytest
import websockets

from modlens import pairing

from daemon_helpers import connect, running_daemon, serve_process, write_study

DEEP = '{"type":"ping","id":"x","a":' + "[" * 980 + "]" * 980 + "}"  # the reported 1,989-byte frame


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """One real `modlens serve` for the module: (url, token, db path, home)."""
    home = tmp_path_factory.mktemp("hostile-home")
    token = pairing.ensure(home / "pairing-token")
    study = write_study(home / "study.toml", [], messages_per_second=10_000, burst=10_000)
    db = home / "log.sqlite"
    proc, info = serve_process(home, "--config", str(study), "--db", str(db))
    yield info["url"], token, db, home
    proc.terminate()
    proc.wait(15)


def hello(token: str, mid: str = "h", **over) -> dict:
    return {"type": "hello", "id": mid, "protocol": 1, "client": "hostile-test", "token": token,
            "rater_id": "hostile-rater", **over}


async def _exchange(url: str, token: str, frames: list, *, say_hello: bool) -> list:
    """Send each frame, collect its answer, then check the socket still answers a ping."""
    answers = []
    async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
        if say_hello:
            await ws.send(json.dumps(hello(token)))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "hello_ok"
        for frame in frames:
            await ws.send(frame)
            answers.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        await ws.send(json.dumps({"type": "ping", "id": "still-open"}))
        last = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert last["id"] == "still-open" and last["type"] == ("pong" if say_hello else "error"), last
    return answers


def exchange(daemon, frames, *, say_hello=True) -> list:
    url, token, _, _ = daemon
    return asyncio.run(_exchange(url, token, frames, say_hello=say_hello))


@pytest.mark.parametrize("say_hello", [False, True])
def test_deeply_nested_json_is_refused_and_the_socket_kept(daemon, say_hello):
    assert len(DEEP) == 1989
    (answer,) = exchange(daemon, [DEEP], say_hello=say_hello)
    assert answer["type"] == "error" and answer["code"] == "bad_json", answer
    assert "nested" in answer["message"] and answer["id"] == "x"


@pytest.mark.parametrize("frame", [
    '{"type": "ping", "id": "\\ud800"}',                      # lone high surrogate as the id
    '{"type": "dance", "id": "\\udfff"}',                     # echoed in unknown_type
    '{"type": "ping", "id": "\\ud800", ',                     # sniffed from a broken frame
    '{"type": "ping", "id": "\\ud83d"}',                      # half of a pair
])
def test_lone_surrogate_in_id_is_answered_not_dropped(daemon, frame):
    (answer,) = exchange(daemon, [frame])
    assert answer["type"] == "error" and answer["code"] in ("bad_json", "invalid_fields"), answer
    assert answer["id"] is None


def test_lone_surrogate_in_a_field_is_invalid_fields_not_internal(daemon):
    frame = json.dumps({"type": "comments", "id": "sur", "page": {"url": "u", "platform": "x", "page_key": "p"},
                        "items": [{"key": "k", "text": "broken \ud800 text"}]})
    (answer,) = exchange(daemon, [frame])
    assert (answer["type"], answer["code"], answer["id"]) == ("error", "invalid_fields", "sur"), answer
    assert "items.0.text" in answer["message"]


def test_a_surrogate_pair_is_valid_text(daemon):
    frame = json.dumps({"type": "ping", "id": "emoji-\U0001F600"})  # ensure_ascii: \ud83d\ude00
    (answer,) = exchange(daemon, [frame])
    assert answer == {**answer, "type": "pong", "id": "emoji-\U0001F600"}


@pytest.mark.parametrize("say_hello", [False, True])
def test_binary_frames_are_refused_not_processed(daemon, say_hello):
    (answer,) = exchange(daemon, [json.dumps({"type": "ping", "id": "bin"}).encode()], say_hello=say_hello)
    assert answer["type"] == "error" and answer["code"] == "bad_json", answer
    assert "binary" in answer["message"] and answer["id"] == "bin"


def test_binary_hello_does_not_open_a_session(daemon):
    url, token, _, _ = daemon

    async def go():
        async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
            await ws.send(json.dumps(hello(token)).encode())
            first = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(json.dumps({"type": "ping", "id": "p"}))
            return first, json.loads(await asyncio.wait_for(ws.recv(), 10))

    first, then = asyncio.run(go())
    assert first["code"] == "bad_json"
    assert then["code"] == "hello_required"


@pytest.mark.parametrize("message, field", [
    ({"type": "rating", "id": "lax-1", "comment": {"platform": "x", "key": "k"}, "values": {"toxicity": "toxic"},
      "time_spent_ms": True}, "time_spent_ms"),
    ({"type": "rating", "id": "lax-2", "comment": {"platform": "x", "key": "k"}, "values": {"toxicity": "toxic"},
      "time_spent_ms": 12.5}, "time_spent_ms"),
    ({"type": "rating", "id": "lax-3", "comment": {"platform": "x", "key": 7}, "values": {"toxicity": "toxic"}},
     "comment.key"),
    ({"type": "comments", "id": "lax-4", "variants": "yes", "page": {"url": "u", "platform": "x", "page_key": "p"},
      "items": [{"key": "k", "text": "t"}]}, "variants"),
    ({"type": "comments", "id": "lax-5", "variants": 1, "page": {"url": "u", "platform": "x", "page_key": "p"},
      "items": [{"key": "k", "text": "t"}]}, "variants"),
    ({"type": "join_study", "id": "lax-6", "pack": "{}", "replace": "true"}, "replace"),
])
def test_lax_types_are_refused(daemon, message, field):
    (answer,) = exchange(daemon, [json.dumps(message)])
    assert (answer["type"], answer["code"], answer["id"]) == ("error", "invalid_fields", message["id"]), answer
    assert field in answer["message"]


@pytest.mark.parametrize("protocol", [True, 1.0, "1"])
def test_hello_protocol_must_be_the_integer_1(daemon, protocol):
    _, token, _, _ = daemon
    (answer,) = exchange(daemon, [json.dumps(hello(token, "lax-hello", protocol=protocol))], say_hello=False)
    assert (answer["type"], answer["code"]) == ("error", "invalid_fields"), answer
    assert "protocol" in answer["message"]


def test_a_bool_time_is_not_stored_as_a_number(daemon):
    """The reported defect: `time_spent_ms: true` was acknowledged and stored as 1."""
    url, token, db, _ = daemon

    async def go():
        async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
            await ws.send(json.dumps(hello(token)))
            await ws.recv()
            await ws.send(json.dumps({"type": "comments", "id": "c", "variants": False,
                                      "page": {"url": "u", "platform": "lax", "page_key": "p"},
                                      "items": [{"key": "k1", "text": "a comment"}]}))
            while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != "scores":
                pass
            await ws.send(json.dumps({"type": "rating", "id": "bool-time", "comment": {"platform": "lax", "key": "k1"},
                                      "values": {"toxicity": "toxic"}, "time_spent_ms": True}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    answer = asyncio.run(go())
    assert answer["type"] == "error" and answer["code"] == "invalid_fields", answer
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM ratings WHERE client_rating_id = 'bool-time'").fetchone() == (0,)


def _malformed(rng: random.Random, token: str) -> str | bytes:
    """One malformed frame: broken JSON, wrong shapes, wrong types, deep nesting, odd text."""
    valid = [hello(token, "fz"), {"type": "ping", "id": "fz"},
             {"type": "rating", "id": "fz", "comment": {"platform": "x", "key": "k"}, "values": {"a": "b"}},
             {"type": "comments", "id": "fz", "page": {"url": "u", "platform": "x", "page_key": "p"},
              "items": [{"key": "k", "text": "t"}]}]
    msg = json.loads(json.dumps(rng.choice(valid)))
    kind = rng.randrange(9)
    if kind == 0:
        text = json.dumps(msg)
        return text[:rng.randrange(1, len(text))]
    if kind == 1:
        field = rng.choice([k for k in msg if k not in ("type", "id")] or ["id"])
        msg[field] = rng.choice([True, None, 1.5, -1, [], {}, "", "x" * 5000, [[[]]], "\ud800"])
    elif kind == 2:
        msg["id"] = rng.choice([None, 5, True, "", "x" * 200, "\udc00x", ["a"]])
    elif kind == 3:
        depth = rng.randrange(33, 3000)
        return '{"type": "ping", "id": "fz", "a": ' + "[" * depth + "]" * depth + "}"
    elif kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    elif kind == 5:
        msg["type"] = rng.choice(["", "HELLO", "ping ", None, 3, "hello_ok", "error"])
    elif kind == 6:
        return rng.choice(["", " ", "null", "[]", "1", '"str"', "{}", "[" * 50_000, "{" * 50_000, '"' + "\\" * 999])
    elif kind == 7:
        return json.dumps(msg).replace('"', "'")
    else:
        msg.pop(rng.choice(list(msg)))
    return json.dumps(msg)


def test_fuzzed_messages_never_drop_the_socket_or_fail_inside(daemon):
    """Malformed frames interleaved with valid pings on one socket: each malformed frame gets
    one error (never `internal`), each ping its pong, and the socket is never closed."""
    url, token, _, _ = daemon
    rng = random.Random(2025)

    async def go():
        errors, pongs = [], 0
        async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
            await ws.send(json.dumps(hello(token)))
            await ws.recv()
            for n in range(400):
                await ws.send(_malformed(rng, token))
                await ws.send(json.dumps({"type": "ping", "id": f"valid-{n}"}))
                while True:  # a refused rating may be answered after the ping (it waits for its comment)
                    answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if answer["type"] == "pong" and answer["id"] == f"valid-{n}":
                        pongs += 1
                        break
                    errors.append(answer)
            while len(errors) < 400:
                errors.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        return 400, pongs, errors

    sent, pongs, errors = asyncio.run(go())
    assert pongs == sent == 400
    assert all(e["type"] == "error" for e in errors), [e for e in errors if e["type"] != "error"][:3]
    assert not [e for e in errors if e["code"] == "internal"]
    assert len(errors) == 400


# --- the per-dropped-socket leak -------------------------------------------------------------

def _live_sockets() -> int:
    from aiohttp import web

    gc.collect()
    return sum(isinstance(o, web.WebSocketResponse) for o in gc.get_objects())


async def test_a_socket_whose_handler_fails_is_closed_and_freed(tmp_path, monkeypatch):
    """Each socket dropped by an exception used to stay alive (about 12 KB: request, parser,
    reader queue) until its 30 s heartbeat fired on a dead transport; under a stream of bad
    frames that grew without bound. The handler now closes the socket whatever happened."""
    from modlens.daemon import app as daemon_app

    async def failing_frame(self, raw, binary=False):
        raise RuntimeError("injected handler failure")

    monkeypatch.setattr(daemon_app.Connection, "frame", failing_frame)
    async with running_daemon(tmp_path) as (url, _):
        before = _live_sockets()
        codes = []
        for _ in range(20):
            async with connect(url) as ws:
                await ws.send('{"type": "ping", "id": "p"}')
                try:
                    await asyncio.wait_for(ws.recv(), 10)
                except websockets.ConnectionClosed as closed:
                    codes.append(closed.rcvd.code if closed.rcvd else None)
        await asyncio.sleep(0.2)
        assert _live_sockets() - before == 0
    assert codes == [1011] * 20  # closed on purpose (internal error), not left hanging
