"""Recovery at start: the next daemon finishes what a killed one (SIGKILL, power loss) left undone.

A daemon acknowledges a rating once it is committed, but it sends a page's scores before it records
them; killed in between, the log holds rated comments without scores, and sessions with no end.
At start, before the first connection is accepted (`recovering`, entered by `run.running`):

- every session of this study still open belongs to the daemon that died: it is closed with
  `ended_by` = 'recovery' and `ended_at` = its last activity (latest sighting or rating), not now;
  unless another daemon serves the log now (`Serving`: a second `modlens serve` on it, even one
  that is about to stop because its port is taken, or given a symlink to it), or this daemon cannot
  tell (the lock cannot be held): the sessions still open may be
  another daemon's, and stay open;
- a background task scores the comments of this study that lack a score row from a loaded
  detector, through the engine and recorded as live scores are, in small batches. Live work comes
  first: a batch waits while any connection has a page in the pipeline or a detector's batcher has
  queue, and only one batch is in flight, so a new page never waits behind more than one batch.

A clean stop ends the sessions this daemon opened that are still open with `ended_by` = 'shutdown'
(a client that closes its socket ends its own session as 'client'); never another daemon's. A
session that ended while the log could not be written is ended then as it happened (who ended it,
and when); one the stop cannot write either is closed by the next start as 'recovery'.
"""
from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from functools import partial
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Callable, Iterable

from modlens.chunks import record_results
from modlens.datasets.base import blank_reason
from modlens.live.service import LiveService
from modlens.live.session import LiveSession
from modlens.services.recording import score_rows
from modlens.studylog.records.scores import texts_lacking_scores
from modlens.studylog.store import StudyLog
from modlens.studylog.connection import FILE_MODE, LogUnwritable

# the daemon's log: its lines pass the daemon's secret scrubber (`modlens.protocol.security`)
log = logging.getLogger("modlens.daemon")

SERVING_SUFFIX = "-serving"  # `<log>-serving`: the lock every daemon serving the log holds (`Serving`)
BATCH_TEXTS = 16      # texts per recovery batch: one batcher round, so live texts are not held long
BUSY_PAUSE_S = 0.25   # how long a batch waits before looking at the live queue again
PAGE_TEXTS = 512      # texts looked up per query (each query scans the study's sightings once)


class Serving:
    """Which daemons serve a study log now: each holds a shared `flock` on `<log>-serving` (0600, never
    removed) from before its recovery until after its stop. A daemon that takes it exclusively
    first is the only one: sessions left open were a dead daemon's. The kernel drops the lock of a
    daemon that dies, so a killed one counts for nobody.

    The lock file is named after the log's real path (symlinks resolved), so a daemon given a symlink
    to the log and one given the log itself hold the same lock. A hard link is not resolved: a daemon
    given another hard link of the log holds another lock (SQLite names the -wal after the path too,
    so two names of one log are not one log to it either: serve a log by one name)."""

    def __init__(self, db: Path) -> None:
        real = Path(os.path.realpath(db))
        self.path = real.with_name(real.name + SERVING_SUFFIX)
        self._fd: int | None = None

    def enter(self) -> bool | None:
        """Hold the lock (shared) from now on; whether this daemon is the only one serving the log
        (None: unknown, a folder where the file cannot be made or a file system without flock)."""
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                alone = True
            except BlockingIOError:
                alone = False
            fcntl.flock(self._fd, fcntl.LOCK_SH)  # waits only while another daemon makes the same check
        except OSError:  # no flock here (ENOLCK)
            self.close()
            return None
        return alone

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # drops the lock
            self._fd = None


def live_work_waiting(service: LiveService, sessions: Iterable[LiveSession]) -> bool:
    """A page in the pipeline of some connection, or texts queued at a detector."""
    return any(s.pending for s in sessions) or any(b["queued"] for b in service.queue()["batchers"].values())


async def rescore_missing(service: LiveService, study_id: str, busy: Callable[[], bool], *,
                          batch: int = BATCH_TEXTS, page: int = PAGE_TEXTS, pause_s: float = BUSY_PAUSE_S) -> int:
    """Score and record the study's comment texts that lack a score from a loaded detector;
    the number of texts scored. Each batch waits while `busy()`."""
    ids = {k: i for k, i in service.detector_ids.items() if k in service.engine.runners}
    key_of = {i: k for k, i in ids.items()}
    after, done = 0, 0
    while ids:
        def lacking(lg: StudyLog, after: int = after) -> list[tuple[int, str, list[int]]]:
            return texts_lacking_scores(lg, study_id, ids.values(), after=after, limit=page)

        todo: list[tuple[int, str, list[int]]] = await service.write(lacking)
        if not todo:
            break
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]
            while busy():
                await asyncio.sleep(pause_s)
            chunk = [row for row in chunk if blank_reason(row[1]) is None]  # a blank text is never scored
            if not chunk:
                continue
            texts = [text for _, text, _ in chunk]
            only = sorted({key_of[d] for _, _, missing in chunk for d in missing})
            results = await service.engine.score(texts, only=only)
            # only the missing (text, detector) pairs: a score already recorded stays as it is
            rows = [row for (_, _, missing), got, text in zip(chunk, results, texts)
                    for row in score_rows([text], [{key_of[d]: got[key_of[d]] for d in missing}])]
            await service.write(partial(record_results, detector_ids=ids, scores=rows))
            done += len(chunk)
        after = todo[-1][0]
    return done


async def _recover(service: LiveService, busy: Callable[[], bool]) -> None:
    try:
        n = await rescore_missing(service, service.study.study_id, busy)
    except LogUnwritable as err:
        log.warning("recovery: scoring the comments left unscored stopped (%s); the next start goes on", err.reason)
        return
    except Exception:
        log.exception("recovery: scoring the comments left unscored stopped")
        return
    if n:
        log.info("recovery: scored %d comment texts a previous daemon had not recorded", n)


@asynccontextmanager
async def recovering(service: LiveService) -> AsyncIterator[None]:
    """Close the dead daemon's sessions (only when this daemon knows it is the only one serving the
    log) and rescore in the background while the block runs (live work first: the service's open
    sessions and batchers); at a clean stop, end this daemon's own sessions still open as 'shutdown'."""
    study_id = service.study.study_id
    serving = Serving(service.writer.path)
    try:
        alone = serving.enter()
        if alone is False:
            log.warning("recovery: another daemon serves the study log %s now; the sessions open in it are left "
                        "open (they may be its own)", service.writer.path)
        elif alone is None:
            log.warning("recovery: cannot tell whether another daemon serves the study log %s now (the lock %s "
                        "cannot be held); the sessions open in it are left open (they "
                        "may be another daemon's)", service.writer.path, serving.path)
        else:
            closed = await service.write(lambda lg: lg.close_open_sessions(study_id, "recovery"))
            if closed:
                log.warning("recovery: closed %d session(s) left open in the study log, at their last activity (a "
                            "previous daemon did not stop cleanly, or could not write their end)", closed)
        task = asyncio.create_task(_recover(service, lambda: live_work_waiting(service, service.sessions)))
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            # this daemon's sessions whose end is not written (never another's): those that ended meanwhile
            # as they did, the others now, by this stop
            own = {sid: service.ends_owed.get(sid, ("shutdown", None)) for sid in service.unended}

            def end_own(lg: StudyLog) -> None:
                for sid, (ended_by, at) in own.items():
                    lg.end_session(sid, ended_by, at)

            try:
                if own:
                    await service.write(end_own)
            except LogUnwritable as err:  # a full disk at shutdown: the next start closes them as 'recovery'
                log.warning("stopping: the open sessions stay open in the study log (%s); the next start closes "
                            "them", err.reason)
    finally:
        serving.close()
