"""What a media detector has read, kept by the media's hash: a transcript, a video's sampled frames,
an image's OCR text. A re-scored case or a reused image is then read once, not per score."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class LruCache(Generic[V]):
    """Up to `size` values by key, the least recently used out first. Safe to share between threads:
    a detector's calls may run on several at once (and OCR reads images on a pool)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
