"""`hello_ok.variants_enabled` and docs/PROTOCOL.md promise exactly one `variants` message per accepted
item of a comments message sent with `variants: true`. A blank comment (whitespace or zero-width
characters only: logged, never scored, `not_scored` in its scores) got none, so a client that counts
on the promise, `modlens feed` (the protocol client's `send_page`), waited for it until its timeout and
failed the page. Its `variants` message now comes, empty, saying why none were made."""
from __future__ import annotations

import asyncio

from daemon_helpers import TOKEN, running_daemon, study
from modlens.datasets.base import WHITESPACE
from modlens.protocol.client import make_pages, session

VARIANTS = {"enabled": True, "live_rate": 1000, "budget": 1, "strategies": ["repeat_char"]}


async def test_a_blank_comment_gets_its_one_variants_message(tmp_path):
    async with running_daemon(tmp_path, study(perturbation=VARIANTS)) as (url, _app):
        async with session(url, TOKEN, rater="r") as client:
            assert client.hello is not None and client.hello.variants_enabled
            rows = [("a", "you stupid idiot"), ("z", "\u200b"), ("w", " \t\n")]
            page = make_pages(rows, 20, "news", "https://example.org/a", "a")[0]
            result = await asyncio.wait_for(client.send_page(page, variants=True, timeout=10), 30)
    by_key = {c.scores.key: c for c in result.items}
    assert by_key["a"].scores.not_scored is None and by_key["a"].variants is not None
    assert by_key["a"].variants.items and by_key["a"].variants.error is None
    for key in ("z", "w"):
        got = by_key[key]
        assert got.scores.not_scored == WHITESPACE and got.scores.detectors == {}
        assert got.variants is not None and got.variants.items == []
        assert got.variants.error is not None and got.variants.error.startswith("not made: ")
        assert WHITESPACE in got.variants.error
