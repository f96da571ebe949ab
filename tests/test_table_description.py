"""The one table description (`studylog/tables.py`) against the schema SQLite reports: a fresh log
(created from it by `schema.create_script`) and a log upgraded from schema 1 through
`schema.MIGRATIONS` must hold exactly the declared tables, columns (names, types, not-null,
defaults, primary key), unique constraints, indexes and foreign keys."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from modlens.studylog.schema import MIGRATIONS, create_script
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import EXPORT_TABLES, EXPORTS, TABLE, TABLES, col


def shape(con: sqlite3.Connection) -> dict[str, dict]:
    """Everything SQLite reports about each table's structure."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    out = {}
    for name in names:
        columns = [(r[1], r[2], bool(r[3]), r[4], r[5]) for r in con.execute(f"PRAGMA table_info({name})")]
        indexes = set()
        for _seq, index, unique, origin, partial in con.execute(f"PRAGMA index_list({name})"):
            cols = tuple(r[2] for r in con.execute(f"PRAGMA index_info({index})"))
            # automatic indexes (UNIQUE, composite PRIMARY KEY) are named by SQLite, not by us
            indexes.add((index if origin == "c" else origin, bool(unique), bool(partial), cols))
        foreign = {(r[3], r[2], r[4]) for r in con.execute(f"PRAGMA foreign_key_list({name})")}
        without_rowid = bool(con.execute("SELECT wr FROM pragma_table_list WHERE name = ?", (name,)).fetchone()[0])
        out[name] = {"columns": columns, "indexes": indexes, "foreign_keys": foreign, "without_rowid": without_rowid}
    return out


def declared() -> dict[str, dict]:
    """The same, read from the description alone."""
    out = {}
    for t in TABLES:
        columns = [(c.name, c.type, c.not_null, c.default,
                    t.primary_key.index(c.name) + 1 if c.name in t.primary_key else 0) for c in t.columns]
        indexes = {(i.name, False, False, i.columns) for i in t.indexes}
        indexes |= {("u", True, False, u) for u in t.unique}
        if len(t.primary_key) > 1 or TABLE[t.name].column(t.primary_key[0]).type != "INTEGER":
            indexes.add(("pk", True, False, t.primary_key))  # an INTEGER PRIMARY KEY is the rowid
        foreign = {(c.name, *c.references.rstrip(")").split("(")) for c in t.columns if c.references}
        out[t.name] = {"columns": columns, "indexes": indexes, "foreign_keys": foreign, "without_rowid": t.without_rowid}
    return out


@pytest.fixture
def migrated(tmp_path) -> dict[str, dict]:
    db = tmp_path / "fresh.sqlite"
    with StudyLog(db) as log:
        assert log.user_version() == len(MIGRATIONS)
    con = sqlite3.connect(db)
    try:
        return shape(con)
    finally:
        con.close()


def test_the_migrated_schema_is_the_described_one(migrated):
    want = declared()
    assert sorted(migrated) == sorted(want), "tables of the migrations and of studylog/tables.py differ"
    for name in want:
        for part in ("columns", "indexes", "foreign_keys", "without_rowid"):
            assert migrated[name][part] == want[name][part], f"{name} {part}: migrations vs studylog/tables.py"


def test_the_generated_create_table_text_builds_the_same_schema(migrated):
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(create_script())
        assert shape(con) == migrated
    finally:
        con.close()


def test_every_table_is_exported_and_every_export_column_is_described():
    carried = {t.carries for t in EXPORT_TABLES if t.carries}
    assert carried == set(TABLE), f"tables without an export: {sorted(set(TABLE) - carried)}"
    for table in TABLES:
        export = EXPORTS[table.name]  # a table's export has its name
        assert export.carries == table.name
        names = {c.name for c in export.columns}
        missing = [c.name for c in table.columns if c.name not in names and c.name not in export.omits]
        assert not missing, f"export {table.name} lacks {missing} (add them, or say in `omits` why not)"
    for export in EXPORT_TABLES:
        assert all(c.doc and c.type in {"int", "float", "str", "bool"} for c in export.columns), export.name


def test_an_older_log_upgraded_through_every_migration_has_the_described_schema(tmp_path):
    """A log created at schema 1 and upgraded later ends where a fresh one starts."""
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript(MIGRATIONS[0] + "PRAGMA user_version = 1;")
    con.close()
    with StudyLog(db):
        pass
    con = sqlite3.connect(db)
    try:
        assert shape(con) == declared()
    finally:
        con.close()


def test_a_column_spec_the_description_cannot_read_is_refused():
    assert col("n", "INTEGER NOT NULL DEFAULT 0 REFERENCES t(c)", "doc").references == "t(c)"
    with pytest.raises(ValueError, match="cannot read spec"):
        col("n", "INTEGER NOT NUL", "doc")


def test_the_sql_in_docs_is_the_generated_one():
    text = (Path(__file__).resolve().parents[1] / "docs" / "DATA.md").read_text(encoding="utf-8")
    assert create_script().rstrip() in text, "regenerate docs/DATA.md: python -m modlens.studylog.dictionary --write"
