"""The batchers' window adapts to the load for Perspective API requests (`alone`): a request that
is the only one in flight goes to the model at once, instead of waiting the window for company
that cannot come; concurrent requests still share one model call; a page's call (not `alone`,
its normalized texts may join) keeps the window. The speed itself is measured by
bench/bench_perspective_window.py."""
from __future__ import annotations

import asyncio
import time

from modlens.batcher import DynamicBatcher

WINDOW_MS = 300.0  # long, so that waiting or not is plain even on a loaded machine


def _batcher() -> tuple[DynamicBatcher[str], list[int]]:
    calls: list[int] = []

    async def fn(texts):
        calls.append(len(texts))
        return [t.upper() for t in texts]
    return DynamicBatcher(fn, max_batch=32, max_delay_ms=WINDOW_MS), calls


async def test_a_lone_request_does_not_wait_for_the_window():
    b, calls = _batcher()
    try:
        t0 = time.perf_counter()
        assert await b.submit_many(["a", "b"], alone=True) == ["A", "B"]
        assert (time.perf_counter() - t0) * 1000 < WINDOW_MS / 2
        t0 = time.perf_counter()
        assert await b.submit_many(["c"]) == ["C"]  # not alone: the window is kept
        assert (time.perf_counter() - t0) * 1000 >= WINDOW_MS * 0.9
        assert calls == [2, 1]
    finally:
        await b.close()


async def test_concurrent_requests_still_share_a_call():
    b, calls = _batcher()
    try:
        got = await asyncio.gather(*(b.submit_many([f"t{i}"], alone=True) for i in range(8)))
        assert got == [[f"T{i}"] for i in range(8)]
        assert calls == [8]
    finally:
        await b.close()


async def test_a_lone_request_behind_a_page_waits_with_it():
    """A page's texts (not alone) are in flight: an API request arriving meanwhile joins its call."""
    b, calls = _batcher()
    try:
        page = asyncio.ensure_future(b.submit_many(["p1", "p2"]))
        await asyncio.sleep(0.05)
        request = asyncio.ensure_future(b.submit_many(["api"], alone=True))
        assert await page == ["P1", "P2"] and await request == ["API"]
        assert calls == [3]
    finally:
        await b.close()
