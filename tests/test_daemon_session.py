"""The daemon over a real loopback socket: a full session down to the exported files, every
refusal, reconnects, rate limits and batching across connections."""
from __future__ import annotations

import asyncio
import csv
import json

import pytest

from modlens.studylog.export import export

from daemon_helpers import (EXT_ORIGIN, TOKEN, Client, WordListDetector, comments_msg, connect, consent_sha256,
                            rating_msg, running_daemon, study)
from log_helpers import rows


async def test_full_session_hello_comments_scores_variants_rating_export(tmp_path):
    cfg = study(perturbation={"enabled": True, "budget": 2, "strategies": ["repeat_char", "abbr", "mixed_case"]},
                limits={"max_comment_chars": 100})
    long_text = "you stupid " + "blah " * 40  # 211 chars: cut to 100 and flagged
    async with running_daemon(tmp_path, cfg) as (url, app):
        async with connect(url) as ws:
            assert ws.subprotocol == "modlens.v1"
            c = Client(ws)
            hello = await c.hello(consent_at="2025-01-31T12:00:00Z", consent_sha256=consent_sha256(app), study_id="test")
            assert hello["type"] == "hello_ok" and hello["protocol"] == 1 and hello["variants_enabled"] is True
            assert hello["detectors"] == [{"key": "wordlist", "name": "wordlist", "version": "test-1",
                                           "toxicity_label": "toxic", "threshold": 0.5}]
            assert hello["study"]["study_id"] == "test" and len(hello["study"]["attributes"]) == 4
            # every rater of the study hashes authors with the same persisted salt
            from modlens import pairing
            assert hello["study"]["author_salt"] == pairing.study_salt("test")

            items = [("k1", "you are a stupid idiot"), ("k2", "what a lovely day"), ("k3", long_text),
                     ("k1", "a repeated key is scored once")]
            ok = await c.request(comments_msg("page-1", items), "comments_ok")
            ids = ok.pop("comment_ids")  # what was committed before the answer: one row per distinct key
            assert ok == {"type": "comments_ok", "id": "page-1", "accepted": 3, "truncated": ["k3"]}
            assert sorted(ids) == ["k1", "k2", "k3"] and len(set(ids.values())) == 3

            scored: dict[str, dict] = {}
            while len(scored) < 3:
                m = await c.until(lambda m: m["type"] == "scores")
                assert m["id"] == "page-1"
                for it in m["items"]:
                    assert it["key"] not in scored
                    scored[it["key"]] = it
            s1 = scored["k1"]["detectors"]["wordlist"]
            assert s1["name"] == "wordlist" and s1["version"] == "test-1" and s1["error"] is None
            assert s1["toxicity"] == pytest.approx(0.4) and s1["labels"]["toxic"] == pytest.approx(0.4)
            assert scored["k2"]["detectors"]["wordlist"]["toxicity"] == 0.0
            assert scored["k3"]["truncated"] is True and scored["k1"]["truncated"] is False
            assert {k: it["comment_id"] for k, it in scored.items()} == ids

            variants = {}
            while len(variants) < 3:
                m = await c.until(lambda m: m["type"] == "variants")
                variants[m["key"]] = m
            v1 = variants["k1"]["items"]
            assert 1 <= len(v1) <= 2
            for v in v1:
                assert v["strategy"] in ("repeat_char", "abbr", "mixed_case") and v["params"] and v["variant_id"]
                assert v["text"] != "you are a stupid idiot" and "wordlist" in v["detectors"]

            ack = await c.request(rating_msg("rate-1", "k1", anchors=("more", "less")), "rating_ok")
            assert ack["type"] == "rating_ok" and ack["duplicate"] is False
            assert ack["derived_toxicity"] == "hard to say" and ack["inconsistent"] is False
            bad = await c.request(rating_msg("rate-2", "k2", anchors=("less", "more")), "rating_ok")
            assert bad["inconsistent"] is True and bad["derived_toxicity"] is None

    db = tmp_path / "study.sqlite"
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "SELECT consent_at FROM raters WHERE rater_id = 'rater-1'") == [("2025-01-31T12:00:00Z",)]
    assert rows(db, "SELECT count(*), min(ended_at IS NOT NULL) FROM sessions") == [(1, 1)]
    comments = rows(db, "SELECT comment_key, truncated, original_length, length(t.text) FROM comments "
                        "JOIN texts t USING (text_id) ORDER BY comment_key")
    assert comments == [("k1", 0, 22, 22), ("k2", 0, 17, 17), ("k3", 1, len(long_text), 100)]
    assert rows(db, "SELECT count(*) FROM sightings") == [(3,)]
    n_variants = rows(db, "SELECT count(*) FROM variants")[0][0]
    assert n_variants == sum(len(v["items"]) for v in variants.values())
    # every comment and every variant text has a score from the detector
    assert rows(db, "SELECT count(*) FROM scores")[0][0] == 3 + n_variants
    r = rows(db, "SELECT rating_id, derived_toxicity, inconsistent, time_spent_ms, anchors_json FROM ratings "
                 "WHERE client_rating_id = 'rate-1'")
    assert r[0][:4] == (ack["rating_id"], "hard to say", 0, 4200)
    assert json.loads(r[0][4]) == {"vs_hard": "more", "vs_extreme": "less"}
    assert rows(db, "SELECT count(*) FROM rating_values") == [(8,)]

    out = tmp_path / "export"
    manifest = export(db, out, "csv")
    assert manifest["tables"]["comments"]["rows"] == 3
    with open(out / manifest["tables"]["ratings"]["file"], newline="") as fh:
        exported = list(csv.DictReader(fh))
    assert {row["attribute"] for row in exported} >= {"toxicity", "formality"}
    assert {row["client_rating_id"] for row in exported} == {"rate-1", "rate-2"}
    assert (out / "DATA.md").is_file()


async def _handshake_status(url: str, headers: dict[str, str]) -> int:
    """Raw HTTP upgrade request (so Host and Origin can be anything); returns the status."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = ["GET /ws HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
             *(f"{k}: {v}" for k, v in headers.items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


async def test_every_refusal_is_answered_and_the_daemon_keeps_serving(tmp_path):
    cfg = study(limits={"max_message_bytes": 4096})
    async with running_daemon(tmp_path, cfg) as (url, _):
        good = {"Host": url.split("//")[1].split("/")[0], "Origin": EXT_ORIGIN,
                "Sec-WebSocket-Protocol": f"modlens.v1, modlens.token.{TOKEN}"}
        assert await _handshake_status(url, good) == 101
        no_token = {k: v for k, v in good.items() if k != "Sec-WebSocket-Protocol"}
        assert await _handshake_status(url, no_token) == 401
        assert await _handshake_status(url, {**good, "Sec-WebSocket-Protocol": "modlens.v1, modlens.token.nope"}) == 401
        assert await _handshake_status(url, {**good, "Origin": "https://www.youtube.com"}) == 403
        assert await _handshake_status(url, {**good, "Origin": "null"}) == 403
        assert await _handshake_status(url, {**good, "Host": "rebind.attacker.example:8765"}) == 403
        bearer = {"Host": good["Host"], "Authorization": f"Bearer {TOKEN}"}  # CLI: no Origin, header token
        assert await _handshake_status(url, bearer) == 101

        async with connect(url) as ws:
            c = Client(ws)
            before = await c.request({"type": "ping", "id": "p0"})
            assert (before["type"], before["code"]) == ("error", "hello_required")
            wrong = await c.request({"type": "hello", "id": "h0", "protocol": 1, "client": "t", "token": "nope",
                                     "rater_id": "r"})
            assert wrong["code"] == "bad_token"
            assert (await c.hello())["type"] == "hello_ok"

            huge = json.dumps(comments_msg("big-1", [("k", "x" * 5000)]))
            await c.send(huge)
            err = await c.until(lambda m: m.get("id") == "big-1")
            assert err["code"] == "too_large" and "4096" in err["message"]

            await c.send("{this is not json")
            assert (await c.until(lambda m: m["type"] == "error"))["code"] == "bad_json"
            assert (await c.request({"type": "dance", "id": "u1"}))["code"] == "unknown_type"
            bad = await c.request({"type": "comments", "id": "f1", "page": {"url": "u", "platform": "yt", "page_key": "p"},
                                   "items": [{"key": "k", "text": ""}]})
            assert bad["code"] == "invalid_fields" and "items.0.text" in bad["message"]
            unknown = await c.request(rating_msg("r-x", "never-sent"))
            assert unknown["code"] == "unknown_comment"
            await c.request(comments_msg("c1", [("k1", "hello there")]), "comments_ok")
            level = await c.request(rating_msg("r-y", "k1", anchors=None, toxicity="very toxic"))
            assert level["code"] == "invalid_fields" and "values.toxicity" in level["message"]
            attr = await c.request(rating_msg("r-z", "k1", anchors=None, politeness="high"))
            assert attr["code"] == "invalid_fields" and "politeness" in attr["message"]

            pong = await c.request({"type": "ping", "id": "p1"}, "pong")
            assert pong["type"] == "pong" and pong["server_time"]
            assert not ws.close_code  # every refusal above left the socket open
        async with connect(url) as ws:  # and the daemon still accepts new sessions
            assert (await Client(ws).hello())["type"] == "hello_ok"


async def test_reconnect_and_resend_creates_no_duplicates(tmp_path):
    items = [("k1", "you idiot"), ("k2", "fine"), ("k3", "stupid take")]
    acks = {}
    async with running_daemon(tmp_path) as (url, _):
        for attempt in range(2):
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello()
                await c.request(comments_msg("page-1", items), "comments_ok")
                for rid, key in (("r1", "k1"), ("r2", "k3")):
                    ack = await c.request(rating_msg(rid, key), "rating_ok")
                    assert ack["duplicate"] is (attempt == 1)
                    assert acks.setdefault(rid, ack["rating_id"]) == ack["rating_id"]
                await c.until(lambda m: m["type"] == "scores")
                if attempt == 0:
                    ws.transport.abort()  # drop the connection without a close frame
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT count(*) FROM comments") == [(3,)]
    assert rows(db, "SELECT count(*) FROM ratings") == [(2,)]
    assert rows(db, "SELECT count(*) FROM rating_values") == [(8,)]
    assert rows(db, "SELECT count(*) FROM sessions") == [(2,)]
    assert rows(db, "SELECT count(*) FROM sightings") == [(6,)]  # one per comment per session
    assert rows(db, "SELECT count(*) FROM scores") == [(3,)]
    assert rows(db, "SELECT count(*) FROM texts") == [(3,)]


async def test_rate_limit_answers_retry_after_and_recovers(tmp_path):
    cfg = study(limits={"messages_per_second": 5, "burst": 3})
    async with running_daemon(tmp_path, cfg) as (url, _):
        async with connect(url) as ws:
            c = Client(ws)
            await asyncio.sleep(0.7)  # refill after the hello
            await c.hello()
            for i in range(6):
                await c.send({"type": "ping", "id": f"p{i}"})
            answers = [await c.until(lambda m, i=i: m["id"] == f"p{i}") for i in range(6)]
            limited = [a for a in answers if a["type"] == "error"]
            assert limited and all(a["code"] == "rate_limited" and a["retry_after_ms"] > 0 for a in limited)
            assert sum(a["type"] == "pong" for a in answers) >= 2
            await asyncio.sleep(max(a["retry_after_ms"] for a in limited) / 1000 + 0.05)
            assert (await c.request({"type": "ping", "id": "again"}))["type"] == "pong"


async def test_one_batcher_serves_all_connections(tmp_path):
    det = WordListDetector(delay_s=0.05)  # a slow model call lets requests pile up
    async with running_daemon(tmp_path, detectors={"wordlist": det}) as (url, _):
        async def client(n: int) -> int:
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello(rater=f"r{n}")
                page = [(f"c{n}-{i}", f"comment {i} from client {n}") for i in range(20)]
                await c.request(comments_msg(f"p{n}", page, page_key=f"page-{n}"), "comments_ok")
                m = await c.until(lambda m: m["type"] == "scores")
                return len(m["items"])

        assert await asyncio.gather(*(client(n) for n in range(4))) == [20] * 4
    assert sum(det.calls) == 80
    assert len(det.calls) < 10 and max(det.calls) > 20  # pages of different clients shared model calls


async def test_broken_normalizer_and_generator_do_not_hold_back_scores(tmp_path, monkeypatch):
    cfg = study(normalizer={"enabled": True}, perturbation={"enabled": True, "budget": 1})
    async with running_daemon(tmp_path, cfg) as (url, app):
        from modlens.daemon.app import ENGINE
        engine = app[ENGINE]

        class Broken:
            def normalize(self, text):
                raise ValueError("normalizer exploded")

        def broken_generate(text, importance=None):
            raise RuntimeError("generator exploded")

        engine.normalizer = Broken()
        monkeypatch.setattr(engine.generator, "generate", broken_generate)
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("c1", [("k1", "stupid idiot")]), "comments_ok")
            scores = await c.until(lambda m: m["type"] == "scores")
            item = scores["items"][0]
            assert item["detectors"]["wordlist"]["toxicity"] == 1.0
            assert item["normalized"] is None and "normalizer exploded" in item["error"]
            variants = await c.until(lambda m: m["type"] == "variants")
            assert variants["items"] == [] and "generator exploded" in variants["error"]
    assert rows(tmp_path / "study.sqlite", "SELECT count(*) FROM scores") == [(1,)]
    # the one error policy: each failing step is recorded for its text (step_errors), as in an audit
    assert rows(tmp_path / "study.sqlite", "SELECT t.text, e.step, e.message FROM step_errors e "
                "JOIN texts t USING (text_id) ORDER BY e.step") == [
        ("stupid idiot", "normalize", "ValueError: normalizer exploded"),
        ("stupid idiot", "variants", "RuntimeError: generator exploded")]
