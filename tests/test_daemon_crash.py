"""Crash safety: the real `modlens serve`, fed by clients, killed with SIGKILL mid-stream again
and again. After every kill the study log passes `PRAGMA integrity_check` and holds every
comment, rating and image the daemon acknowledged, each once (docs/DATA.md, "Acknowledged means
written")."""
from __future__ import annotations

import asyncio
import json
import random
import signal
import sqlite3

import pytest

from modlens import pairing

from daemon_helpers import serve_process, write_study

CYCLES = 10


async def _stream_ratings(url: str, token: str, cycle: int, kill_after: int, proc) -> set[str]:
    """Send comments, then ratings as fast as acks allow; SIGKILL the daemon after
    `kill_after` acks while more ratings are in flight. Returns the acknowledged ids."""
    import websockets

    acked: set[str] = set()
    async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
        await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "crash-test",
                                  "token": token, "rater_id": "crash-rater"}))
        assert json.loads(await ws.recv())["type"] == "hello_ok"
        keys = [f"c{cycle}-{i}" for i in range(5)]
        await ws.send(json.dumps({"type": "comments", "id": f"page{cycle}", "variants": False,
                                  "page": {"url": "u", "platform": "crash", "page_key": f"p{cycle}"},
                                  "items": [{"key": k, "text": f"comment {k}"} for k in keys]}))

        async def sender():
            for n in range(10_000):
                await ws.send(json.dumps({"type": "rating", "id": f"r{cycle}-{n}",
                                          "comment": {"platform": "crash", "key": keys[n % 5]},
                                          "values": {"toxicity": "toxic"}, "anchors": None}))
                await asyncio.sleep(0.002)

        send_task = asyncio.create_task(sender())
        try:
            async for raw in ws:
                msg = json.loads(raw)
                if msg["type"] == "rating_ok":
                    acked.add(msg["id"])
                    if len(acked) == kill_after:
                        proc.send_signal(signal.SIGKILL)  # mid-stream: more ratings are queued behind
                elif msg["type"] == "error":
                    raise AssertionError(msg)
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            send_task.cancel()
            await asyncio.gather(send_task, return_exceptions=True)
    return acked


@pytest.mark.slow
def test_kill_9_mid_stream_loses_no_acknowledged_rating(modlens_home, tmp_path):
    study = write_study(tmp_path / "study.toml", [], messages_per_second=5000, burst=5000)
    db = tmp_path / "log.sqlite"
    token = pairing.ensure()
    rng = random.Random(7)
    all_acked: set[str] = set()
    for cycle in range(CYCLES):
        proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
        try:
            acked = asyncio.run(asyncio.wait_for(
                _stream_ratings(info["url"], token, cycle, rng.randint(3, 40), proc), 60))
        finally:
            proc.kill()
            proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        all_acked |= acked
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            stored = {r[0] for r in conn.execute("SELECT client_rating_id FROM ratings")}
            n_values = conn.execute("SELECT count(*) FROM rating_values").fetchone()[0]
        assert acked, f"cycle {cycle}: no rating was acknowledged before the kill"
        missing = all_acked - stored
        assert not missing, f"cycle {cycle}: acknowledged ratings lost: {sorted(missing)[:5]}"
        assert n_values == len(stored)  # no rating without its values (transactions are atomic)
    assert len(all_acked) >= CYCLES * 3


# --- every acknowledgement under kill -9 --------------------------------------------------------
# The smaller, bounded version of the field probe's twenty kill -9 rounds under four streaming
# sockets: each socket streams pages, then a rating and an image of each comment acknowledged, and
# replays what was not acknowledged after each restart (with the same ids, as the extension's
# outbox does). Whatever the daemon acknowledged must be in the log after the kill, exactly once.
ACK_ROUNDS = 4
ACK_SOCKETS = 4
PLATFORM = "crash"
ACK_TYPES = ("comments_ok", "rating_ok", "comment_media_ok")


def _tiny_png() -> tuple[bytes, str, str]:
    import base64
    import hashlib
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buf, format="PNG")
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest(), base64.b64encode(data).decode()


class Ledger:
    """What the client was told (acknowledged) and what it still holds (its outbox)."""

    def __init__(self) -> None:
        self.comments: set[str] = set()        # comment keys acknowledged by comments_ok
        self.ratings: set[str] = set()         # rating ids acknowledged by rating_ok
        self.media: set[str] = set()           # comment keys whose image comment_media_ok acknowledged
        self.outbox: dict[str, dict] = {}      # id -> message, until acknowledged
        self.stored_ids: dict[str, int] = {}   # comment key -> the comment_id an answer named
        self.refusals: list[dict] = []         # errors other than rate_limited / unavailable
        self.acks = 0


async def _ack_socket(url: str, token: str, ledger: Ledger, sock: int, rnd: int, kill_at: int, proc,
                      png: tuple[bytes, str, str]) -> None:
    import websockets

    _data, sha, b64 = png
    seq = 0
    async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"], max_size=None) as ws:
        await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "crash-test",
                                  "token": token, "rater_id": f"rater-{sock}"}))
        assert json.loads(await ws.recv())["type"] == "hello_ok"

        async def send(msg: dict) -> None:
            ledger.outbox.setdefault(msg["id"], msg)
            await ws.send(json.dumps(msg))

        async def sender() -> None:
            nonlocal seq
            # the outbox first, in the order it was written (pages before their ratings and images)
            for mid, msg in list(ledger.outbox.items()):
                if mid.startswith(f"s{sock}-"):
                    await ws.send(json.dumps(msg))
            while True:
                seq += 1
                keys = [f"s{sock}-r{rnd}-p{seq}-{i}" for i in range(3)]
                await send({"type": "comments", "id": f"s{sock}-r{rnd}-p{seq}", "variants": False,
                            "page": {"url": "https://example.org/x", "platform": PLATFORM,
                                     "page_key": f"s{sock}-r{rnd}-p{seq}"},
                            "items": [{"key": k, "text": f"comment {k}"} for k in keys]})
                await asyncio.sleep(0.004)

        async def follow_up(keys: list[str]) -> None:
            for k in keys:  # what a participant does next: rate the comment, its image follows
                await send({"type": "rating", "id": f"rate-{k}", "comment": {"platform": PLATFORM, "key": k},
                            "values": {"toxicity": "toxic"}, "anchors": None})
                await send({"type": "comment_media", "id": f"img-{k}", "platform": PLATFORM, "comment_key": k,
                            "items": [{"mime": "image/png", "sha256": sha, "data_b64": b64, "position": 0}]})

        send_task = asyncio.create_task(sender())
        try:
            async for raw in ws:
                msg = json.loads(raw)
                kind, mid = msg["type"], msg.get("id")
                if kind in ACK_TYPES:
                    sent = ledger.outbox.pop(mid, None)
                    if sent is None:
                        continue  # an answer to a replay acknowledged before
                    ledger.acks += 1
                    if kind == "comments_ok":
                        keys = [it["key"] for it in sent["items"]]
                        ledger.comments.update(keys)
                        ledger.stored_ids.update(msg.get("comment_ids") or {})
                        await follow_up(keys[:1])
                    elif kind == "rating_ok":
                        ledger.ratings.add(mid)
                    else:
                        ledger.media.add(sent["comment_key"])
                    if ledger.acks == kill_at:
                        proc.send_signal(signal.SIGKILL)  # between receipt and commit of what follows
                elif kind == "error" and msg["code"] not in ("rate_limited", "unavailable"):
                    ledger.refusals.append(msg)
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            send_task.cancel()
            await asyncio.gather(send_task, return_exceptions=True)


async def _ack_round(url: str, token: str, ledger: Ledger, rnd: int, kill_at: int, proc, png) -> None:
    await asyncio.gather(*(_ack_socket(url, token, ledger, s, rnd, kill_at, proc, png) for s in range(ACK_SOCKETS)))


def _media_study(path):
    path.write_text('study_id = "crash-acks"\ndetectors = []\n[normalizer]\nenabled = false\n'
                    "[perturbation]\nenabled = false\n[limits]\nmessages_per_second = 5000\nburst = 5000\n"
                    "[media]\ncollect = true\n")
    return path


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_comment_rating_or_image(modlens_home, tmp_path):
    """kill -9 under four streaming sockets, a few rounds: every comment, rating and image the
    daemon acknowledged is in the log after the kill, none twice, none refused when resent."""
    pytest.importorskip("PIL")
    study = _media_study(tmp_path / "study.toml")
    db = tmp_path / "log.sqlite"
    token = pairing.ensure()
    rng = random.Random(11)
    png = _tiny_png()
    ledger = Ledger()
    for rnd in range(ACK_ROUNDS):
        proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
        kill_at = ledger.acks + rng.randint(40, 160)
        try:
            asyncio.run(asyncio.wait_for(_ack_round(info["url"], token, ledger, rnd, kill_at, proc, png), 60))
        finally:
            proc.kill()
            proc.wait(10)
        assert proc.returncode == -signal.SIGKILL, f"round {rnd}: the daemon was not killed mid-stream"
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            comments = dict(conn.execute("SELECT comment_key, count(*) FROM comments WHERE platform = ? "
                                         "GROUP BY comment_key", (PLATFORM,)).fetchall())
            ids = dict(conn.execute("SELECT comment_key, comment_id FROM comments WHERE platform = ?",
                                    (PLATFORM,)).fetchall())
            ratings = dict(conn.execute("SELECT client_rating_id, count(*) FROM ratings GROUP BY rater_id, "
                                        "client_rating_id").fetchall())
            media = dict(conn.execute(
                "SELECT c.comment_key, count(*) FROM comment_media cm JOIN comments c USING (comment_id) "
                "GROUP BY c.comment_key").fetchall())
        lost = {"comments": sorted(ledger.comments - comments.keys()),
                "ratings": sorted(ledger.ratings - ratings.keys()),
                "images": sorted(ledger.media - media.keys())}
        assert not any(lost.values()), (
            f"round {rnd}: acknowledged but not in the log: " + ", ".join(
                f"{len(v)} {k} (e.g. {v[:3]})" for k, v in lost.items() if v))
        assert all(n == 1 for n in (*comments.values(), *ratings.values(), *media.values())), \
            f"round {rnd}: a row stored twice"
        assert all(ids[k] == cid for k, cid in ledger.stored_ids.items()), "comments_ok named other comment_ids"
        assert not ledger.refusals, f"round {rnd}: refused: {ledger.refusals[:3]}"
    assert ledger.comments and ledger.ratings and ledger.media, "nothing of some kind was acknowledged"
