"""The engine's per-text cache for derived texts (`_DetectorRunner.score_cached`): a tiny cache
that evicts while a call is under way still answers every text, each text scored for real."""
from __future__ import annotations

import asyncio

from modlens.engine import Engine

from daemon_helpers import WordListDetector, study


async def test_a_text_evicted_between_the_check_and_the_read_is_still_answered():
    det = WordListDetector()
    engine = Engine(study(), detectors={"wordlist": det}, cache_size=1)
    runner = engine.runners["wordlist"]
    try:
        await runner.score_cached(["you stupid idiot"])
        # "have a nice day" is new: storing its result evicts the cached text this call also asks for
        got = await runner.score_cached(["have a nice day", "you stupid idiot"])
        assert [r.toxicity for r in got] == [0.0, 2 / 3]
        assert all(r.name == "wordlist" and r.version == "test-1" and r.error is None for r in got)
        assert runner.cache_hits == 1 and list(runner.cache) == ["have a nice day"]
    finally:
        await engine.close()


async def test_concurrent_callers_of_a_tiny_cache_all_get_their_own_texts_scores():
    det = WordListDetector(delay_s=0.002)
    engine = Engine(study(), detectors={"wordlist": det}, cache_size=2)
    runner = engine.runners["wordlist"]
    words = ["stupid", "nice", "idiot", "kind", "hate", "fine"]
    calls = [[f"you {words[(i + j) % 6]}" for j in range(3)] for i in range(24)]
    try:
        await runner.score_cached(calls[0])
        results = await asyncio.gather(*(runner.score_cached(c) for c in calls))
        for texts, got in zip(calls, results):
            expected = [det.score([t])[0]["toxic"] for t in texts]
            assert [r.toxicity for r in got] == expected
        assert len(runner.cache) <= 2
    finally:
        await engine.close()
