"""Live variants never slow the scores a page waits for (live/variants.py `LatencyBudget`, the
batcher's `live_wait_s`): under live_rate "auto", variant rounds may keep the worker busy at most
`LATENCY_RATIO` times as long as pages waited for their scores. Hardware that makes variants
cheaply keeps every comment live; a CPU whose variants cost ten times the page defers them."""
from __future__ import annotations

import asyncio

import pytest

from modlens.batcher import DynamicBatcher
from modlens.live import variants as lv
from modlens.live.variants import LatencyBudget


class Clocks:
    """The scoring clock (seconds pages waited) and the monotonic clock the rounds are timed on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scoring = 0.0
        self.now = 100.0
        monkeypatch.setattr(lv.time, "monotonic", lambda: self.now)

    def page(self, seconds: float) -> None:  # a page waited this long for its scores
        self.scoring += seconds
        self.now += seconds

    def round(self, budget: LatencyBudget, n: int, reserved: int, seconds: float) -> None:
        budget.started()
        self.now += seconds
        budget.ended(n, reserved)


def admitted(budget: LatencyBudget, n: int) -> int:
    return sum(budget.admit() for _ in range(n))


def test_cheap_variants_stay_live_on_every_page(monkeypatch):
    clocks = Clocks(monkeypatch)
    budget = LatencyBudget(lambda: clocks.scoring, ratio=1.0, cap_s=1.0, probe=4)
    clocks.page(0.2)
    assert admitted(budget, 20) == 4  # nothing measured yet: a probe
    clocks.round(budget, 4, 0, 0.02)  # 5 ms a comment
    for _ in range(5):  # a page of 20 waits 0.2 s; its variants cost 0.1 s
        clocks.page(0.2)
        got = admitted(budget, 20)
        assert got == 20
        clocks.round(budget, 20, got, 0.1)


def test_costly_variants_take_at_most_their_share_of_the_scoring_time(monkeypatch):
    clocks = Clocks(monkeypatch)
    budget = LatencyBudget(lambda: clocks.scoring, ratio=1.0, cap_s=1.0, probe=4)
    clocks.page(0.2)
    assert admitted(budget, 20) == 4
    clocks.round(budget, 4, 0, 0.5)  # 125 ms a comment, as minilm's rounds on this CPU
    live, scoring, busy = 0, 0.0, 0.0
    for _ in range(40):
        clocks.page(0.2)
        scoring += 0.2
        got = admitted(budget, 20)
        live += got
        if got:
            clocks.round(budget, got, got, 0.125 * got)
            busy += 0.125 * got
    assert 0 < live < 40 * 20 // 4  # some live, most deferred
    assert busy <= 1.0 * scoring + 1.0  # the ratio, plus at most the cap's credit


def test_an_idle_daemon_banks_no_more_than_the_cap(monkeypatch):
    clocks = Clocks(monkeypatch)
    budget = LatencyBudget(lambda: clocks.scoring, ratio=1.0, cap_s=1.0, probe=1)
    assert admitted(budget, 1) == 1
    clocks.round(budget, 1, 0, 0.1)
    clocks.page(60.0)  # a minute of pages without variants
    assert admitted(budget, 100) == 10  # 1 s of credit at 0.1 s a comment


def test_a_costly_first_round_does_not_stop_variants_for_good(monkeypatch):
    clocks = Clocks(monkeypatch)
    budget = LatencyBudget(lambda: clocks.scoring, ratio=1.0, cap_s=0.5, probe=2)
    assert admitted(budget, 2) == 2
    clocks.round(budget, 2, 0, 4.0)  # the generator's first use: 2 s a comment, over the cap
    clocks.page(0.2)
    assert admitted(budget, 20) == 0  # paying back
    clocks.page(1.0)
    assert admitted(budget, 20) == 1  # a full credit: one comment, measured again
    clocks.round(budget, 1, 1, 0.05)
    assert budget.per_comment is not None and budget.per_comment < 2.0


async def test_the_batcher_counts_the_time_pages_wait_not_the_time_variants_wait():
    async def slow(texts):
        await asyncio.sleep(0.05)
        return [len(t) for t in texts]

    batcher = DynamicBatcher(slow, max_batch=8, max_delay_ms=1)
    try:
        await batcher.submit_many(["a", "b"], low=True)  # derived texts: no page waits for them
        assert batcher.live_wait_s == 0.0
        await asyncio.gather(batcher.submit_many(["c"]), batcher.submit_many(["d"]))  # two pages at once
        assert 0.04 <= batcher.live_wait_s < 0.5  # their overlap counted once
    finally:
        await batcher.close()
