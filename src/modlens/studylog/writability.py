"""Whether the study log can be written now, as one condition with a start and an end.

A full disk, a read-only file, an I/O error and a lock held past the timeout are one condition
(`connection.LogUnwritable`): it starts at the first write that fails so and ends at a write that
commits once no write has failed for `settle_s` (a disk at the edge of full lets small writes
through between failures: those do not end it). The log gets one line when it starts and one
when it ends, with the number of writes refused in between, instead of a traceback per write;
`status()` is what `modlens status` shows. Thread-safe: the writer thread reports, the event
loop reads.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("modlens.studylog")

SETTLE_S = 2.0  # seconds without a failed write before a committed write ends the condition


class Writability:
    def __init__(self, path: Path, *, settle_s: float = SETTLE_S, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self.settle_s = settle_s
        self._clock = clock
        self._lock = threading.Lock()
        self.since: str | None = None    # wall time the current condition started (None: writable)
        self.reason = ""                 # the last failure's message
        self.failed = 0                  # writes refused in the current condition
        self.episodes = 0                # conditions since the writer started
        self._started = 0.0
        self._last_failure = 0.0
        self._wrote_since_failure = False

    @property
    def writable(self) -> bool:
        return self.since is None

    def failure(self, reason: str, writes: int) -> None:
        """`writes` calls were refused because the log cannot be written."""
        with self._lock:
            now = self._clock()
            self._last_failure, self._wrote_since_failure = now, False
            self.failed += writes
            self.reason = reason
            if self.since is not None:
                return
            self.since = datetime.now(timezone.utc).isoformat(timespec="seconds")
            self._started = now
            self.episodes += 1
        log.error("study log %s cannot be written (%s): writes are refused and answered `unavailable`, "
                  "nothing is acknowledged until it can be written again", self.path, reason)

    def success(self) -> None:
        """A write committed."""
        with self._lock:
            if self.since is None:
                return
            self._wrote_since_failure = True
        self.tick()

    def tick(self) -> None:
        """Ends the condition once a write committed and none failed for `settle_s`."""
        with self._lock:
            if self.since is None or not self._wrote_since_failure or self._clock() - self._last_failure < self.settle_s:
                return
            failed, lasted = self.failed, self._clock() - self._started
            self.since, self.failed, self.reason = None, 0, ""
        log.warning("study log %s writable again after %d failed writes (%.0f s)", self.path, failed, lasted)

    def wait_s(self) -> float | None:
        """How long the writer may sleep before `tick` could end the condition (None: no limit)."""
        return None if self.since is None else self.settle_s / 4

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"writable": self.since is None, "since": self.since, "reason": self.reason or None,
                    "failed_writes": self.failed, "episodes": self.episodes}
