"""The study log's schema against a committed snapshot (tests/fixtures/studylog_schema.json).

The snapshot holds, per schema version, `sqlite_master` of a log at that version (every table and
index, in the order SQLite lists them, each `CREATE` text with its whitespace collapsed), and for the
current version what SQLite reports of each table: columns with types, defaults, not-null and
primary-key position, indexes with their columns, foreign keys, rowid. Versions 1 to 5 were taken
from the migrations as they stood before the schema was generated from `studylog/tables.py`; a
log written by any of them must still open, upgrade step by step to the next version's snapshot,
and end at the current one, exactly as a fresh log starts.

A new schema version adds its snapshot (`python tests/test_studylog_schema_snapshot.py --write`
adds the current version and never rewrites an older one); a change to an existing version's
schema fails here.
"""
from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from modlens.studylog import schema
from modlens.studylog.store import StudyLog

SNAPSHOT = Path(__file__).resolve().parent / "fixtures" / "studylog_schema.json"


def canonical(sql: str) -> str:
    """A `CREATE` text with its layout removed (ALTER TABLE appends columns in its own layout)."""
    return re.sub(r"\s*([(),])\s*", r"\1", re.sub(r"\s+", " ", sql)).strip()


def master(con: sqlite3.Connection) -> list[list[Any]]:
    """`sqlite_master` in SQLite's order: type, name, table, CREATE text (None for automatic indexes)."""
    return [[kind, name, table, canonical(sql) if sql else None] for kind, name, table, sql in con.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")]


def structure(con: sqlite3.Connection) -> dict[str, Any]:
    """What SQLite itself reports of every table (not read from any CREATE text)."""
    out: dict[str, Any] = {}
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    for name in tables:
        info = con.execute("SELECT type, ncol, wr, strict FROM pragma_table_list WHERE name = ?", (name,)).fetchone()
        indexes = []
        for _seq, index, unique, origin, partial in con.execute(f"PRAGMA index_list([{name}])"):
            cols = [list(r) for r in con.execute(f"PRAGMA index_xinfo([{index}])")]
            indexes.append([index, unique, origin, partial, cols])
        out[name] = {
            "table": list(info),
            "columns": [list(r) for r in con.execute(f"PRAGMA table_xinfo([{name}])")],
            "indexes": sorted(indexes),
            "foreign_keys": [list(r) for r in con.execute(f"PRAGMA foreign_key_list([{name}])")],
        }
    return out


def dump(path: Path) -> dict[str, Any]:
    con = sqlite3.connect(path)
    try:
        return {"user_version": con.execute("PRAGMA user_version").fetchone()[0],
                "master": master(con), "structure": structure(con)}
    finally:
        con.close()


def snapshot() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def old_log(path: Path, version: int) -> Path:
    """A log as a modlens of that schema version left it, built from the snapshot's CREATE texts."""
    con = sqlite3.connect(path)
    with con:
        for _kind, _name, _table, sql in snapshot()["versions"][str(version)]["master"]:
            if sql:
                con.execute(sql)
        con.execute(f"PRAGMA user_version = {version}")
    con.close()
    return path


def test_the_snapshot_covers_every_schema_version():
    assert sorted(map(int, snapshot()["versions"])) == list(range(1, schema.SCHEMA_VERSION + 1)), (
        "a new schema version needs its snapshot: python tests/test_studylog_schema_snapshot.py --write")


def test_a_fresh_log_has_the_snapshot_schema(tmp_path):
    db = tmp_path / "fresh.sqlite"
    StudyLog(db).close()
    assert dump(db) == snapshot()["versions"][str(schema.SCHEMA_VERSION)]


@pytest.mark.parametrize("version", range(1, schema.SCHEMA_VERSION))
def test_a_log_of_an_older_version_upgrades_to_the_snapshot_schema(tmp_path, version):
    db = old_log(tmp_path / "old.sqlite", version)
    StudyLog(db).close()
    assert dump(db) == snapshot()["versions"][str(schema.SCHEMA_VERSION)]


@pytest.mark.parametrize("version", range(1, schema.SCHEMA_VERSION))
def test_each_upgrade_step_leaves_the_next_versions_schema(tmp_path, monkeypatch, version):
    """One step at a time (a modlens of the next version opening the log): every intermediate
    schema is the one that version wrote."""
    db = old_log(tmp_path / "old.sqlite", version)
    monkeypatch.setattr("modlens.studylog.migrate.SCHEMA_VERSION", version + 1)
    StudyLog(db).close()
    assert dump(db) == snapshot()["versions"][str(version + 1)]


@pytest.mark.parametrize("version", range(1, schema.SCHEMA_VERSION))
def test_a_fresh_log_of_an_older_version_has_that_versions_schema(tmp_path, monkeypatch, version):
    """What tests that play an older participant rely on (a modlens of that version creating its log)."""
    db = tmp_path / "fresh.sqlite"
    monkeypatch.setattr("modlens.studylog.migrate.SCHEMA_VERSION", version)
    StudyLog(db).close()
    assert dump(db) == snapshot()["versions"][str(version)]


def test_gold_toxic_labels_of_a_schema_3_log_move_into_label_sets(tmp_path):
    """The data the schema-4 step moves: gold `toxic` labels become one label set per source."""
    db = old_log(tmp_path / "v3.sqlite", 3)
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO texts (text_id, text_hash, text) VALUES (1, 'h1', 'a'), (2, 'h2', 'b')")
        con.execute("INSERT INTO comments (comment_id, platform, comment_key, text_id, original_length, first_seen) "
                    "VALUES (1, 'dataset:x', 'k1', 1, 1, 't'), (2, 'dataset:x', 'k2', 2, 1, 't')")
        con.execute("INSERT INTO labels (comment_id, name, value, source) VALUES (1, 'toxic', '1', 'x'), "
                    "(2, 'toxic', '0', 'x'), (2, 'toxic', '1', 'y'), (1, 'target', 'women', 'x')")
    con.close()
    with StudyLog(db) as log:
        got = log.query("SELECT s.source, s.definition, g.comment_id, g.value FROM gold_labels g "
                        "JOIN label_sets s USING (label_set_id) ORDER BY s.source, g.comment_id")
        left = log.query("SELECT comment_id, name, value, source FROM labels")
    assert [(r["source"], r["comment_id"], r["value"]) for r in got] == [("x", 1, "1"), ("x", 2, "0"), ("y", 2, "1")]
    assert {r["definition"] for r in got} == {"as recorded before label sets (schema 3)"}
    assert left == [{"comment_id": 1, "name": "target", "value": "women", "source": "x"}]


def _write() -> None:
    """Add the current schema version's snapshot; older versions stay as they were written."""
    import tempfile

    data = snapshot() if SNAPSHOT.exists() else {"versions": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for version in range(1, schema.SCHEMA_VERSION + 1):
            if str(version) in data["versions"]:
                continue
            import modlens.studylog.migrate as migrate
            saved, migrate.SCHEMA_VERSION = migrate.SCHEMA_VERSION, version  # type: ignore[misc]
            try:
                db = Path(tmp) / f"v{version}.sqlite"
                StudyLog(db).close()
                data["versions"][str(version)] = dump(db)
            finally:
                migrate.SCHEMA_VERSION = saved  # type: ignore[misc]
    text = json.dumps(data, indent=1, sort_keys=True)
    # one line per innermost list (a sqlite_master row, a column, an index column): reviewable diffs
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    SNAPSHOT.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":  # python tests/test_studylog_schema_snapshot.py --write
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    _write()
