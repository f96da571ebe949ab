"""Deleting a withdrawn participant's data from the researcher's merged log (`modlens merge
--forget-withdrawn`; docs/MULTI.md).

A bundle exported after a withdrawal leaves the participant's data out and carries their withdrawn
consents, so the merged log learns of it; what earlier bundles brought stays until this deletes it.
The dry run and the deletion run the same statements in one transaction: the deletion on the log, the
dry run on a copy of it in memory (taken through a read-only connection, migrated as the deletion's open
migrates the log), so what it lists is what the deletion would delete and the log's file is never
opened for writing. Which rows go: `studylog/records/forget.py`.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from modlens.errors import ModlensError
from modlens.studylog import migrate
from modlens.studylog.connection import LogConnection
from modlens.studylog.records.forget import forget_withdrawn as _forget
from modlens.studylog.schema import SCHEMA_VERSION
from modlens.studylog.store import StudyLog


@dataclass
class _Copy:
    """The dry run's copy of the log, in memory: what `migrate.apply_migrations` reads of a log (its
    connection, and the path its messages name: the log's own)."""
    conn: sqlite3.Connection
    path: Path


def forget_withdrawn(db: str | Path, *, delete: bool) -> dict[str, Any]:
    """Per rater who withdrew, the rows of theirs the merged log `db` holds (and what goes with them):
    deleted, in one transaction, when `delete`; else counted on a copy in memory (the file is only read).
    {"raters": [...] (records/forget.py), "schema_version": the log's before this ran, "migrated_to":
    the version the deletion took it to (or, for the dry run, would take it to) first, or None}."""
    path = Path(db)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such study log")
    source = LogConnection(path, readonly=True)
    try:
        version = _merged_log_version(source)
        if not delete:
            copy = sqlite3.connect(":memory:", isolation_level=None)
            try:
                source.conn.backup(copy)
                copy.execute("PRAGMA foreign_keys = ON")  # as a writer's connection has it
                migrate.apply_migrations(cast(LogConnection, _Copy(copy, path)))
                copy.execute("BEGIN")
                raters = _forget(copy)
            finally:
                copy.close()
    finally:
        source.close()  # a log read without locks: refused here if it changed meanwhile
    if delete:  # the writer's open migrates an older log first, as every writer does
        with StudyLog(path) as log, log.transaction():
            raters = _forget(log.conn)
    return {"raters": raters, "schema_version": version,
            "migrated_to": SCHEMA_VERSION if version < SCHEMA_VERSION else None}


def _merged_log_version(source: LogConnection) -> int:
    """The schema version of the log `source` reads, refused (before anything opens it for writing) when
    it is not a merged study log or a newer modlens wrote it."""
    version = migrate.check_readable(source, older_ok=True)  # an older log: migrated by the deletion's open
    merged = source.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'bundles'").fetchone() \
        and source.conn.execute("SELECT 1 FROM bundles LIMIT 1").fetchone()
    if not merged:
        raise ModlensError(f"{source.path} is not a merged study log (no bundles merged into it)",
                           fix="give the log `modlens merge --out` wrote; a participant's own log keeps "
                               "their data on their computer and leaves a withdrawn rater out of bundles")
    return version


def still_held(withdrawn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of the raters who withdrew (`records/forget.held`), those whose own rows (sessions, ratings,
    sightings, task reviews, `raters` row) the merged log holds: those `--forget-withdrawn` would delete
    rows of. What `merge` says after merging, so a bundle exported before a withdrawal and merged after
    it (or after a deletion) does not bring their data back unsaid."""
    return [r for r in withdrawn if any(r[k] for k in ("sessions", "ratings", "sightings", "reviews", "raters"))]
