"""Where a chunk's rows go. `Sink` is what the pipeline asks of it; `LogSink` writes the study log
(through the recording services, one transaction per chunk). `parquet.ParquetSink` writes shard
files instead. `record_results` is the one write of scores, normalizations and step errors, used
by `LogSink` and by the daemon (which records live comments' results the same way)."""
from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, Protocol, Sequence

from modlens.chunks.chunk import Chunk, ScoreRow, StepError
from modlens.chunks.register import ItemSource, register_items
from modlens.datasets.base import DatasetItem
from modlens.services.recording import record_normalizations_many, record_scores_many
from modlens.studylog.connection import begin_immediate
from modlens.studylog.records.scores import ScoresWritten
from modlens.studylog.records.texts import Seen, carried, log_state
from modlens.studylog.store import StudyLog

PROGRESS_EVERY_S = 1.0  # how often an audit's progress row is updated
# the most lookups `LogSink` keeps for the chunks that made them (two chunks are in flight at most;
# a lookup no chunk took, such as a recheck's, is dropped with the older ones)
LOOKUPS_KEPT = 4
# An audit's default chunk: items per transaction (`modlens audit --chunk`), also per progress step,
# per Parquet shard and the most a crash leaves to recompute (two chunks where two are in flight: on
# Ray, and locally with a model or remote detector, one computing while the other is written); detectors
# still get calls of their own `max_batch`. Each COMMIT writes again the pages the chunk's random text
# hashes touched. With a free detector over all of Davidson (2026-12-06, docs/PERFORMANCE.md), 4,096 costs
# 1-2 µs per row less than 1,024 (33.4-37.0 vs 35.5-39.2) but holds the write lock 99 ms per chunk instead
# of 31, and a page writer beside it waits 98 ms instead of 32 (p95, bench/bench_audit_chunk.py); once the
# log's hash index has more leaf pages than a chunk has texts, any of these sizes writes about a page per
# new text, so the saving shrinks as the log grows (bench/bench_audit_scale.py).
CHUNK_ITEMS = 1024
# How long one transaction may span chunks that come fast (a cheap detector), when the audit is
# told its log has no other writer (`modlens audit --group-commit SECONDS`): a COMMIT per chunk
# writes the pages its random-keyed indexes (text hashes) touched again and again. In a group each
# chunk is a SAVEPOINT, which copies each page before its first change: with a free detector over all
# of Davidson, 1 s groups cost 42.5-45.6 µs per row against 35.5-39.2 for a COMMIT per chunk
# (2026-12-06, docs/PERFORMANCE.md): the COMMITs it saves (their page writes and fsyncs) cost less than
# its savepoints on the virtual disk measured, and more on a spinning disk or a network file system. Off by default: slower there, and another writer of the
# same log (a daemon acknowledging comments only once they are committed, a second audit) waits for a
# whole group, not one chunk (at 0.25 s its worst wait was 257 ms with writers taking turns at the lock,
# `connection.Turnstile`).
GROUP_COMMIT_S = 0.0


class Sink(Protocol):
    def unscored(self, texts: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
        """detector key -> the texts it still has to score (all, where the sink cannot tell)."""
        ...

    def record(self, chunk: Chunk, *, done: bool = True) -> None:
        """The chunk's items registered (`chunk.comment_ids` set) and everything it produced, in one
        transaction; `done`: its items count as finished (else `mark_done` later)."""
        ...

    def mark_done(self, comment_ids: Sequence[int | None]) -> None: ...

    def progress(self, n_done: int) -> None: ...


def record_results(log: StudyLog, detector_ids: Mapping[str, int], *, scores: Iterable[ScoreRow] = (),
                   normalizations: Iterable[tuple[str, Any]] = (), errors: Iterable[StepError] = (),
                   run_id: int | None = None) -> ScoresWritten:
    """Scores (a later good score replaces an earlier error), normalizations and step errors in one
    transaction; what the write of the scores did."""
    with log.transaction():
        written = record_scores_many(log, detector_ids, scores)
        record_normalizations_many(log, normalizations)
        log.add_step_errors([(e.text, e.step, e.component, e.version, run_id, e.message) for e in errors])
    return written


class LogSink:
    """Rows into the study log, for one run (`run_id`) of items from `source`."""

    def __init__(self, log: StudyLog, source: ItemSource, run_id: int | None, detector_ids: Mapping[str, int],
                 *, group_s: float = 0.0) -> None:
        """`group_s` > 0: recorded chunks share one transaction for up to that long (`GROUP_COMMIT_S`),
        committed by `progress` or `commit` (the caller must call `commit` when it stops). Each chunk's
        writes stay a SAVEPOINT of their own, and an item enters `run_items` with its last result, so
        what a COMMIT leaves is as resumable as before; a crash loses at most the uncommitted chunks."""
        self.log, self.source, self.run_id, self.detector_ids = log, source, run_id, detector_ids
        self._progress_at = -PROGRESS_EVERY_S  # the first chunk's progress is written
        self.group_s = group_s
        self._group_at: float | None = None  # when the open group transaction began
        self._recorded_at = time.monotonic()  # when the last chunk was recorded: a chunk's time is since then
        self._seen: list[Seen] = []  # what `unscored` looked up, oldest first: each chunk's record takes its own
        # what the writes of the recorded chunks' scores did (in a group: as its open transaction holds them)
        self.scores_written = ScoresWritten(0, 0, 0)

    def register(self, items: Sequence[DatasetItem]) -> list[int]:
        return register_items(self.log, self.source, items, self.run_id)

    def unscored(self, texts: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
        # one query for every detector: texts with no score, or only an error. What it found of the
        # texts (hashes, ids) is kept for the chunk's record, which takes it as its own lookup when
        # nothing was written to the log in between but the records of the chunks before it (else it
        # looks the texts up again, under the lock)
        seen, scored = self.log.seen_texts(texts, [self.detector_ids[k] for k in keys])
        self._seen = [*self._seen[1 - LOOKUPS_KEPT:], seen]
        out = {}
        for k in keys:
            done = scored[self.detector_ids[k]]
            if todo := [t for t in texts if t not in done] if done else list(texts):
                out[k] = todo
        return out

    def record(self, chunk: Chunk, *, done: bool = True) -> None:
        """One transaction per chunk (a SAVEPOINT in a group), its items registered in it; an item
        enters `run_items` only with its last result."""
        self._open_group()
        own = self._own_lookup(chunk)
        # the lookups of later chunks, made before this record (an overlapped audit), are carried past
        # its COMMIT (`records.texts.carried`): not inside a group, whose COMMIT is later
        carry = bool(self._seen) and not self.log.conn.in_transaction
        with self.log.transaction(whole=True):  # nothing here goes on after a write raised
            since = log_state(self.log) if carry else None
            if own is not None:
                self.log.known_texts(own)
            chunk.comment_ids = self.register(chunk.items)
            written = record_results(self.log, self.detector_ids, scores=chunk.scores,
                                     normalizations=chunk.normalizations, errors=chunk.errors, run_id=self.run_id)
            self.log.add_variants_many([(cid, v) for cid, gen in zip(chunk.comment_ids, chunk.generated)
                                        if cid is not None for v in gen], self.run_id)
            if done:
                self.mark_done(chunk.comment_ids)
            memo = self.log.text_memo
            # the state COMMIT leaves (it changes neither part of it), read under the lock
            after = log_state(self.log) if since is not None and memo is not None else None
        self.scores_written = self.scores_written.plus(written)  # once its transaction is done
        if since is not None and memo is not None and after is not None:
            self._seen = [s for s in self._seen if carried(s, since, memo, after)]
        now, last = time.monotonic(), self._recorded_at
        self._recorded_at = now
        if self._group_at is not None:
            # keep the write lock over the next chunk only if it (as long as this one) ends within the window
            if now - self._group_at + (now - last) >= self.group_s:
                self.commit()

    def _own_lookup(self, chunk: Chunk) -> Seen | None:
        """The lookup `unscored` made of this chunk's texts (it holds the first item's text), taken out
        with those made before it, which no chunk will take now; None if there is none."""
        probe = chunk.items[0].text if chunk.items else None
        for i, seen in enumerate(self._seen):
            if probe in seen.hashes:
                del self._seen[:i + 1]
                return seen
        return None

    def _open_group(self) -> None:
        if self.group_s > 0 and self._group_at is None and not self.log.conn.in_transaction:
            begin_immediate(self.log.conn, self.log.path)
            self._group_at = time.monotonic()

    def commit(self) -> None:
        """Commits the open group transaction, if any (SQLite may have rolled it back after an I/O error)."""
        if self._group_at is not None:
            self._group_at = None
            if self.log.conn.in_transaction:
                self.log.conn.execute("COMMIT")

    def mark_done(self, comment_ids: Sequence[int | None]) -> None:
        if self.run_id is not None:
            self.log.add_run_items_many(self.run_id, [c for c in comment_ids if c is not None])

    def progress(self, n_done: int) -> None:
        """The run's `n_done`, at most once a second: each write is a transaction (a COMMIT) of its
        own, or the open group's, committed with it; the run's final count is written when it ends
        (`audit.run`)."""
        now = time.monotonic()
        if self.run_id is not None and now - self._progress_at >= PROGRESS_EVERY_S:
            self._progress_at = now
            self.log.set_run_progress(self.run_id, n_done)
            self.commit()  # another process sees the count it reads
