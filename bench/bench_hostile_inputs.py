"""Hostile-input bench: a real `modlens serve` given malformed HTTP requests and WebSocket frames.

    python bench/bench_hostile_inputs.py [--requests 8000] [--frames 2500] [--slow-sockets 50]
                                         [--concurrency 16] [--seconds 150] [--seed 0] [--json]

Starts `python -m modlens serve --port 0` on 127.0.0.1 (its own MODLENS_HOME in a temporary
folder; bench_fuzz's study: no detectors, rate limits raised). Then, at once:
- --slow-sockets connections that send a request head one byte every 2 s (the header timeout must
  close each; the bench notes after how many seconds);
- --requests raw HTTP requests, --concurrency at a time, each on its own connection: broken request
  lines and headers, other methods, bad keys and Origins, and Perspective bodies that are deep,
  truncated, not UTF-8, with lone surrogates, bare-name keys or unknown fields;
- --frames WebSocket text frames over a few sockets: payloads that are not UTF-8 and bench_fuzz's
  malformed frames, each followed by a ping whose pong shows the socket is still open.
Loopback only; bounded by the counts and by --seconds; the daemon is stopped at the end.

Prints: requests by answer status, 500s, requests with no answer, frames sent and sockets closed
unexpectedly, slow-header sockets closed and after how long, the daemon's count of malformed
requests, and tracebacks found in its log (the goals: 0 500s, 0 tracebacks, 0 sockets lost).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fuzz import malformed, start_daemon  # noqa: E402  (beside this script)

ANALYZE = "/v1alpha1/comments:analyze"
SLOW_BYTE_EVERY_S = 2.0


@dataclass
class Tally:
    statuses: Counter[str] = field(default_factory=Counter)  # first line's status, or "no answer"
    frames_sent: int = 0
    frames_answered: int = 0
    sockets_lost: int = 0          # WebSocket closed by the daemon (not by the bench)
    lost_reasons: list[str] = field(default_factory=list)
    slow_closed_after: list[float] = field(default_factory=list)
    slow_open_at_end: int = 0


def perspective_body(rng: random.Random) -> bytes:
    """A hostile or lenient body for the analyze endpoint."""
    good = '{"comment": {"text": "you are kind"}, "requestedAttributes": {"TOXICITY": {}}}'
    depth = rng.choice([33, 1000, 100_000])
    return rng.choice([
        lambda: ("[" * depth).encode(),
        lambda: ('{"comment": ' * depth).encode(),
        lambda: b'{"comment": {"text": "a \\ud800 b"}, "requestedAttributes": {"TOXICITY": {}}}',
        lambda: b'{"comment": {"text": "ok"}, "clientToken": "\\udfff", "requestedAttributes": {"TOXICITY": {}}}',
        lambda: b'{"comment": {"text": "\xff\xfe\xed\xa0\x80"}}',
        lambda: b'{comment: {text: "bare keys"}, languages: ["en"], requestedAttributes: {TOXICITY:{}} }',
        lambda: b'{comment: {text: __import__("os").system("true")}}',
        lambda: good[:rng.randrange(1, len(good))].encode(),
        lambda: good.replace('"requestedAttributes"', '"requestedAttribute"').encode(),
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))),
        lambda: b"",
        lambda: b"null",
        lambda: b'{"comment": {"text": "' + b"x" * 30_000 + b'"}, "requestedAttributes": {"TOXICITY": {}}}',
        lambda: good.encode(),
    ])()


def request_bytes(rng: random.Random, port: int, token: str) -> bytes:
    """One raw HTTP request, most of them malformed; well-formed ones say `Connection: close`."""
    host = f"Host: 127.0.0.1:{port}\r\n"
    kind = rng.randrange(10)
    if kind == 0:  # broken request lines
        return rng.choice([b"GET / HTTP/1.1 extra\r\n\r\n", b"G\x01T / HTTP/1.1\r\n\r\n", b"GET\r\n\r\n",
                           b"GET / HTTP/9.9\r\n\r\n", b"/ GET HTTP/1.1\r\n\r\n", b"GET " + b"a" * 9000 + b" HTTP/1.1\r\n\r\n",
                           b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
                           b"GET /\x00 HTTP/1.1\r\n\r\n", b"\r\n\r\n\r\n", b"GET / HTTP/1.1\n\n"])
    if kind == 1:  # broken headers
        return b"GET /status HTTP/1.1\r\n" + rng.choice([
            b"NoColon\r\n", b"Host : 127.0.0.1\r\n", b"X: a\x00b\r\n", b"X: a\rb\r\n", b" folded: x\r\n",
            b"X: " + b"a" * 9000 + b"\r\n", b"X: a\r\n" * 200, b"Content-Length: -1\r\n", b"Content-Length: 1x\r\n",
            b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", b"\xff\xfe: x\r\n"]) + b"\r\n"
    if kind == 2:  # chunked bodies that are not
        return (f"POST {ANALYZE}?key={token} HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                ).encode() + rng.choice([b"zz\r\nabc\r\n0\r\n\r\n", b"5\r\nab\r\n0\r\n\r\n", b"-1\r\n\r\n",
                                         b"ffffffffffffffffff\r\n", b"3\r\n{}}\r\n0\r\n\r\n"])
    if kind == 3:  # other methods on the API and elsewhere
        method = rng.choice(["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO"])
        path = rng.choice([ANALYZE, "/v1alpha1/comments:suggestscore", "/status", "/ws", "/nope", "//evil", "*"])
        return f"{method} {path}?key={token} HTTP/1.1\r\n{host}Connection: close\r\n\r\n".encode()
    if kind == 4:  # keys and doors
        key, extra = rng.choice([("", ""), ("wrong", ""), (token, "Origin: https://evil.example\r\n"),
                                 (token, "Host: evil.example\r\n"), (token + "%ff", ""), ("%00", "")])
        body = b'{"comment": {"text": "hi"}, "requestedAttributes": {"TOXICITY": {}}}'
        return (f"POST {ANALYZE}?key={key} HTTP/1.1\r\n{host}{extra}Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n").encode() + body
    if kind == 5:  # a WebSocket handshake gone wrong
        return (f"GET /ws HTTP/1.1\r\n{host}Upgrade: websocket\r\nConnection: Upgrade\r\n"
                + rng.choice(["Sec-WebSocket-Key: short\r\n", "Sec-WebSocket-Version: 99\r\n",
                              f"Sec-WebSocket-Protocol: modlens.token.{token}\r\n"]) + "\r\n").encode()
    body = perspective_body(rng)  # kinds 6-9: hostile bodies, the most common case
    path = rng.choice([ANALYZE, ANALYZE, "/v1alpha1/comments:suggestscore"])
    return (f"POST {path}?key={token} HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


async def send_raw(port: int, data: bytes, tally: Tally) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as err:
        tally.statuses[f"connect failed ({type(err).__name__})"] += 1
        return
    try:
        writer.write(data)
        await writer.drain()
        head = await asyncio.wait_for(reader.readline(), 20)
        parts = head.split()
        # closed without a status line: input that is no request at all (TLS bytes, blank lines)
        tally.statuses[parts[1].decode("ascii", "replace") if len(parts) > 1 else "closed, no answer"] += 1
    except (asyncio.TimeoutError, ConnectionError) as err:
        tally.statuses[f"no answer ({type(err).__name__})"] += 1  # timed out or reset: counted apart
    finally:
        writer.close()


async def http_fuzz(port: int, token: str, count: int, concurrency: int, seed: int, deadline: float,
                    tally: Tally) -> None:
    rng = random.Random(seed)
    requests = [request_bytes(rng, port, token) for _ in range(count)]
    gate = asyncio.Semaphore(concurrency)

    async def one(data: bytes) -> None:
        async with gate:
            if time.monotonic() < deadline:
                await send_raw(port, data, tally)
    await asyncio.gather(*(one(r) for r in requests))


def hostile_frame(rng: random.Random, token: str) -> str | bytes:
    """A text frame's payload: bytes are sent as a TEXT frame as they are (often not UTF-8)."""
    if rng.random() < 0.4:
        return rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b'{"type": "ping", "id": "\xe2\x82"}',
                           bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))])
    return malformed(rng, token)


async def ws_fuzz(port: int, token: str, count: int, sockets: int, seed: int, deadline: float, tally: Tally) -> None:
    async def one(sid: int, n: int) -> None:
        rng = random.Random(seed * 7919 + sid)
        try:
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None, open_timeout=30,
                                          subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
                await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "hostile",
                                          "token": token, "rater_id": f"hostile-{sid}"}))
                for i in range(n):
                    if time.monotonic() > deadline:
                        return
                    frame = hostile_frame(rng, token)
                    await ws.send(frame, text=True)
                    await ws.send(json.dumps({"type": "ping", "id": f"sync-{i}"}))
                    tally.frames_sent += 1
                    while True:  # every answer up to the pong: the socket is still open
                        answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
                        if answer.get("id") == f"sync-{i}":
                            tally.frames_answered += answer.get("type") == "pong"
                            break
        except (websockets.ConnectionClosed, asyncio.TimeoutError, OSError) as err:
            tally.sockets_lost += 1
            tally.lost_reasons.append(f"socket {sid}: {type(err).__name__} {err}")
    per = max(1, count // sockets)
    await asyncio.gather(*(one(sid, per) for sid in range(sockets)))


async def slow_header(port: int, limit_s: float, tally: Tally) -> None:
    """Sends a request head one byte every SLOW_BYTE_EVERY_S; notes when the daemon closes it."""
    head = f"GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'a' * 64}\r\n\r\n".encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        for byte in head:
            if time.monotonic() - started > limit_s:
                break
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1), SLOW_BYTE_EVERY_S) == b"":
                    tally.slow_closed_after.append(time.monotonic() - started)
                    return
            except asyncio.TimeoutError:
                pass
        tally.slow_open_at_end += 1
    except ConnectionError:
        tally.slow_closed_after.append(time.monotonic() - started)
    finally:
        writer.close()


async def run(port: int, token: str, args: argparse.Namespace, tally: Tally) -> None:
    deadline = time.monotonic() + args.seconds
    slow = [asyncio.create_task(slow_header(port, args.slow_limit, tally)) for _ in range(args.slow_sockets)]
    await http_fuzz(port, token, args.requests, args.concurrency, args.seed, deadline, tally)
    await ws_fuzz(port, token, args.frames, args.ws_sockets, args.seed, deadline, tally)
    await asyncio.gather(*slow)


def daemon_counts(port: int, token: str) -> int | None:
    """The daemon's own count of malformed requests (`/status`, which takes the token)."""
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}/status", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(json.loads(resp.read())["malformed_requests"])
    except (OSError, ValueError, KeyError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=8000)
    parser.add_argument("--frames", type=int, default=2500)
    parser.add_argument("--ws-sockets", type=int, default=5)
    parser.add_argument("--slow-sockets", type=int, default=50)
    parser.add_argument("--slow-limit", type=float, default=40.0, help="give up on a slow socket after this")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    args = parser.parse_args(argv)
    from modlens import pairing

    tally = Tally()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="modlens-hostile-") as tmp:
        home = Path(tmp)
        os.environ["MODLENS_HOME"] = str(home)
        token = pairing.ensure(home / "pairing-token")
        proc, info = start_daemon(home)
        try:
            asyncio.run(run(int(info["port"]), token, args, tally))
            counted = daemon_counts(int(info["port"]), token)
            alive = proc.poll() is None
        finally:
            proc.terminate()
            proc.wait(30)
        log = (home / "serve.log").read_text(encoding="utf-8", errors="replace")
    slow = sorted(tally.slow_closed_after)
    result = {
        "requests": sum(tally.statuses.values()), "statuses": dict(sorted(tally.statuses.items())),
        "answers_500": tally.statuses.get("500", 0),
        "no_answer": sum(n for s, n in tally.statuses.items() if s.startswith(("no answer", "connect", "closed"))),
        "frames": tally.frames_sent, "frames_then_pong": tally.frames_answered,
        "sockets_closed_unexpectedly": tally.sockets_lost, "lost": tally.lost_reasons[:5],
        "slow_sockets": args.slow_sockets, "slow_closed": len(slow), "slow_open_at_end": tally.slow_open_at_end,
        "slow_closed_after_s": [round(slow[0], 1), round(slow[-1], 1)] if slow else None,
        "daemon_malformed_count": counted, "tracebacks_in_log": log.count("Traceback"),
        "internal_errors_in_log": log.count("internal error"), "daemon_alive_at_end": alive,
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>28}: {value}")
    bad = result["answers_500"] or result["tracebacks_in_log"] or tally.sockets_lost or not alive
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
