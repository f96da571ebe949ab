"""Shard folders from someone else: `modlens import` checks every shard against the shard
schema (types, required columns, JSON fields, the manifest) before it writes anything, refuses a bad
one in one line naming the file and the column, and leaves the target log byte for byte as it was,
the status of every run included. The hostile folders are built from a clean one written by the real
Parquet sink (builders shared with bench/bench_hostile_files.py)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from bench_hostile_files import SHARD_CASES, clean_shards, log_state, one_line, run_cli


def statuses(db: Path) -> list[tuple[int, str, str | None]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT run_id, status, finished_at FROM audit_runs ORDER BY run_id").fetchall()
    finally:
        con.close()


def count(db: Path, table: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, Path]:
    """A clean shard folder and a real log it was imported into (its run finished)."""
    work = tmp_path_factory.mktemp("shards")
    folder = clean_shards(work / "clean")
    db = work / "real.sqlite"
    code, err = run_cli(["import", str(folder), "--db", str(db)])
    assert code == 0, err
    assert [s for _, s, _ in statuses(db)] == ["finished"] and count(db, "run_items") == 60
    return folder, db


@pytest.mark.parametrize("case", SHARD_CASES, ids=[c.name for c in SHARD_CASES])
def test_a_hostile_folder_is_refused_in_one_line_and_the_log_stays_byte_identical(case, imported, tmp_path):
    clean, real = imported
    folder, db = tmp_path / "folder", tmp_path / "target.sqlite"
    shutil.copytree(clean, folder)
    shutil.copy(real, db)
    case.build(folder)
    before, runs = log_state(db), statuses(db)
    code, err = run_cli(["import", str(folder), "--db", str(db)])
    assert "Traceback" not in err
    assert code == 2, err
    assert one_line(err, "import", case.file), err
    assert case.column in err.splitlines()[0], err
    assert statuses(db) == runs, "the finished run is not flipped to running"
    assert log_state(db) == before


def test_integer_comment_keys_store_nothing_and_a_clean_import_then_gives_one_comment_per_item(tmp_path):
    clean = clean_shards(tmp_path / "clean")
    hostile = tmp_path / "hostile"
    shutil.copytree(clean, hostile)
    SHARD_CASES[0].build(hostile)  # comment_key 0..19 as integers
    db = tmp_path / "new.sqlite"
    code, err = run_cli(["import", str(hostile), "--db", str(db)])
    assert code == 2 and "comment_key" in err, err
    assert not db.exists(), "a refused import creates no log"
    assert run_cli(["import", str(clean), "--db", str(db)])[0] == 0
    assert count(db, "comments") == 60 and count(db, "run_items") == 60


def test_importing_the_same_clean_folder_again_leaves_the_log_byte_identical(imported, tmp_path):
    clean, real = imported
    db = tmp_path / "again.sqlite"
    shutil.copy(real, db)
    before = log_state(db)
    code, err = run_cli(["import", str(clean), "--db", str(db)])
    assert code == 0, err
    assert log_state(db) == before


@pytest.mark.parametrize("name, key, files", [
    ("one comment_key for a whole shard", "hostile.csv:row-20", ["items-000001.parquet", "items-000001.parquet row 0"]),
    ("a comment_key in two shards", "hostile.csv:row-0", ["items-000002.parquet", "items-000000.parquet row 0"])])
def test_a_repeated_comment_key_is_refused_naming_the_key_and_both_rows(name, key, files, imported, tmp_path):
    """20 rows with one key would be one comment while the import reports 20 items."""
    case = next(c for c in SHARD_CASES if c.name == name)
    folder = tmp_path / "folder"
    shutil.copytree(imported[0], folder)
    case.build(folder)
    code, err = run_cli(["import", str(folder), "--db", str(tmp_path / "new.sqlite")])
    first = err.splitlines()[0]
    assert code == 2 and repr(key) in first and all(f in first for f in files), err
    assert not (tmp_path / "new.sqlite").exists()


def test_a_text_as_long_as_the_protocol_takes_is_imported(tmp_path):
    """The bound is the daemon's frame (`limits.max_message_bytes`), not less: a folder holding a text
    of exactly that many UTF-8 bytes imports."""
    from bench_hostile_files import rewrite_column

    from modlens.chunks.parquet import MAX_TEXT_BYTES
    from modlens.config import LimitsConfig

    assert MAX_TEXT_BYTES == LimitsConfig().max_message_bytes
    folder = clean_shards(tmp_path / "clean", items=2, chunk=2)
    rewrite_column(folder, "items", "text", lambda v: ["é" * (MAX_TEXT_BYTES // 2), *v[1:]])
    code, err = run_cli(["import", str(folder), "--db", str(tmp_path / "new.sqlite")])
    assert code == 0, err
    assert count(tmp_path / "new.sqlite", "run_items") == 2
