"""Reading a study log in tests, straight through sqlite3 (not the code under test)."""
from __future__ import annotations

import sqlite3


def sql(db, query, params=()) -> list[dict]:
    """The rows of `query` as dicts."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(query, params)]
    finally:
        con.close()


def rows(db, query, *args) -> list[tuple]:
    """The rows of `query` as tuples."""
    con = sqlite3.connect(db)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()



def table_counts(db, tables) -> dict[str, int]:
    """Rows per table in `tables`, read on a connection of its own (it sees committed rows only)."""
    return {t: rows(db, f"SELECT count(*) FROM {t}")[0][0] for t in tables}

# Conditions real to SQLite on the code's own connection: every write that needs a new page fails
# with SQLITE_FULL as on a full filesystem (tests/test_studylog_full.py); every write fails with
# SQLITE_READONLY.
FULL, READ_ONLY = "PRAGMA max_page_count = {pages}", "PRAGMA query_only = 1"


def log_that_stops(after: str | None, pragma: str = FULL) -> type:
    """A StudyLog class that stops taking writes (`pragma`) right after its first call of the
    method named `after` (None: from the moment it is opened). Its `stopped` says whether it did.
    A new class per call, so no test sees another's state."""
    from modlens.studylog.store import StudyLog

    def stop(log: StudyLog) -> None:
        pages = log.conn.execute("PRAGMA page_count").fetchone()[0]
        log.conn.execute(pragma.format(pages=pages))
        Stopping.stopped = True

    class Stopping(StudyLog):
        stopped = False

        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            if after is None:
                stop(self)

    if after is not None:
        method = getattr(StudyLog, after)

        def then_stop(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            out = method(self, *args, **kwargs)
            if not Stopping.stopped:
                stop(self)
            return out

        setattr(Stopping, after, then_stop)
    return Stopping
