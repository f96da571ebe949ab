"""Crash safety: the real `modlens serve`, fed ratings by a client, killed with SIGKILL mid-
stream again and again. After every kill the study log passes `PRAGMA integrity_check` and
holds every rating the daemon acknowledged."""
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
