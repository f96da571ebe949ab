"""Deleting a withdrawn participant's data from the researcher's merged log (`modlens merge
--forget-withdrawn`; docs/MULTI.md).

A bundle exported after a withdrawal leaves the participant's data out and carries their withdrawn
consents, so the merged log learns of it; what earlier bundles brought stays until this deletes it.
The dry run and the deletion are the same statements in one transaction: the dry run rolls it back,
so what it lists is what the deletion would delete. Which rows go: `studylog/records/forget.py`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from modlens.errors import ModlensError
from modlens.studylog.records.forget import forget_withdrawn as _forget, withdrawn_raters
from modlens.studylog.store import StudyLog


class _DryRun(ModlensError):
    """Raised inside the transaction to roll a dry run back (caught here: never reaches a user)."""


def forget_withdrawn(db: str | Path, *, delete: bool) -> list[dict[str, Any]]:
    """Per rater who withdrew, the rows of theirs the merged log `db` holds (and what goes with them):
    deleted, in one transaction, when `delete`; else only counted (nothing changes)."""
    path = Path(db)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such study log")
    with StudyLog(path) as log:
        if not log.conn.execute("SELECT 1 FROM bundles LIMIT 1").fetchone():
            raise ModlensError(f"{path} is not a merged study log (no bundles merged into it)",
                               fix="give the log `modlens merge --out` wrote; a participant's own log keeps "
                                   "their data on their computer and leaves a withdrawn rater out of bundles")
        result: list[dict[str, Any]] = []
        try:
            with log.transaction():
                result = _forget(log.conn)
                if not delete:
                    raise _DryRun("dry run: rolled back")
        except _DryRun:
            pass
        return result


def still_held(db: str | Path) -> list[dict[str, Any]]:
    """The raters who withdrew whose sessions or ratings the merged log `db` holds, with how many: what
    `merge` says after merging, so a bundle exported before a withdrawal and merged after it (or after
    a deletion) does not bring their data back unsaid."""
    with StudyLog(db, readonly=True) as log:
        out = []
        for study_id, rater_id, at in withdrawn_raters(log.conn):
            sessions, ratings = log.conn.execute(
                "SELECT (SELECT count(*) FROM sessions WHERE study_id = :s AND rater_id = :r), "
                "(SELECT count(*) FROM ratings WHERE study_id = :s AND rater_id = :r)",
                {"s": study_id, "r": rater_id}).fetchone()
            if sessions or ratings:
                out.append({"study_id": study_id, "rater_id": rater_id, "withdrawn_at": at, "sessions": sessions,
                            "ratings": ratings})
        return out
