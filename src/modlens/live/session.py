"""A participant's connection as the live service sees it: who rates, the comments it sent (a
rating finds its comment here while that comment is still being written), the pages it has in
the pipeline and the comments it has waiting for variants. The transport (`modlens.daemon`) adds
its rate limit and tasks; `TokenBucket` is the one rate rule both use."""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

from modlens.errors import ModlensError


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


FAILURES_KEPT = 5  # the first failed owed writes a connection's `sync` names (all are counted)


class OwedWrites:
    """The writes the daemon owes one connection for answers it sent it: a page's score rows
    (written after its `scores` went out), a round's variant rows and deferred-variant rows (written
    before their `variants` messages, but a failure is not told there). Each write is added before
    the answer it stands behind is sent, so a `sync` that follows any answer finds that answer's
    write here, and `settled` waits for it."""

    def __init__(self) -> None:
        self.pending: dict[asyncio.Future[Any], str] = {}  # write -> what it stores
        self.committed = 0
        self.failed = 0
        self.failures: list[str] = []  # the first FAILURES_KEPT, said as "<what>: <why>"

    def add(self, write: "asyncio.Future[Any]", what: str) -> None:
        """`write`: the study-log call's future (resolves once its transaction committed)."""
        self.pending[write] = what
        write.add_done_callback(self._settle)

    def _settle(self, write: "asyncio.Future[Any]") -> None:
        what = self.pending.pop(write, None)
        if what is None:
            return  # counted already
        if write.cancelled():
            why: str | None = "not written (its work was cancelled: the connection closed)"
        else:
            err = write.exception()
            why = None if err is None else err.message if isinstance(err, ModlensError) else f"{type(err).__name__}: {err}"
        if why is None:
            self.committed += 1
            return
        self.failed += 1
        if len(self.failures) < FAILURES_KEPT:
            self.failures.append(f"{what}: {why}")

    async def settled(self) -> None:
        """Once every write added so far has committed or failed (`committed`, `failed`)."""
        owed = list(self.pending)
        if owed:
            await asyncio.wait(owed)
        for write in owed:
            self._settle(write)  # whether or not its own callback ran yet


def owe(write: Awaitable[Any], debts: Iterable[tuple[OwedWrites, str]]) -> "asyncio.Future[Any]":
    """`write` started and owed (`OwedWrites.add`) to each connection named in `debts` as (its
    `owed`, what the write stores for it). Call it before sending the answers the write stands
    behind. Returned shielded: a caller cancelled (the connection closed, the daemon stopping)
    leaves the write to finish and be counted."""
    writing = asyncio.ensure_future(write)
    for owed, what in debts:
        owed.add(writing, what)
    return asyncio.shield(writing)


REMEMBERED = 1_000  # comments per connection kept for ratings once written (pending writes: all)


@dataclass(eq=False)  # a session is itself: sets of sessions hold each once
class LiveSession:
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    rater_id: str | None = None
    client: str | None = None
    ready: bool = False           # a hello succeeded
    assignment: str | None = None  # the item-set assignment hello_ok gave this rater (study/assignment.py)
    closed: bool = False
    pending: int = 0              # comments messages in the pipeline (until their scores are sent)
    variants_queued: int = 0      # comments of this connection waiting for live variants
    max_variant_backlog: int = 64
    # (platform, key) -> comment_id of comments this connection sent (ratings look here first)
    comments: dict[tuple[str, str], "_ItemOf"] = field(default_factory=dict)
    owed: OwedWrites = field(default_factory=OwedWrites)  # what `sync` waits for

    def remember_comments(self, platform: str, keys: list[str], recorded: "asyncio.Future[list[int]]") -> None:
        """Ratings sent right after comments_ok find their comment here, waiting for its write.
        Written ones are dropped past `REMEMBERED` (a rating then looks its comment up in the log):
        at ~700 bytes an entry, the 20,000 once kept per connection made 32 connections' RSS grow
        by up to 450 MiB (bench/bench_soak.py)."""
        if len(self.comments) > REMEMBERED:
            self.comments = {k: f for k, f in self.comments.items() if not f.done()}
        for i, key in enumerate(keys):
            self.comments[(platform, key)] = _ItemOf(recorded, i)


class _ItemOf:
    """The i-th comment_id of a pending batch write, awaitable."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: "asyncio.Future[list[int]]", index: int):
        self.batch, self.index = batch, index

    def done(self) -> bool:
        return self.batch.done()

    async def get(self) -> int:
        return (await asyncio.shield(self.batch))[self.index]
