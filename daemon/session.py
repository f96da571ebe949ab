"""One connection's transport state: its rate limit, its tasks and its counters; what the live
service knows of it (who rates, the comments it sent, its pages in the pipeline) is the
`modlens.live.LiveSession` it extends.

Back-pressure instead of unbounded queues: each message costs a token from a bucket
(`limits.messages_per_second`, `limits.burst`), and at most `max_pending` comments messages
may be in the pipeline per connection, counted until their scores are sent: variants have
credits of their own (`max_variant_backlog` comments waiting; past it they are deferred, see
`modlens.live.variants`), so a variant backlog never refuses a page. Past either limit the message
is refused with `rate_limited` and a `retry_after_ms` telling the client when to try again, and
nothing is queued; the batcher and the study-log writer behind them are bounded as well.
"""
from __future__ import annotations

import asyncio
from typing import Any

from modlens.config import LimitsConfig
from modlens.live import LiveSession, TokenBucket


class Session(LiveSession):
    def __init__(self, limits: LimitsConfig, max_pending: int = 8) -> None:
        super().__init__()
        self.limits, self.max_pending = limits, max_pending
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stats = {"messages": 0, "refused": 0, "rate_limited": 0}
        self.bucket = TokenBucket(limits.messages_per_second, limits.burst)
        self.send_lock = asyncio.Lock()

    def admit(self, kind: str) -> int:
        """0 if this message may proceed now, else retry_after_ms."""
        wait = self.bucket.take()
        if wait:
            return wait
        if kind == "comments" and self.pending >= self.max_pending:
            # Rough guess: a page is scored in well under a second; ask for a short pause.
            return 250
        return 0

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
