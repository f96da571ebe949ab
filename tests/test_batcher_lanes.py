"""The batcher's two lanes (src/modlens/batcher.py): live texts (a page's scores) go first, and
derived texts (word importance, variants) still get a bounded share of the model calls while
live texts never stop coming, so live variants cannot starve under load (bench/bench_soak.py)."""
from __future__ import annotations

import asyncio

from modlens.batcher import DynamicBatcher


async def test_derived_texts_get_a_call_while_live_texts_keep_arriving():
    calls: list[list[str]] = []

    async def fn(texts):
        calls.append(list(texts))
        await asyncio.sleep(0)  # a model call: other tasks run meanwhile
        return [len(t) for t in texts]

    b = DynamicBatcher(fn, max_batch=4, max_delay_ms=0, max_low=2)
    stop = asyncio.Event()

    async def live_client(c: int) -> None:  # closed loop: always one live text waiting
        n = 0
        while not stop.is_set() and len(calls) < 200:
            n += 1
            await b.submit(f"live-{c}-{n}")

    clients = [asyncio.create_task(live_client(c)) for c in range(8)]
    try:
        await asyncio.sleep(0)
        derived = await asyncio.wait_for(b.submit_many(["d1", "d2", "d3"], low=True), 5)
        stop.set()
    finally:
        stop.set()
        await asyncio.gather(*clients)
        await b.close()
    assert derived == [2, 2, 2]
    at = [i for i, call in enumerate(calls) if any(t.startswith("d") for t in call)]
    # every LOW_EVERY-th call at most may carry derived texts, 2 (max_low) per call at most
    assert at and at[-1] < 200, "derived texts waited until the live load stopped"
    assert all(sum(t.startswith("d") for t in calls[i]) <= 2 for i in at)
    gaps = [j - i for i, j in zip(at, at[1:])]
    assert all(g >= DynamicBatcher.LOW_EVERY for g in gaps), gaps  # live texts keep most of the calls
    assert sum(not t.startswith("d") for c in calls for t in c) > 3 * sum(t.startswith("d") for c in calls for t in c)


async def test_with_no_live_text_derived_texts_run_at_once():
    calls: list[list[str]] = []

    async def fn(texts):
        calls.append(list(texts))
        return [0] * len(texts)

    b = DynamicBatcher(fn, max_batch=8, max_delay_ms=50, max_low=3)
    try:
        await asyncio.wait_for(b.submit_many([f"d{i}" for i in range(7)], low=True), 5)
    finally:
        await b.close()
    assert [len(c) for c in calls] == [3, 3, 1]


async def _derived_share(max_low: int, low_every: int, max_batch: int = 16) -> float:
    """Under a closed-loop live load that keeps every call full, with plenty of derived texts
    waiting: the share of the called texts that were derived."""
    calls: list[list[str]] = []

    async def fn(texts):
        calls.append(list(texts))
        await asyncio.sleep(0)
        return [0] * len(texts)

    b = DynamicBatcher(fn, max_batch=max_batch, max_delay_ms=0, max_low=max_low, low_every=low_every)
    stop = asyncio.Event()

    async def live_client(c: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            await b.submit(f"live-{c}-{n}")

    clients = [asyncio.create_task(live_client(c)) for c in range(3 * max_batch)]
    derived = asyncio.create_task(b.submit_many([f"d{i}" for i in range(5000)], low=True))
    try:
        while len(calls) < 400:
            await asyncio.sleep(0)
    finally:
        stop.set()
        await asyncio.gather(*clients)
        await b.close()
        derived.cancel()
        await asyncio.gather(derived, return_exceptions=True)
    texts = [t for c in calls[20:400] for t in c]
    return sum(t.startswith("d") for t in texts) / len(texts)


async def test_the_study_s_live_share_is_the_derived_texts_share_under_load():
    """`perturbation.live_share` -> (max_low, low_every): what derived texts get when live
    texts never stop coming."""
    for share in (0.0625, 0.125, 0.25, 0.5):
        max_low, every = DynamicBatcher.lane(share, 16)
        got = await _derived_share(max_low, every)
        assert abs(got - share) < 0.2 * share, (share, got)
    assert DynamicBatcher.lane(0.0625, 256) == (64, DynamicBatcher.LOW_EVERY)  # the default: as before
