"""One connection's state: who is on the other end, its rate limit and its queued work.

Back-pressure instead of unbounded queues: each message costs a token from a bucket
(`limits.messages_per_second`, `limits.burst`), and at most `max_pending` comments messages
may be in the pipeline per connection, counted until their scores are sent: variants have
credits of their own (`max_variant_backlog` comments waiting; past it they are deferred, see
`variants.py`), so a variant backlog never refuses a page. Past either limit the message is refused with
`rate_limited` and a `retry_after_ms` telling the client when to try again, and nothing
is queued; the batcher and the study-log writer behind them are bounded as well.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from modlens.config import LimitsConfig


class TokenBucket:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.capacity = float(burst)
        self.tokens = float(burst)
        self._clock = clock
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        self._last = now

    def take(self) -> int:
        """0 when a token was taken, else the milliseconds until one is available."""
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0
        return max(1, int((1.0 - self.tokens) / self.rate * 1000 + 0.999))


@dataclass
class Session:
    limits: LimitsConfig
    max_pending: int = 8
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    rater_id: str | None = None
    client: str | None = None
    ready: bool = False           # a hello succeeded
    closed: bool = False
    pending: int = 0              # comments messages in the pipeline (until their scores are sent)
    variants_queued: int = 0      # comments of this connection waiting for live variants
    max_variant_backlog: int = 64
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # (platform, key) -> comment_id of comments this connection sent (ratings look here first)
    comments: dict[tuple[str, str], "_ItemOf"] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {"messages": 0, "refused": 0, "rate_limited": 0})

    def __post_init__(self) -> None:
        self.bucket = TokenBucket(self.limits.messages_per_second, self.limits.burst)
        self._send_lock = asyncio.Lock()

    def admit(self, kind: str) -> int:
        """0 if this message may proceed now, else retry_after_ms."""
        wait = self.bucket.take()
        if wait:
            return wait
        if kind == "comments" and self.pending >= self.max_pending:
            # Rough guess: a page is scored in well under a second; ask for a short pause.
            return 250
        return 0

    def remember_comments(self, platform: str, keys: list[str], recorded: "asyncio.Future[list[int]]") -> None:
        """Ratings sent right after comments_ok find their comment here, waiting for its write.
        Written ones are dropped past `REMEMBERED` (a rating then looks its comment up in the log):
        at ~700 bytes an entry, the 20,000 once kept per connection made 32 connections' RSS grow
        by up to 450 MiB (bench/bench_soak.py)."""
        if len(self.comments) > REMEMBERED:
            self.comments = {k: f for k, f in self.comments.items() if not f.done()}
        for i, key in enumerate(keys):
            self.comments[(platform, key)] = _ItemOf(recorded, i)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def cancel_tasks(self) -> None:
        for t in list(self.tasks):
            t.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)


REMEMBERED = 1_000  # comments per connection kept for ratings once written (pending writes: all)


class _ItemOf:
    """The i-th comment_id of a pending batch write, awaitable."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: "asyncio.Future[list[int]]", index: int):
        self.batch, self.index = batch, index

    def done(self) -> bool:
        return self.batch.done()

    async def get(self) -> int:
        return (await asyncio.shield(self.batch))[self.index]
