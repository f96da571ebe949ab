"""Bringing a study log to this modlens's schema (`PRAGMA user_version`), in one write transaction:
a new log (version 0) is created whole from the table declaration (`schema.create_script`); a log
an older modlens wrote takes the pending steps, `schema.MIGRATIONS[n]` from version n to n + 1."""
from __future__ import annotations

import sqlite3

from modlens.errors import UPGRADE
from modlens.studylog import page_address
from modlens.studylog.connection import (LogConnection, StudyLogError, another_programs_database, begin_immediate,
                                        cannot_open, wait_for_lock)
from modlens.studylog.schema import MIGRATIONS, SCHEMA_VERSION, create_script


def user_version(db: LogConnection) -> int:
    return int(wait_for_lock(db.conn, db.path, lambda: db.conn.execute("PRAGMA user_version").fetchone()[0]))


def split_sql(script: str) -> list[str]:
    """Split a migration into statements, so it can run inside one transaction
    (`executescript` would commit first)."""
    statements, buf = [], ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n\t;"):
                statements.append(buf.strip())
            buf = ""
    if buf.strip(" \n\t;"):
        raise StudyLogError(f"incomplete SQL statement in migration: {buf.strip()[:80]!r}")
    return statements


def newer_schema(db: LogConnection, version: int) -> StudyLogError:
    """The refusal of a log whose schema `version` is above this modlens's, by a reader and a writer
    alike: no writer here can migrate it back, only upgrading modlens helps."""
    return StudyLogError(f"{db.path} has schema version {version}, newer than this modlens reads "
                         f"({SCHEMA_VERSION}): a newer modlens wrote it", fix=UPGRADE)


def apply_migrations(db: LogConnection) -> None:
    """A new log's schema, or an older log's pending migrations, once: a second process opening the same
    log waits for the lock and finds them applied."""
    version = user_version(db)
    if version > SCHEMA_VERSION:
        raise newer_schema(db, version)
    if version == SCHEMA_VERSION:
        return
    conn = db.conn
    begin_immediate(conn, db.path)
    try:
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])  # re-read under the lock
        if current == 0:  # a new log: the declared schema at once (tests of older participants pass their version)
            for statement in split_sql(create_script(SCHEMA_VERSION)):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        else:
            page_address.register(conn)  # the page rules schema 7's step applies (modlens_page_*)
            for number in range(current, SCHEMA_VERSION):
                for statement in split_sql(MIGRATIONS[number]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def check_readable(db: LogConnection, older_ok: bool = False) -> int:
    """A read-only open: the log must be a modlens log at this schema version (it cannot migrate); its
    version. A log SQLite cannot open now (its side files cannot be made) is `LogUnwritable`, not "not a
    log". `older_ok`: an older version is returned too (0 for a file with no tables), for a caller that
    migrates the log itself; another program's database and a newer modlens's log are refused all the same."""
    try:
        version = user_version(db)
    except sqlite3.DatabaseError as err:
        raise cannot_open(err, db.path) or StudyLogError(f"{db.path}: not a modlens study log ({err})") from None
    if version == SCHEMA_VERSION:
        return version
    if version > SCHEMA_VERSION:
        raise newer_schema(db, version)
    if version == 0 and (foreign := another_programs_database(db.conn, db.path)) is not None:
        raise foreign
    if older_ok:
        return version
    raise StudyLogError(
        f"{db.path} has schema version {version}, this modlens reads {SCHEMA_VERSION}; "
        "open it once for writing (e.g. `modlens serve --db PATH`) to migrate it")
