"""The reads an audit needs to resume where an earlier run stopped, now in
`studylog.records.runs` (kept so existing imports work): the unfinished run with the same
parameters, the comments it completed, and attacks already logged (never redone)."""
from __future__ import annotations

from typing import Any

from modlens.studylog.connection import LogConnection
from modlens.studylog.records.runs import completed_keys, find_run, logged_attacks, n_completed

__all__ = ["resumable_run", "completed_keys", "n_completed", "logged_attacks", "find_run"]


def resumable_run(log: LogConnection, dataset: str, path: str, params: dict[str, Any]) -> int | None:
    """The latest unfinished run of this dataset file with exactly these parameters."""
    return find_run(log, dataset, path, params, unfinished_only=True)
