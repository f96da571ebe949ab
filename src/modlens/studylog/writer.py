"""The one writer of a study log in a process that serves many clients (the daemon): a thread that
owns the log's connection and commits queued calls in batches.

`await writer.submit(fn)` queues `fn(log)`; the thread batches queued calls into one transaction
(each call in its own SAVEPOINT, so one failing call does not undo the others) and resolves the
awaitable only after COMMIT returned: the daemon acknowledges a write to a client only after
that. A write that fails because the log cannot be written now (a full disk, an I/O error, a
read-only file: `connection.LogUnwritable`) fails with that error, and `writability` tracks the
condition (`writability.py`). `store.LogWriter` is this writer on a `StudyLog`."""
from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Generic, TypeVar

from modlens.studylog.connection import (BUSY_TIMEOUT_MS, LogConnection, LogUnwritable, StudyLogError,
                                         begin_immediate, unwritable)
from modlens.studylog.writability import SETTLE_S, Writability

T = TypeVar("T")
L = TypeVar("L", bound=LogConnection)

_STOP = object()
# seconds between the writer's tries to give a full disk's WAL space back (`_relieve`): often, so
# that once space comes back the WAL is folded in before resent pages fill that space again (a
# try that fails keeps what it copied, and fails fast)
RELIEF_S = 0.2


class BatchWriter(Generic[L]):
    """A thread that opens the log with `open_log(path)` and commits queued calls in batches."""

    def __init__(self, path: str | Path, open_log: Callable[[Path], L], *, max_batch: int = 256,
                 max_delay_ms: float = 20.0, settle_s: float = SETTLE_S) -> None:
        self.path = Path(path)
        self.writability = Writability(self.path, settle_s=settle_s)
        self._open_log = open_log
        self.max_batch = max_batch
        self.max_delay = max_delay_ms / 1000
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._accepting = False
        self.batches = 0   # committed transactions (for benchmarks and status)
        self.calls = 0

    async def start(self) -> None:
        if self._thread is not None:
            return
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="studylog-writer", daemon=True)
        self._thread.start()
        await asyncio.wrap_future(ready)  # raises if the log could not be opened or migrated
        self._accepting = True

    async def stop(self) -> None:
        """Drains the queue, commits, closes."""
        if self._thread is None:
            return
        self._accepting = False
        self._queue.put(_STOP)
        thread, self._thread = self._thread, None
        await asyncio.get_running_loop().run_in_executor(None, thread.join)

    def submit(self, fn: Callable[[L], T]) -> Awaitable[T]:
        """Queue `fn(log)`; the awaitable resolves with its result after the COMMIT that included it."""
        return asyncio.wrap_future(self.submit_threadsafe(fn))

    def submit_threadsafe(self, fn: Callable[[L], T]) -> concurrent.futures.Future[T]:
        """Same as `submit`, for code outside the event loop (blocks nothing; `.result()` waits)."""
        if not self._accepting:
            raise RuntimeError("LogWriter is not running (call `await writer.start()` first, and not after stop())")
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((fn, fut))
        return fut

    # --- the writer thread ------------------------------------------------------------------
    def _run(self, ready: concurrent.futures.Future[None]) -> None:
        try:
            log = self._open_log(self.path)
        except BaseException as err:
            ready.set_exception(err)
            return
        ready.set_result(None)
        try:
            stopping, relieved = False, 0.0
            while not stopping:
                batch, stopping = self._collect()
                if not self.writability.writable and time.monotonic() - relieved >= RELIEF_S:
                    self._relieve(log)
                    relieved = time.monotonic()
                if batch:
                    self._commit(log, batch)
                else:
                    self.writability.tick()
        finally:
            log.close()

    def _relieve(self, log: L) -> None:
        """While the log cannot be written: fold the WAL into the database and truncate it to zero
        bytes, once the disk has room for the first. Otherwise the WAL keeps the size it had when
        the disk filled (`journal_size_limit` is larger than a small disk), and a log whose data
        and WAL do not both fit stays full after space came back. Never waits for readers."""
        conn = log.conn
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass  # still no room, or a reader holds the WAL: tried again in RELIEF_S
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def _collect(self) -> tuple[list[Any], bool]:
        """The next batch (empty when the log is not writable and nothing came for a while, so the
        condition can be looked at), and whether the writer is stopping."""
        try:
            first = self._queue.get(timeout=self.writability.wait_s())
        except queue.Empty:
            return [], False
        if first is _STOP:
            return [], True
        batch = [first]
        deadline = time.monotonic() + self.max_delay
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _commit(self, log: L, batch: list[Any]) -> None:
        conn = log.conn
        outcomes: list[tuple[bool, Any]] = []
        changes = conn.total_changes
        try:
            begin_immediate(conn, self.path)  # waits for another process's writer (an audit)
            for fn, _fut in batch:
                conn.execute("SAVEPOINT call")
                try:
                    result = fn(log)
                    if asyncio.iscoroutine(result):
                        result.close()
                        raise TypeError("LogWriter.submit takes a plain function of the StudyLog, not a coroutine")
                    conn.execute("RELEASE call")
                    outcomes.append((True, result))
                except Exception as err:  # this call alone is undone; the rest of the batch commits
                    if not conn.in_transaction:
                        raise  # SQLite rolled the whole transaction back (disk full, I/O error): all of it failed
                    conn.execute("ROLLBACK TO call")
                    conn.execute("RELEASE call")
                    outcomes.append((False, err))
            conn.execute("COMMIT")
        except BaseException as err:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # an I/O error may refuse the rollback too; SQLite undoes it at the next open
            failed = unwritable(err, self.path)
            if failed is not None:
                self.writability.failure(failed.reason, len(batch))
            for _fn, fut in batch:  # an exception each: each awaiter's traceback is its own
                _settle(fut, False, LogUnwritable(failed.message, failed.fix, reason=failed.reason) if failed
                        else StudyLogError(f"study log commit failed: {err}"))
            if not isinstance(err, Exception):
                raise
            return
        self.batches += 1
        self.calls += len(batch)
        refused = 0
        for i, (ok, value) in enumerate(outcomes):
            failed = None if ok else unwritable(value, self.path)
            if failed is not None:  # a statement refused for lack of space, the rest committed
                outcomes[i] = (False, failed)
                refused += 1
                self.writability.failure(failed.reason, 1)
        if not refused and conn.total_changes > changes:  # reads alone say nothing about the disk
            self.writability.success()
        for (ok, value), (_fn, fut) in zip(outcomes, batch):
            _settle(fut, ok, value)


def _settle(fut: concurrent.futures.Future[Any], ok: bool, value: Any) -> None:
    if fut.set_running_or_notify_cancel():  # False when the caller gave up waiting
        fut.set_result(value) if ok else fut.set_exception(value)
