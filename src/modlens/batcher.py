"""Dynamic batching: collect up to `max_batch` texts or wait `max_delay_ms`, then make one
model call. Shared by every daemon connection and by batch audits, so many small pages
become few large model calls."""
from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Generic, Sequence, TypeVar

R = TypeVar("R")

BatchFn = Callable[[Sequence[str]], Awaitable[Sequence[R]]]


class DynamicBatcher(Generic[R]):
    def __init__(self, fn: BatchFn, *, max_batch: int = 32, max_delay_ms: float = 10.0, max_queue: int = 10_000):
        self._fn = fn
        self.max_batch = max_batch
        self.max_delay = max_delay_ms / 1000
        self._queue: asyncio.Queue[tuple[str, asyncio.Future]] = asyncio.Queue(max_queue)
        self._task: asyncio.Task | None = None
        self.batches = 0      # model calls made (for benchmarks and status)
        self.items = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="batcher")

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        while not self._queue.empty():
            _, fut = self._queue.get_nowait()
            if not fut.done():
                fut.set_exception(RuntimeError("batcher closed"))

    async def submit(self, text: str) -> R:
        """Queue one text; waits (back-pressure) when the queue is full."""
        self.start()
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put((text, fut))
        return await fut

    async def submit_many(self, texts: Sequence[str]) -> list[R]:
        return list(await asyncio.gather(*(self.submit(t) for t in texts)))

    async def _collect(self) -> list[tuple[str, asyncio.Future]]:
        batch = [await self._queue.get()]
        deadline = time.monotonic() + self.max_delay
        while len(batch) < self.max_batch:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout))
            except asyncio.TimeoutError:
                break
        return batch

    async def _run(self) -> None:
        while True:
            batch = await self._collect()
            live = [(t, f) for t, f in batch if not f.cancelled()]
            if not live:
                continue
            unique = list(dict.fromkeys(t for t, _ in live))  # one model input per distinct text
            try:
                results = await self._fn(unique)
                if len(results) != len(unique):
                    raise RuntimeError(f"batch function returned {len(results)} results for {len(unique)} texts")
            except Exception as err:  # every waiter learns about the failure
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            self.batches += 1
            self.items += len(unique)
            by_text = dict(zip(unique, results))
            for text, fut in live:
                if not fut.done():
                    fut.set_result(by_text[text])
