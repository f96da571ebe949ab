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
