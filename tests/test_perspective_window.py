"""The batchers' window adapts to the load for Perspective API requests (`alone`): a request that
is the only one in flight goes to the model at once, instead of waiting the window for company
that cannot come; under load a call closes as soon as the texts that awaited the last call are in
it; concurrent requests still share one model call; a page's call (not `alone`, its normalized
texts may join) keeps the window. The speed itself is measured by
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


async def _settle() -> None:
    """Lets every ready task run a few steps (no clock: the window below is an hour)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def test_a_call_closes_as_the_load_arrives_not_when_the_window_ends():
    """Four bots, request after request. The texts that awaited the last call (its own and those
    queued during it) are the company the next call waits for: it closes as the fourth arrives,
    though its window is an hour, and the first bot back after a call does not go alone."""
    calls: list[list[str]] = []
    gate = asyncio.Event()

    async def fn(texts):
        calls.append(list(texts))
        if len(calls) == 1:
            await gate.wait()  # the first call runs while the other three bots queue
        return [t.upper() for t in texts]

    b = DynamicBatcher(fn, max_batch=32, max_delay_ms=3_600_000)
    try:
        a1 = asyncio.ensure_future(b.submit_many(["a1"], alone=True))  # alone in flight: at once
        await _settle()
        queued = [asyncio.ensure_future(b.submit_many([t], alone=True)) for t in ("b1", "c1", "d1")]
        await _settle()
        assert calls == [["a1"]]
        gate.set()
        assert await a1 == ["A1"]
        await _settle()
        assert calls == [["a1"]]  # three texts queued, four awaited the last call: it waits for bot a
        a2 = asyncio.ensure_future(b.submit_many(["a2"], alone=True))  # bot a comes back
        await _settle()
        assert calls == [["a1"], ["b1", "c1", "d1", "a2"]]  # closed on arrival, an hour early
        assert [await q for q in queued] == [["B1"], ["C1"], ["D1"]] and await a2 == ["A2"]

        b2 = asyncio.ensure_future(b.submit_many(["b2"], alone=True))  # the first bot back is alone in flight
        await _settle()
        assert len(calls) == 2  # ... yet waits for the other three: the load is four
        rest = [asyncio.ensure_future(b.submit_many([t], alone=True)) for t in ("c2", "d2", "a3")]
        await _settle()
        assert calls[2:] == [["b2", "c2", "d2", "a3"]]
        assert await b2 == ["B2"] and [await r for r in rest] == [["C2"], ["D2"], ["A3"]]
    finally:
        await b.close()


async def test_a_page_keeps_the_window_when_the_load_has_arrived():
    """A page's call may still get its normalized texts: reaching the load does not close it."""
    calls: list[list[str]] = []

    async def fn(texts):
        calls.append(list(texts))
        return [t.upper() for t in texts]

    b = DynamicBatcher(fn, max_batch=32, max_delay_ms=3_600_000)
    try:
        assert await b.submit_many(["api"], alone=True) == ["API"]  # the load is now one text
        page = asyncio.ensure_future(b.submit_many(["p1", "p2"]))
        await _settle()
        assert calls == [["api"]]  # two texts, more than the load, and still waiting for the window
        page.cancel()
    finally:
        await b.close()
