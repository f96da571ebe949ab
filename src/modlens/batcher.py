"""Dynamic batching: collect up to `max_batch` texts (or other hashable model inputs) or wait
`max_delay_ms`, then make one model call. Shared by every daemon connection and by batch audits,
so many small pages become few large model calls. The window is an upper bound: callers that
add nothing more of their own (`alone`, Perspective API requests) close a call as soon as the
load has arrived, as many texts as awaited the last call (`_complete`).

Two lanes: live texts (a page's scores) and derived texts submitted with `low=True` (word
importance, variants). Derived texts run when no live text waits, at most `max_low` per call, so
a page that arrives behind any amount of variant work waits for one such call at most; and, while
live texts never stop coming, `max_low` of them ride in every `LOW_EVERY`-th call (with live texts
filling the rest), so variants still progress under load instead of starving (bench/bench_soak.py
measured none completed in 45 s with 32 clients before this share)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, Literal, TypeVar, overload

T = TypeVar("T", bound=Hashable)  # one model input: a text, or a MediaInput (distinct inputs are called once)
R = TypeVar("R")                  # the model's answer for one input

BatchFn = Callable[[Sequence[T]], Awaitable[Sequence[R]]]


class DynamicBatcher(Generic[T, R]):
    LOW_EVERY = 4  # derived texts get at least every 4th call: max_low/max_batch of a quarter of the calls

    def __init__(self, fn: BatchFn[T, R], *, max_batch: int = 32, max_delay_ms: float = 10.0, max_queue: int = 10_000,
                 max_low: int | None = None, low_every: int | None = None):
        self._fn = fn
        self.low_every = max(1, low_every or self.LOW_EVERY)
        self.max_batch = max_batch
        self.max_low = max(1, min(max_low or max_batch, max_batch))
        self.max_delay = max_delay_ms / 1000
        self._queue: asyncio.Queue[tuple[T, asyncio.Future[R]]] = asyncio.Queue(max_queue)
        self._low: asyncio.Queue[tuple[T, asyncio.Future[R]]] = asyncio.Queue(max_queue)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._since_low = 0   # calls since the last one that carried derived texts
        self._callers = 0     # live submit/submit_many calls awaiting their results (the window's company)
        self._expecting = 0   # ... of which may still add texts of their own to the call (not `alone`)
        # live texts awaiting when the last call finished: the ones it carried plus those that
        # queued during it, i.e. the load its callers put on the model; the next call's window
        # closes once that many are in it, when every caller is `alone` (see `_complete`)
        self._load: int | None = None
        # wall seconds during which at least one live caller waited for its results: what pages
        # spent waiting for scores, the clock the live variants' budget is paid from (`live_wait_s`)
        self._waited_s = 0.0
        self._waiting_since = 0.0
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
        for queue in (self._queue, self._low):
            while not queue.empty():
                _, fut = queue.get_nowait()
                if not fut.done():
                    fut.set_exception(RuntimeError("batcher closed"))

    @staticmethod
    def lane(share: float, max_batch: int) -> tuple[int, int]:
        """(max_low, low_every) giving derived texts `share` of the texts of full calls while live
        texts never stop coming: one forward pass's worth (a quarter of a call) every n-th call,
        or, past a quarter, part of every call."""
        if share <= 0.25:
            max_low = max(1, max_batch // 4)
            return max_low, max(1, round(max_low / (share * max_batch)))
        return max(1, round(share * max_batch)), 1

    @property
    def low_queued(self) -> int:
        return self._low.qsize()

    @property
    def live_wait_s(self) -> float:
        """Seconds so far during which live callers (pages) waited for this batcher's results."""
        if self._callers:
            return self._waited_s + time.monotonic() - self._waiting_since
        return self._waited_s

    def _live_enter(self) -> None:
        if self._callers == 0:
            self._waiting_since = time.monotonic()
        self._callers += 1

    def _live_exit(self) -> None:
        self._callers -= 1
        if self._callers == 0:
            self._waited_s += time.monotonic() - self._waiting_since

    async def _enqueue(self, text: T, low: bool = False) -> asyncio.Future[R]:
        fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        await (self._low if low else self._queue).put((text, fut))  # waits only when the queue is full
        self._wake.set()
        return fut

    async def submit(self, text: T) -> R:
        """Queue one text; waits (back-pressure) when the queue is full."""
        self.start()
        self._live_enter()
        self._expecting += 1
        try:
            return await (await self._enqueue(text))
        finally:
            self._live_exit()
            self._expecting -= 1

    @overload
    async def submit_many(self, texts: Sequence[T], *, return_exceptions: Literal[False] = False, low: bool = False,
                          alone: bool = False) -> list[R]: ...

    @overload
    async def submit_many(self, texts: Sequence[T], *, return_exceptions: Literal[True], low: bool = False,
                          alone: bool = False) -> list[R | BaseException]: ...

    async def submit_many(self, texts: Sequence[T], *, return_exceptions: bool = False, low: bool = False,
                          alone: bool = False) -> list[R] | list[R | BaseException]:
        """Queue several texts in one go (no task per text); results in input order. With
        `return_exceptions`, a failed batch gives its exception in place of a result; `low`:
        derived texts, run when no live text waits; `alone`: the caller adds nothing more of its
        own to this call (a Perspective API request), so when every caller is alone the call
        goes as soon as the load has arrived, without waiting out the window (`_complete`)."""
        self.start()
        expecting = int(not low and not alone)
        if not low:
            self._live_enter()
        self._expecting += expecting
        try:
            futures = [await self._enqueue(t, low) for t in texts]
            return list(await asyncio.gather(*futures, return_exceptions=return_exceptions))
        finally:
            if not low:
                self._live_exit()
            self._expecting -= expecting

    def _drain(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        while len(batch) < self.max_batch and not self._queue.empty():
            batch.append(self._queue.get_nowait())

    async def _first(self) -> tuple[tuple[T, asyncio.Future[R]], bool]:
        """The next text, live before derived but for derived texts' share; (item, is_derived)."""
        while True:
            if not self._low.empty() and (self._queue.empty() or self._since_low >= self.low_every - 1):
                return self._low.get_nowait(), True
            if not self._queue.empty():
                return self._queue.get_nowait(), False
            self._wake.clear()
            await self._wake.wait()

    def _complete(self, batch: list[tuple[T, asyncio.Future[R]]]) -> bool:
        """Whether the call goes now instead of waiting out the window: it is full, or no caller
        will add more texts of its own (all are `alone`: Perspective API requests) and it holds as
        many texts as awaited the last call (before any call: one caller is in flight).

        The window is the upper bound, not the rule: under load the model would idle for it while
        every text it can expect is already here. Closed-loop clients (bots sending request after
        request) come back as soon as they are answered, so the texts that awaited the last call
        (those it carried and those that queued during it) are the company the next one waits for:
        a single bot's request goes at once, 32 bots' call closes when the 32nd arrives. When fewer
        come (the load fell), the window closes the call and the next one expects fewer. The load,
        not the callers in flight at this instant, decides: just after a call, its callers are
        still being answered, and the first of them to come back would otherwise go alone, in a
        call of one, ahead of the rest (bench/bench_perspective_window.py printed 32, 1, 32, 1...).
        A page's call (not `alone`) keeps the window: its normalized texts join it there."""
        if len(batch) >= self.max_batch:
            return True
        if self._expecting:
            return False
        return len(batch) >= self._load if self._load is not None else self._callers <= 1

    async def _collect(self) -> tuple[list[tuple[T, asyncio.Future[R]]], int]:
        """The next call's texts and how many of them are live."""
        first, derived = await self._first()
        self._since_low = 0 if derived else self._since_low + 1
        batch = [first]
        if derived:  # no window (idle model, or their share is due); waiting live texts fill the call
            while len(batch) < self.max_low and not self._low.empty():
                batch.append(self._low.get_nowait())
            n_low = len(batch)
            self._drain(batch)
            return batch, len(batch) - n_low
        self._drain(batch)
        if self._complete(batch):
            return batch, len(batch)
        loop = asyncio.get_running_loop()
        # The window opens when collection starts: texts that queued during the previous call
        # still wait for company. (Counting from their queueing time dispatched smaller batches
        # and measured slower through the daemon: bench/bench_daemon.py, docs/PERFORMANCE.md.)
        deadline = loop.time() + self.max_delay
        while len(batch) < self.max_batch and not self._complete(batch):
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout))
            except asyncio.TimeoutError:
                break
            self._drain(batch)
        return batch, len(batch)

    async def _run(self) -> None:
        while True:
            batch, n_live = await self._collect()
            live = [(t, f) for t, f in batch if not f.cancelled()]
            if not live:
                continue
            unique = list(dict.fromkeys(t for t, _ in live))  # one model input per distinct text
            try:
                try:
                    results = await self._fn(unique)
                finally:  # the load: live texts that awaited this call (see `_complete`)
                    self._load = n_live + self._queue.qsize()
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
