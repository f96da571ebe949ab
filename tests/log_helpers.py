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



def add_sighting(log, comment_id: int, session_id: str) -> None:
    """A sighting as the modlens that wrote `log` (a StudyLog) would write it: through the record
    function, or, in a log of a schema before `sightings.text_id` (tests of older participants cap
    the migrations), without that column, as those versions did."""
    if "text_id" in {row[1] for row in log.conn.execute("PRAGMA table_info(sightings)")}:
        log.add_sighting(comment_id, session_id)
        return
    log.conn.execute("INSERT OR IGNORE INTO sightings (comment_id, session_id, seen_at) VALUES (?, ?, ?)",
                     (comment_id, session_id, "2025-05-01T10:00:00Z"))


def as_schema(db, version: int) -> None:
    """A log written by this modlens taken back to schema `version`, as an older modlens left it: the
    tables, columns and indexes later versions added are dropped (read from the schema's own deltas,
    so a new version needs no edit here), the rows they held with them."""
    from modlens.studylog.schema import DELTAS

    con = sqlite3.connect(db)
    try:
        with con:
            for delta in reversed(DELTAS[version:]):
                for _table, name in delta.indexes:
                    con.execute(f"DROP INDEX IF EXISTS {name}")
                for table, name in reversed(delta.columns):
                    for (index,) in con.execute("SELECT il.name FROM sqlite_master m, pragma_index_list(m.name) il, "
                                                "pragma_index_info(il.name) ii WHERE m.name = ? AND ii.name = ? "
                                                "AND il.origin = 'c'", (table, name)).fetchall():
                        con.execute(f"DROP INDEX {index}")
                    con.execute(f"ALTER TABLE {table} DROP COLUMN {name}")
                for table in reversed(delta.tables):
                    con.execute(f"DROP TABLE {table}")
            con.execute(f"PRAGMA user_version = {version}")
    finally:
        con.close()


def table_counts(db, tables) -> dict[str, int]:
    """Rows per table in `tables`, read on a connection of its own (it sees committed rows only)."""
    return {t: rows(db, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def refuse_inserts(db, table: str) -> None:
    """A trigger, real to SQLite: the study log refuses every insert into `table` ('refused by the test')."""
    con = sqlite3.connect(db)
    try:
        con.execute(f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
                    "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        con.commit()
    finally:
        con.close()

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
