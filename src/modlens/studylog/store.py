"""Synchronous access to a study log (SQLite through sqlite-utils) and its single async writer.

CONTRACT (implemented by the study-log work; the daemon and audits code against it):
- `StudyLog(path)` opens the file in WAL mode, enables foreign keys, applies pending
  migrations from `schema.MIGRATIONS`. `StudyLog(path, readonly=True)` never writes
  (export, report), so readers never block the writer.
- Every write method is idempotent: calling it again with the same natural key returns the
  existing row id and inserts nothing.
- `LogWriter` owns one StudyLog in one dedicated thread. `await writer.submit(fn)` queues
  `fn(log)`; the writer batches queued calls into one transaction (each call in its own
  SAVEPOINT so one failing call does not undo the others) and resolves the awaitable only
  after COMMIT returned. A rating is acknowledged to a client only after that.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from modlens.perturb.base import Variant

T = TypeVar("T")


class StudyLog:
    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        raise NotImplementedError

    # --- lifecycle -------------------------------------------------------------------
    def close(self) -> None: ...
    def integrity_check(self) -> str: ...  # "ok" when PRAGMA integrity_check passes
    def counts(self) -> dict[str, int]: ...  # rows per table

    # --- writes (idempotent) ---------------------------------------------------------
    def ensure_study(self, study_id: str, title: str, config: dict[str, Any]) -> None: ...
    def ensure_rater(self, study_id: str, rater_id: str, consent_at: str | None) -> None: ...
    def start_session(self, session_id: str, study_id: str, rater_id: str | None, client: str,
                      client_version: str | None, protocol_version: int | None) -> None: ...
    def end_session(self, session_id: str) -> None: ...
    def ensure_page(self, platform: str, page_key: str, url: str | None, title: str | None) -> int: ...
    def text_id(self, text: str) -> int: ...
    def add_comment(self, platform: str, comment_key: str, page_id: int | None, text: str, *,
                    parent_key: str | None = None, author_hash: str | None = None,
                    time_shown: str | None = None, truncated: bool = False,
                    original_length: int | None = None) -> int: ...
    def add_sighting(self, comment_id: int, session_id: str) -> None: ...
    def add_label(self, comment_id: int, name: str, value: Any, source: str) -> None: ...
    def ensure_detector(self, name: str, version: str, toxicity_label: str | None,
                        threshold: float | None, config: dict[str, Any]) -> int: ...
    def add_score(self, text: str, detector_id: int, labels: dict[str, float] | None,
                  toxicity: float | None, latency_ms: float | None, error: str | None) -> None: ...
    def get_score(self, text: str, detector_id: int) -> dict[str, Any] | None: ...
    def add_normalization(self, source_text: str, normalizer: str, version: str,
                          result_text: str, edits: list[dict[str, Any]]) -> None: ...
    def add_variant(self, comment_id: int, variant: Variant, run_id: int | None = None) -> int: ...
    def add_rating(self, study_id: str, rater_id: str, client_rating_id: str, session_id: str | None,
                   comment_id: int, values: dict[str, str], anchors: dict[str, Any] | None,
                   derived_toxicity: str | None, inconsistent: bool,
                   time_spent_ms: int | None) -> tuple[int, bool]: ...  # (rating_id, newly created)
    def start_run(self, dataset: str, path: str | None, params: dict[str, Any]) -> int: ...
    def add_run_item(self, run_id: int, comment_id: int) -> None: ...
    def finish_run(self, run_id: int, status: str) -> None: ...


class LogWriter:
    def __init__(self, path: str | Path, *, max_batch: int = 256, max_delay_ms: float = 20.0) -> None:
        raise NotImplementedError

    async def start(self) -> None: ...
    async def stop(self) -> None: ...  # drains the queue, commits, closes
    def submit(self, fn: Callable[[StudyLog], T]) -> Awaitable[T]: ...
