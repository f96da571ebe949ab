"""The media detectors' reading cache (`detectors.lru`): bounded, the least recently used out first,
a read counting as a use, and safe under threads that read and write at once."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from modlens.detectors.lru import LruCache


def test_the_least_recently_used_goes_first_and_a_read_is_a_use() -> None:
    cache: LruCache[str] = LruCache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # now b is the least recently used
    cache.put("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C" and len(cache) == 2
    cache.put("a", "A2")  # a write is a use too, and replaces the value
    cache.put("d", "D")
    assert cache.get("c") is None and cache.get("a") == "A2"


def test_threads_reading_and_writing_at_once_keep_it_bounded() -> None:
    cache: LruCache[int] = LruCache(64)

    def work(k: int) -> None:
        for i in range(500):
            cache.put(f"{k}:{i}", i)
            cache.get(f"{k}:{i // 2}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert len(cache) == 64
