"""Batching machinery behind the performance work: length buckets, the dynamic batcher's
deadline, the engine's one-step submission, normalized texts sharing the originals' model
call, and the registry's install hint. Speed itself is measured in bench/, not here."""
from __future__ import annotations

import asyncio
import importlib
import itertools
from typing import Sequence

import numpy as np
import pytest

from modlens.batcher import DynamicBatcher
from modlens.detectors import registry
from modlens.detectors.minilm import length_buckets
from modlens.engine import Engine
from modlens.normalize.base import Normalized

from daemon_helpers import Client, WordListDetector, comments_msg, connect, running_daemon, study


# --- length buckets ---------------------------------------------------------------------------

def _cost(lengths, spans, call_cost):
    return sum(call_cost + (e - s) * lengths[e - 1] for s, e in spans)


def _brute_force(lengths, max_rows, call_cost):
    n, best = len(lengths), None
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        spans = list(zip(bounds, bounds[1:]))
        if all(e - s <= max_rows for s, e in spans):
            cost = _cost(lengths, spans, call_cost)
            best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_length_buckets_are_optimal_and_cover_everything(seed):
    rng = np.random.default_rng(seed)
    lengths = sorted(int(x) for x in rng.integers(3, 128, size=int(rng.integers(1, 11))))
    max_rows, call_cost = int(rng.integers(1, 6)), int(rng.integers(0, 80))
    spans = length_buckets(lengths, max_rows, call_cost)
    assert spans[0][0] == 0 and spans[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, no gaps or overlaps
    assert all(0 < e - s <= max_rows for s, e in spans)
    assert _cost(lengths, spans, call_cost) == _brute_force(lengths, max_rows, call_cost)


def test_length_buckets_split_short_from_long_only_when_it_pays():
    short_and_long = [8] * 30 + [120] * 2
    assert length_buckets(short_and_long, 64, call_cost=48) == [(0, 30), (30, 32)]
    assert length_buckets([8] * 30 + [9] * 2, 64, call_cost=48) == [(0, 32)]  # 30 pad tokens < one more call
    assert length_buckets([], 64) == []


def test_minilm_sub_batches_give_the_same_scores_as_one_at_a_time():
    det = registry.create("minilm-toxicity")
    try:
        texts = ["ok", "", "you idiot", "what a stupid take " * 40, "nice", "lovely video, thanks for sharing it",
                 "idiots everywhere " * 12, "fine", "this is the worst argument I have read all week"] * 3
        lengths = sorted(len(ids) for ids in det.encoder.tokenizer(texts, truncation=True, max_length=128)["input_ids"])
        assert len(length_buckets(lengths, det.encoder.batch_size)) > 1  # the case under test: several widths
        batched = [s["toxic"] for s in det.score(texts)]
        single = [det.score([t])[0]["toxic"] for t in texts[:9]]
        np.testing.assert_allclose(batched[:9], single, atol=1e-5)
        np.testing.assert_allclose(batched[9:18], single, atol=1e-5)  # duplicates, other positions
    finally:
        det.close()


# --- the dynamic batcher ----------------------------------------------------------------------

class SlowBatchFn:
    """Records each call's texts; each call takes `delay` seconds (like a model call)."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None):
        self.delay, self.fail_on, self.calls = delay, fail_on, []
        self.starts: list[float] = []
        self.ends: list[float] = []

    async def __call__(self, texts: Sequence[str]):
        loop = asyncio.get_running_loop()
        self.calls.append(list(texts))
        self.starts.append(loop.time())
        await asyncio.sleep(self.delay)
        self.ends.append(loop.time())
        if self.fail_on in texts:
            raise ValueError(f"cannot score {self.fail_on!r}")
        return [t.upper() for t in texts]


async def test_submit_many_keeps_order_dedups_and_respects_max_batch():
    fn = SlowBatchFn()
    b = DynamicBatcher(fn, max_batch=4, max_delay_ms=5)
    try:
        texts = ["a", "b", "a", "c", "d", "e", "f"]
        assert await b.submit_many(texts) == [t.upper() for t in texts]
        assert all(len(c) <= 4 for c in fn.calls)
        assert sorted(t for c in fn.calls for t in c) == ["a", "b", "c", "d", "e", "f"]  # "a" scored once
    finally:
        await b.close()


async def test_a_failed_batch_reaches_every_waiter_and_the_batcher_keeps_going():
    fn = SlowBatchFn(fail_on="bad")
    b = DynamicBatcher(fn, max_batch=8, max_delay_ms=5)
    try:
        got = await b.submit_many(["ok", "bad"], return_exceptions=True)
        assert all(isinstance(g, ValueError) for g in got)
        assert await b.submit("fine") == "FINE"
    finally:
        await b.close()


# --- the engine -------------------------------------------------------------------------------

class Exploding(WordListDetector):
    name = "exploding"

    def score(self, texts):
        raise RuntimeError("model fell over")


async def test_engine_sends_a_page_as_one_call_per_detector_and_isolates_failures():
    words, broken = WordListDetector(), Exploding()
    engine = Engine(study(), detectors={"w": words, "x": broken}, max_delay_ms=5)
    try:
        texts = [f"comment {i} you idiot" for i in range(20)]
        results = await engine.score(texts)
        assert words.calls == [20]
        assert [r["w"].toxicity for r in results] == [0.25] * 20
        assert all(r["x"].toxicity is None and "model fell over" in r["x"].error for r in results)
        assert all(r["w"].version == "test-1" and r["w"].name == "wordlist" for r in results)
        assert await engine.score([]) == []
        only = await engine.score(["hi"], only=["w"])
        assert list(only[0]) == ["w"]
    finally:
        await engine.close()


# --- the daemon pipeline ----------------------------------------------------------------------

class Unleet:
    def normalize(self, text: str) -> Normalized:
        return Normalized(text.replace("1", "i").replace("0", "o"), [], "unleet", "1")


async def test_normalized_texts_share_the_originals_model_call(tmp_path):
    det = WordListDetector()
    cfg = study(normalizer={"enabled": True})
    # a generous window so a loaded CI machine still lands the normalizer inside it
    async with running_daemon(tmp_path, cfg, detectors={"wordlist": det}, batch_delay_ms=300) as (url, app):
        from modlens.daemon.app import ENGINE
        app[ENGINE].normalizer = Unleet()
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            page = [("k1", "you 1d10t"), ("k2", "stup1d"), ("k3", "nice video")]
            await c.request(comments_msg("c1", page), "comments_ok")
            scores = await c.until(lambda m: m["type"] == "scores")
    assert det.calls == [5]  # 3 originals + 2 changed normalized texts, one model call
    items = {i["key"]: i for i in scores["items"]}
    assert items["k1"]["detectors"]["wordlist"]["toxicity"] == 0.0
    assert items["k1"]["normalized"]["detectors"]["wordlist"]["toxicity"] == 0.5  # "you idiot"
    assert items["k3"]["normalized"]["text"] == "nice video" and items["k3"]["normalized"]["detectors"] == {}


# --- registry install hint --------------------------------------------------------------------

def test_missing_dependency_fix_names_the_third_party_package(monkeypatch):
    def fake_import(name):
        raise ModuleNotFoundError("No module named 'sklearn.linear_model'", name="sklearn.linear_model")

    monkeypatch.setattr(importlib, "import_module", fake_import)
    st = registry.status("profanity-check")
    assert st.status == "missing_dependency" and st.fix == "pip install scikit-learn"

    def missing_plugin(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(importlib, "import_module", missing_plugin)
    st = registry.status("profanity-check")
    assert st.status == "missing_dependency"
    assert "modlens.detectors" not in st.fix and "reinstall modlens" in st.fix
