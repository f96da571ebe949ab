"""Bundles, merge and scrub are built from the table description (`Travel` in studylog/tables.py),
not from lists of their own: every table says whether it leaves the participant's computer and how
merge takes it back in, and a real bundle and merge of a log with a row in every table carry exactly
the tables that say they travel. Adding a table or a column touches the migration and the
description; these tests fail when the description is incomplete."""
from __future__ import annotations

import json
import sqlite3

from test_export_every_table import fill

from modlens.exchange import bundle as bundle_mod
from modlens.exchange.bundle import read_bundle, rows_query, write_bundle_file
from modlens.exchange.merge import merge_files
from modlens.exchange.scrub import scrubbed_column
from modlens.media.store import MediaStore
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import TABLE, TABLES, TRAVELLING

TRAVELS = {t.name for t in TABLES if t.travel is not None}


def test_every_travelling_table_declares_consent_merge_key_and_free_text():
    for table in TRAVELLING:
        travel, names = table.travel, {c.name for c in table.columns}
        assert travel is not None and travel.rows.strip(), table.name
        key = set(travel.merge_key)
        assert key and key <= names, table.name
        # merge finds a row again by its key: it must be unique in the merged log
        assert travel.merge_key == table.primary_key or travel.merge_key in table.unique, table.name
        text = {c.name for c in table.columns if c.type == "TEXT"}
        assert set(travel.verbatim) <= text and set(table.free_text) == text - set(travel.verbatim), table.name
        assert set(travel.local) | set(travel.fill) | {c for c, _ in travel.rewrite} <= names, table.name
        for column in table.columns:  # a reference to a table that stays arrives as NULL: it must allow one
            parent = TABLE[column.references.split("(")[0]] if column.references else None
            if parent is not None and parent.travel is None:
                assert not column.not_null, f"{table.name}.{column.name} references {parent.name}, which stays"
    # parents before children: merge maps a reference only after the table it points to
    order = [t.name for t in TRAVELLING]
    for table in TRAVELLING:
        assert all(order.index(p) < order.index(table.name) for p in table.parents if p in TRAVELS and p != table.name)


def test_every_consent_rule_runs(tmp_path):
    with StudyLog(tmp_path / "log.sqlite") as log:
        for statement in bundle_mod._SELECT_CONSENTED + bundle_mod._SELECT_MEDIA + [bundle_mod._SELECT_WITHDRAWN]:
            log.conn.execute(bundle_mod.selecting(statement, True, "s.text_id"), {"study": "s1"})
        for table in TRAVELLING:
            log.conn.execute(rows_query(table, [c.name for c in table.columns]), {"study": "s1"}).fetchall()


def test_scrub_cleans_exactly_the_described_free_text():
    for table in TABLES:
        for column in table.columns:
            if column.type == "TEXT" and table.travel is not None:
                assert scrubbed_column(table.name, column.name, "str") == (column.name in table.free_text)
            assert not scrubbed_column(table.name, column.name, "int")


def test_bundle_and_merge_carry_exactly_the_described_tables(tmp_path):
    participant, media = tmp_path / "participant.sqlite", MediaStore(tmp_path / "media")
    with StudyLog(participant) as log:
        fill(log, media)  # a row in every table
        [cid] = [r[0] for r in log.conn.execute("SELECT comment_id FROM comments WHERE comment_key = 'c1'")]
        log.add_variant(cid, Variant("you are a st00pid idi0t", "leet", {"rate": 0.1}, 1, [(19, 20)]))  # a live one
    assert bundle_mod.TABLES == tuple(t.name for t in TRAVELLING)
    write_bundle_file(participant, tmp_path / "p.bundle", study_id="s1")
    b = read_bundle(tmp_path / "p.bundle")
    try:
        assert set(b.manifest["tables"]) == TRAVELS
        empty = sorted(n for n, info in b.manifest["tables"].items() if not info["rows"])
        assert not empty, f"tables that travel but the bundle left empty: {empty}"
        assert all(v is None for v in b.table("media").column("path").to_pylist())  # local: never leaves
    finally:
        b.close()
    merged = tmp_path / "merged.sqlite"
    [result] = merge_files(merged, [tmp_path / "p.bundle"])
    assert not isinstance(result, Exception), result
    assert set(result["rows"]) == TRAVELS and all(r["added"] for r in result["rows"].values()), result["rows"]
    con = sqlite3.connect(merged)
    try:
        counts = {t.name: con.execute(f"SELECT count(*) FROM {t.name}").fetchone()[0] for t in TABLES}
        rows_json = json.loads(con.execute("SELECT rows_json FROM bundles").fetchone()[0])
    finally:
        con.close()
    assert {n for n, c in counts.items() if c} == TRAVELS | {"bundles", "row_sources"}
    assert set(rows_json) == TRAVELS

