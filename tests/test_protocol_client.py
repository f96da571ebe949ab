"""`modlens.protocol.client`, the Python client `modlens feed`, the benchmarks and the tests share:
pages and ratings against the real daemon application, and the example its docstring (and
docs/PROTOCOL.md) shows, run as written."""
from __future__ import annotations

import pytest

from modlens.protocol import RatingOk
from modlens.protocol.client import ClientError, make_pages, session
from modlens.protocol.doc import client_example

from daemon_helpers import TOKEN, rating_msg, running_daemon


async def test_pages_and_ratings_with_acks(tmp_path):
    async with running_daemon(tmp_path) as (url, _app):
        async with session(url, TOKEN, rater="rater-1") as client:
            assert client.hello is not None and client.hello.session_id
            page = make_pages([("c1", "you stupid idiot"), ("c2", "have a nice day")], 20, "youtube",
                              "https://www.youtube.com/watch?v=v", "v")[0]
            result = await client.send_page(page, variants=False)
            assert [item.scores.key for item in result.items] == ["c1", "c2"]
            assert result.items[0].scores.detectors["wordlist"].toxicity > 0.5

            ack = await client.rate(rating_msg("r1", "c1"))
            assert isinstance(ack, RatingOk) and ack.id == "r1" and not ack.duplicate
            again = await client.rate(rating_msg("r1", "c1"))
            assert again.duplicate and again.rating_id == ack.rating_id

            with pytest.raises(ClientError) as info:
                await client.rate(rating_msg("r2", "never-sent"))
            assert info.value.reason == "failed" and "rating r2" in info.value.message


async def test_a_rating_the_protocol_refuses_is_not_sent(tmp_path):
    async with running_daemon(tmp_path) as (url, _app):
        async with session(url, TOKEN, rater="rater-1") as client:
            with pytest.raises(ClientError) as info:
                await client.rate({"id": "r1", "comment": {"platform": "youtube", "key": "c1"}, "values": {},
                                   "time_spent_ms": -1})
            assert info.value.reason == "invalid" and "time_spent_ms" in info.value.message


async def test_the_documented_example_runs(tmp_path, monkeypatch, capsys):
    from modlens import pairing, runtime

    code = client_example()
    assert "async def main" in code and "client.rate(" in code
    async with running_daemon(tmp_path) as (url, _app):
        monkeypatch.setattr(runtime, "daemon_url", lambda: url)
        read = pairing.read
        monkeypatch.setattr(pairing, "read", lambda *path: read(*path) if path else TOKEN)  # the study salt is read too
        namespace: dict = {}
        # the example ends with asyncio.run(main()); this test already runs in a loop
        exec(code.replace("asyncio.run(main())", ""), namespace)
        await namespace["main"]()
    out = capsys.readouterr().out.splitlines()
    assert "wordlist" in out[0] and out[1].endswith("False")
