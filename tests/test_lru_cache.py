"""The media detectors' reading cache (`detectors.lru`): bounded, the least recently used out first,
a read counting as a use, and a read safe from a write on another thread that would evict what it reads."""
from __future__ import annotations

import threading
from collections import OrderedDict

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


class _MoveWaitsForAWrite(OrderedDict[str, str]):
    """The cache's store, made to lose the race its lock is there for: moving "a" to the recently used end
    (what a read of "a" does after finding it) first waits, up to 0.5 s, for another thread's write to end.
    Without the lock that write evicts "a" in between, and the move raises KeyError; with it the write
    waits for the read instead, and the wait just runs out."""

    def __init__(self) -> None:
        super().__init__()
        self.reading_a = threading.Event()
        self.written = threading.Event()

    def move_to_end(self, key: str, last: bool = True) -> None:
        if key == "a" and not self.reading_a.is_set():
            self.reading_a.set()
            self.written.wait(0.5)
        super().move_to_end(key, last)


def test_a_write_cannot_evict_a_key_while_a_read_of_it_is_moving_it() -> None:
    cache: LruCache[str] = LruCache(2)
    cache.put("a", "A")
    cache.put("b", "B")  # a is the least recently used: the next write evicts it, unless a is read first
    items = cache._items = _MoveWaitsForAWrite()
    items.update(a="A", b="B")

    def write() -> None:
        assert items.reading_a.wait(5)
        cache.put("c", "C")
        items.written.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert cache.get("a") == "A"
    finally:
        writer.join()
    # the read came first, so a was the most recently used when c came in: b went
    assert list(items) == ["a", "c"]
