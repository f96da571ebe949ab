"""Protocol fuzz bench: a real `modlens serve` fed fuzzed frames, malformed and valid interleaved.

    python bench/bench_fuzz.py [--messages 6000] [--sockets 300] [--concurrency 4] [--seconds 180]

Starts `python -m modlens serve --port 0` on 127.0.0.1 (its own MODLENS_HOME in a temporary
folder, a study without detectors, rate limits raised so the fuzz is not merely rate-limited),
then opens --sockets connections, --concurrency at a time. Each socket says hello (every tenth
does not, and is fuzzed before hello), then sends malformed frames (broken or deep JSON, wrong
types, lone surrogates, binary frames, unknown types, missing fields, an oversized frame now and
then: past the daemon's hard frame limit, which it must close with 1009) each followed by a valid
message (a ping; every 10th also a comments message and a rating of it) whose answer is checked.
Bounded by --messages and --seconds; loopback only.

Prints: messages sent (malformed / valid), answers to malformed frames (each must be one error,
none `internal`), valid messages answered correctly, sockets dropped (the goal is 0 besides the
documented 1009 for frames past the hard limit: the largest of 4 x max_message_bytes and the
allowances for a media frame and a study pack) and the daemon's RSS after a warm-up and
at the end (the goal: flat within 5%).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import websockets

from modlens.runtime import start_serve

MAX_MESSAGE_BYTES = 65_536  # the study's limit; frames past the hard limit (`hard_limit`) close the socket with 1009


@dataclass
class Tally:
    sent_malformed: int = 0
    sent_valid: int = 0
    answers_to_malformed: int = 0
    non_error_answers_to_malformed: int = 0
    malformed_unanswered: int = 0
    malformed_answered_more: int = 0  # frames answered more than once
    oversize_answered: int = 0     # frames past the hard limit answered instead of closed with 1009
    internal_errors: int = 0
    valid_answered: int = 0
    valid_wrong: list[str] = field(default_factory=list)
    dropped: int = 0               # sockets closed by the daemon other than by 1009
    closed_1009: int = 0
    drop_reasons: list[str] = field(default_factory=list)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start_daemon(home: Path) -> tuple[subprocess.Popen, dict]:
    study = home / "study.toml"
    study.write_text('study_id = "fuzz"\ndetectors = []\n[normalizer]\nenabled = false\n[perturbation]\n'
                     f'enabled = false\n[limits]\nmax_message_bytes = {MAX_MESSAGE_BYTES}\n'
                     'messages_per_second = 100000\nburst = 100000\n')
    try:
        return start_serve(home, "--host", "127.0.0.1", "--config", str(study), "--db", str(home / "fuzz.sqlite"),
                           "--log-level", "WARNING")
    except RuntimeError as err:
        raise SystemExit(str(err)) from None


def hard_limit(study_path: Path) -> int:
    """The largest hard frame limit `modlens serve` may give its transport for this study (daemon/app.py:
    4 x max_message_bytes, or the room for a media frame or for a study pack to join when larger); past
    it the socket must be closed with 1009, not answered `too_large`. A frame under the daemon's actual
    limit only gets `too_large`, as the bench's 4 x max_message_bytes + 10 did once the pack allowance came
    (it then swallowed that answer and counted the next frame unanswered)."""
    import modlens.study
    from modlens.daemon.app import HARD_FRAME_FACTOR
    from modlens.live.join import JOIN_FRAME_BYTES
    from modlens.services.comment_media import media_frame_bytes

    study = modlens.study.load(study_path)
    return max(study.limits.max_message_bytes * HARD_FRAME_FACTOR, media_frame_bytes(study), JOIN_FRAME_BYTES)


def malformed(rng: random.Random, token: str) -> str | bytes:
    """One frame the protocol must refuse with exactly one error."""
    templates = [
        {"type": "hello", "id": "fz", "protocol": 1, "client": "fuzz", "token": token, "rater_id": "r"},
        {"type": "ping", "id": "fz"},
        {"type": "rating", "id": "fz", "comment": {"platform": "fuzz", "key": "k"}, "values": {"a": "b"}},
        {"type": "comments", "id": "fz", "page": {"url": "u", "platform": "fuzz", "page_key": "p"},
         "items": [{"key": "k", "text": "t"}]},
    ]
    msg = json.loads(json.dumps(rng.choice(templates)))
    kind = rng.randrange(12)
    if kind == 0:  # truncated JSON
        text = json.dumps(msg)
        return text[:rng.randrange(1, len(text))]
    if kind == 1:  # a field of the wrong type or value (every one invalid for every field here)
        name = rng.choice([k for k in msg if k not in ("type", "id")] or ["id"])
        msg[name] = rng.choice([True, False, None, 1.5, -1, [], "", "x" * 5000, [[[]]], "\ud800"])
    elif kind == 2:  # a bad id
        msg["id"] = rng.choice([None, 5, True, "", "x" * 200, "\udc00x", ["a"], {"a": 1}])
    elif kind == 3:  # deep nesting (the reported 980 levels among others)
        depth = rng.choice([33, 100, 980, 5000, rng.randrange(33, 20_000)])
        return '{"type":"ping","id":"x","a":' + "[" * depth + "]" * depth + "}"
    elif kind == 4:  # binary frames
        return rng.choice([json.dumps({"type": "ping", "id": "bin"}).encode(),
                           bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))])
    elif kind == 5:
        msg["type"] = rng.choice(["", "HELLO", "ping ", None, 3, "hello_ok", "error", "\ud800"])
    elif kind == 6:
        return rng.choice(["", " ", "null", "[]", "1", '"s"', "{}", "[" * 30_000, "{" * 30_000,
                           '"' + "\\" * 999, "\ufeff{}", '{"id": "a", "id": 1}'])
    elif kind == 7:
        return json.dumps(msg).replace('"', "'")
    elif kind == 8:
        msg.pop(rng.choice(list(msg)))
    elif kind == 9:  # lone surrogates in text fields
        if msg["type"] == "comments":
            msg["items"][0]["text"] = "broken \ud800 text"
        else:
            msg["id"] = "\ud83d"
    elif kind == 10:  # past max_message_bytes: too_large, the socket stays
        msg["pad"] = "x" * (MAX_MESSAGE_BYTES + rng.randrange(1, 1000))
    else:  # random bytes as text
        return "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(1, 300)))
    return json.dumps(msg)


async def fuzz_socket(url: str, token: str, sid: int, n: int, rng: random.Random, tally: Tally, deadline: float,
                      oversize_every: int, oversize_bytes: int) -> None:
    say_hello = sid % 10 != 0
    try:
        async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"],
                                      max_size=None, open_timeout=30) as ws:
            others: list[dict] = []  # answers read while waiting for another one

            async def until(mid: str, types: tuple[str, ...] = ()) -> dict:
                while True:
                    answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    if answer.get("id") == mid and (not types or answer["type"] in types):
                        return answer
                    others.append(answer)

            if say_hello:
                await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "fuzz",
                                          "token": token, "rater_id": f"fuzz-{sid}"}))
                answer = await until("h")
                if answer["type"] != "hello_ok":
                    tally.valid_wrong.append(f"hello: {answer}")
            for i in range(n):
                if time.monotonic() > deadline:
                    return
                oversized = oversize_every and (sid * n + i) % oversize_every == oversize_every - 1
                frame = "x" * oversize_bytes if oversized else malformed(rng, token)
                tally.sent_malformed += 1
                if not oversized:
                    await ws.send(frame)
                else:
                    try:  # the daemon may close before the whole frame is sent: the send sees the 1009 then
                        await ws.send(frame)
                        answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    except websockets.ConnectionClosed as closed:
                        if closed.rcvd is not None and closed.rcvd.code == 1009:
                            tally.closed_1009 += 1
                            return
                        raise
                    # answered, not closed: the frame's one answer (the ping below must not count it missing)
                    tally.oversize_answered += 1
                    tally.answers_to_malformed += 1
                    tally.non_error_answers_to_malformed += answer.get("type") != "error"
                    tally.internal_errors += answer.get("code") == "internal"
                sync = f"sync-{sid}-{i}"
                await ws.send(json.dumps({"type": "ping", "id": sync}))
                tally.sent_valid += 1
                others.clear()
                expected = "pong" if say_hello else "error"
                answer = await until(sync)
                # a late `scores` of the valid comments below is not an answer to the malformed frame
                others[:] = [a for a in others if not str(a.get("id")).startswith(("c-k-", "r-k-"))]
                if answer["type"] == expected:
                    tally.valid_answered += 1
                else:
                    tally.valid_wrong.append(f"ping: {answer}")
                tally.answers_to_malformed += len(others)
                tally.malformed_unanswered += len(others) == 0
                tally.malformed_answered_more += len(others) > 1
                for a in others:
                    tally.non_error_answers_to_malformed += a.get("type") != "error"
                    tally.internal_errors += a.get("code") == "internal"
                if say_hello and i % 10 == 9:  # valid work that reaches the study log
                    key = f"k-{sid}-{i}"
                    await ws.send(json.dumps({"type": "comments", "id": f"c-{key}", "variants": False,
                                              "page": {"url": "https://fuzz.invalid/", "platform": "fuzz",
                                                       "page_key": f"p-{sid}"},
                                              "items": [{"key": key, "text": f"fuzz comment {key}"}]}))
                    await ws.send(json.dumps({"type": "rating", "id": f"r-{key}",
                                              "comment": {"platform": "fuzz", "key": key},
                                              "values": {"toxicity": "toxic"}, "time_spent_ms": 1000}))
                    tally.sent_valid += 2
                    ok = await until(f"c-{key}", ("comments_ok", "error"))
                    rated = await until(f"r-{key}")
                    for got, want in ((ok, "comments_ok"), (rated, "rating_ok")):
                        if got["type"] == want:
                            tally.valid_answered += 1
                        else:
                            tally.valid_wrong.append(f"{want}: {got}")
    except websockets.ConnectionClosed as closed:
        tally.dropped += 1
        tally.drop_reasons.append(f"socket {sid}: {closed}")
    except (asyncio.TimeoutError, OSError) as err:
        tally.dropped += 1
        tally.drop_reasons.append(f"socket {sid}: {type(err).__name__} {err}")


async def run_phase(url: str, token: str, sockets: int, per_socket: int, concurrency: int, seed: int,
                    deadline: float, oversize_every: int, tally: Tally, first_sid: int = 0,
                    oversize_bytes: int = 0) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(sid: int) -> None:
        async with gate:
            await fuzz_socket(url, token, sid, per_socket, random.Random(seed * 100_003 + sid), tally, deadline,
                              oversize_every, oversize_bytes)

    await asyncio.gather(*(one(first_sid + s) for s in range(sockets)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=6000, help="malformed frames in the measured phase")
    ap.add_argument("--sockets", type=int, default=300, help="connections in the measured phase")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=180.0, help="stop sending after this long")
    ap.add_argument("--oversize-every", type=int, default=1000,
                    help="every Nth frame is past 4 x max_message_bytes (closed with 1009); 0: never")
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="modlens-fuzz-") as tmp:
        home = Path(tmp)
        os.environ["MODLENS_HOME"] = str(home)
        from modlens import pairing

        token = pairing.ensure(home / "pairing-token")
        proc, info = start_daemon(home)
        oversize_bytes = hard_limit(home / "study.toml") + 10
        try:
            url = info["url"]
            deadline = time.monotonic() + args.seconds
            warm = Tally()  # the same work on fewer sockets, so caches and pools are warm before measuring
            warm_sockets = max(1, args.sockets // 5)
            asyncio.run(run_phase(url, token, warm_sockets, max(1, args.messages // 5 // warm_sockets),
                                  args.concurrency, args.seed + 1, deadline, 0, warm, first_sid=100_000))
            time.sleep(1.0)
            rss_before = rss_kib(proc.pid)
            tally = Tally()
            t0 = time.monotonic()
            asyncio.run(run_phase(url, token, args.sockets, max(1, args.messages // args.sockets),
                                  args.concurrency, args.seed, deadline, args.oversize_every, tally,
                                  oversize_bytes=oversize_bytes))
            wall = time.monotonic() - t0
            time.sleep(1.0)
            rss_after = rss_kib(proc.pid)
            alive = proc.poll() is None
        finally:
            proc.terminate()
            proc.wait(30)
        log = (home / "serve.log").read_text(errors="replace")

    growth = (rss_after - rss_before) / rss_before * 100
    print(f"fuzz bench: real `modlens serve` on loopback, seed {args.seed}, {args.sockets} sockets "
          f"({args.concurrency} at a time), {wall:.1f} s, load {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  messages sent            {tally.sent_malformed + tally.sent_valid} "
          f"({tally.sent_malformed} malformed, {tally.sent_valid} valid interleaved)")
    print(f"  answers to malformed     {tally.answers_to_malformed} "
          f"(non-error {tally.non_error_answers_to_malformed}, internal {tally.internal_errors}, "
          f"unanswered {tally.malformed_unanswered}, answered more than once {tally.malformed_answered_more})")
    print(f"  valid answered correctly {tally.valid_answered} of {tally.sent_valid}")
    print(f"  sockets dropped          {tally.dropped} (goal 0), plus {tally.closed_1009} closed with the "
          f"documented 1009 for frames of {oversize_bytes:,} bytes (past the hard limit), "
          f"{tally.oversize_answered} such frames answered instead")
    print(f"  daemon RSS               {rss_before / 1024:.1f} MiB after warm-up -> {rss_after / 1024:.1f} MiB "
          f"at the end ({growth:+.1f}%, goal within 5%)")
    print(f"  daemon alive at the end  {alive}; tracebacks in its log: {log.count('Traceback')}")
    for reason in (tally.drop_reasons + tally.valid_wrong)[:5]:
        print(f"    {reason[:200]}")
    # each malformed frame answered by exactly one error (a frame closed with 1009 by the close)
    ok = (tally.dropped == 0 and tally.internal_errors == 0 and tally.non_error_answers_to_malformed == 0
          and tally.malformed_unanswered == 0 and tally.malformed_answered_more == 0 and tally.oversize_answered == 0
          and not tally.valid_wrong and abs(growth) <= 5 and alive)
    print("  verdict                  " + ("ok" if ok else "GOALS NOT MET"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
