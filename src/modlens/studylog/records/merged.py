"""The rows a participant's bundle adds to a merged log (`modlens merge`, `exchange/merge.py`, which
verifies the bundle first): one transaction, set-based INSERT ... SELECT from the bundle's tables
loaded into temp tables, rows mapped to the target's ids by their natural keys, provenance in
`row_sources` and `bundles`. Every step is built from the table description (`tables.Travel`):
per table, in `TRAVELLING` order (parents first),
  m_<table>    the bundle's rows with their references mapped to this log's ids (`rewrite` applied);
  row_sources  for a `tracked` table without a row id: its key, and whether this log lacked it;
  the insert   INSERT OR IGNORE, or an upsert on the merge key when the table `fill`s or `replace_if`s;
  map_<table>  for a table with a row id: the bundle's id -> this log's, found by the merge key.
Rows of a tracked table with a row id are added when their id is above the table's largest before."""
from __future__ import annotations

import json
import sqlite3
from typing import Any

from modlens.studylog.codec import now_iso
from modlens.studylog.tables import TABLE, TRAVELLING, Column, Table, Travel


def _travel(table: Table) -> Travel:
    assert table.travel is not None, f"{table.name} never travels"
    return table.travel


def _carried(table: Table) -> list[tuple[Column, Table | None, bool]]:
    """How merge carries each column of `table` but its row id: (column, the parent table whose id map
    rewrites it or None, whether it arrives NULL: a local path, or a row the bundle never carries).
    `_mapped` builds the rows by it and `_dangling` checks the references it rewrites."""
    out = []
    for c in table.columns:
        parent = TABLE[c.parent] if c.parent else None
        if c.name == table.row_id:
            continue
        empty = c.name in _travel(table).local or (parent is not None and parent.travel is None)
        out.append((c, parent if parent is not None and parent.row_id and not empty else None, empty))
    return out


def _mapped(table: Table) -> str:
    """temp.m_<table>: the bundle's rows (temp.bt_<table>) as this log will hold them, in bundle key order."""
    select = [f"b.{table.row_id} AS old_id"] if table.row_id else []
    joins = []
    for c, parent, empty in _carried(table):
        if empty:
            select.append(f"NULL AS {c.name}")
        elif parent is not None:
            join = "JOIN" if c.not_null else "LEFT JOIN"  # a NULL reference stays NULL
            joins.append(f"{join} temp.map_{parent.name} r_{c.name} ON r_{c.name}.old = b.{c.name}")
            select.append(f"r_{c.name}.new AS {c.name}")
        else:
            select.append(f"b.{c.name}")
    order = ", ".join(f"b.{k}" for k in table.primary_key)
    return (f"CREATE TEMP TABLE m_{table.name} AS SELECT {', '.join(select)} FROM temp.bt_{table.name} b "
            f"{' '.join(joins)} ORDER BY {order}")


def _dangling(conn: sqlite3.Connection, table: Table) -> None:
    """Raise when a row of the bundle points at a row of a parent table the bundle lacks: `_mapped`
    would drop it (a NOT NULL reference, inner join) or merge it pointing nowhere (NULL), and merge
    refuses rows that do not fit together rather than leave them out."""
    for c, parent, _ in _carried(table):
        if parent is None:
            continue  # a reference merge does not map (a text key: the foreign key checks it)
        # a join, as `_mapped`'s, so SQLite indexes the map for it (a NOT EXISTS subquery scanned it per row)
        n = conn.execute(f"SELECT count(*) FROM temp.bt_{table.name} b LEFT JOIN temp.map_{parent.name} r "
                         f"ON r.old = b.{c.name} WHERE b.{c.name} IS NOT NULL AND r.old IS NULL").fetchone()[0]
        if n:
            raise sqlite3.IntegrityError(f"{table.name}.{c.name}: {n} row(s) point at {parent.name} rows the bundle "
                                         "lacks")


def _same_key(table: Table, a: str, b: str) -> str:
    return " AND ".join(f"{a}.{k} = {b}.{k}" for k in _travel(table).merge_key)


def row_key_sql(table: Table, alias: str) -> str:
    """A row's key in `row_sources`, as SQL on the row named `alias`: a table with a row id, that id as
    text; else its merge key, its parts joined by ':' when all are integers, else by '/'."""
    if table.row_id:
        return f"CAST({alias}.{table.row_id} AS TEXT)"
    key = _travel(table).merge_key
    sep = " || ':' || " if all(table.column(k).type == "INTEGER" for k in key) else " || '/' || "
    return sep.join(f"{alias}.{k}" for k in key)


def _provenance(table: Table) -> str:
    """row_sources rows (bundle bound as ?) of a tracked table without a row id, before its insert."""
    return (f"INSERT OR IGNORE INTO row_sources (table_name, row_key, bundle_id, added) "
            f"SELECT '{table.name}', {row_key_sql(table, 'm')}, ?, "
            f"NOT EXISTS (SELECT 1 FROM {table.name} x WHERE {_same_key(table, 'x', 'm')}) FROM temp.m_{table.name} m")


def _insert(table: Table) -> str:
    travel = _travel(table)
    columns = ", ".join(c.name for c in table.columns if c.name != table.row_id)
    if not travel.fill and travel.replace_if is None:
        return f"INSERT OR IGNORE INTO {table.name} ({columns}) SELECT {columns} FROM temp.m_{table.name} ORDER BY rowid"
    if travel.fill:
        update = ", ".join(f"{c} = coalesce({table.name}.{c}, excluded.{c})" for c in travel.fill)
    else:
        update = ", ".join(f"{c.name} = excluded.{c.name}" for c in table.columns
                           if c.name not in travel.merge_key and c.name != table.row_id)
        update += f" WHERE {travel.replace_if}"
    # WHERE: an upsert's SELECT needs one (SQLite's parsing of ON CONFLICT). A unique key holding NULL never
    # conflicts, so a row with NULL in a key column (a withdrawn consent whose text is unknown, recorded before
    # schema 7) is added only where no row has that key, NULL matching NULL: once, not once per bundle. Such a
    # row arrives withdrawn and stays so: there is nothing to fill in on it later.
    nullable = [k for k in travel.merge_key if not table.column(k).not_null and k not in table.primary_key]
    where = " AND ".join(f"NOT (m.{k} IS NULL AND EXISTS (SELECT 1 FROM {table.name} x WHERE "
                         f"{' AND '.join(f'x.{j} IS m.{j}' for j in travel.merge_key)}))" for k in nullable) or "true"
    return (f"INSERT INTO {table.name} ({columns}) SELECT {columns} FROM temp.m_{table.name} AS m WHERE {where} "
            f"ORDER BY rowid ON CONFLICT ({', '.join(travel.merge_key)}) DO UPDATE SET {update}")


def _differ(table: Table) -> str:
    """The bundle's rows found under their key with another value in a `compare` column: how many,
    how many of them the table's `replace_if` replaces, and per REAL column the largest difference.
    The bundle's rows are named `excluded` and the merged ones by the table, as `replace_if` says."""
    travel = _travel(table)
    differs = " OR ".join(f"{table.name}.{c} IS NOT excluded.{c}" for c in travel.compare)
    replaced = f"coalesce(sum({travel.replace_if}), 0)" if travel.replace_if else "0"
    largest = [f"max(abs({table.name}.{c} - excluded.{c}))" for c in _real(table)]
    return (f"SELECT count(*), {', '.join([replaced, *largest])} FROM temp.m_{table.name} AS excluded "
            f"JOIN {table.name} ON {_same_key(table, table.name, 'excluded')} WHERE {differs}")


def _real(table: Table) -> list[str]:
    return [c for c in _travel(table).compare if table.column(c).type == "REAL"]


def _id_map(table: Table) -> str:
    return (f"CREATE TEMP TABLE map_{table.name} AS SELECT m.old_id AS old, t.{table.row_id} AS new "
            f"FROM temp.m_{table.name} m JOIN {table.name} t ON {_same_key(table, 't', 'm')}")


def insert_bundle(conn: sqlite3.Connection, sha256: str, m: dict[str, Any], source_name: str, signer: str | None,
                  tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]],
                  withdrawn: list[str] | tuple[str, ...] = ()) -> tuple[int, dict[str, Any]]:
    """Write one verified bundle's `tables` ({table: (columns, rows)}, upgraded to this schema) in one
    transaction; `withdrawn`: the raters whose withdrawal it carries (their consents alone), recorded with
    the manifest's raters in `bundles.rater_ids_json`, so a later bundle of theirs is checked against its
    signer (merge.check_signer). Returns (bundle_id, {table: {"in_bundle": n, "added": n}}, and for a table that `compare`s,
    "differ": {"kept": n, "replaced": n, "largest": {REAL column: its largest difference}}: the bundle's
    rows whose values differ from the merged log's under the same key). Rolls back and re-raises on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        tracked_ids = [t for t in TRAVELLING if t.row_id and _travel(t).tracked]
        before = {t.name: conn.execute(f"SELECT coalesce(max({t.row_id}), 0) FROM {t.name}").fetchone()[0]
                  for t in tracked_ids}
        bundle_id = conn.execute(
            "INSERT INTO bundles (bundle_sha256, study_id, study_key, rater_ids_json, modlens_version, schema_version, "
            "exported_at, merged_at, source_name, rows_json, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', ?)",
            (sha256, m["study_id"], m["study_key"], json.dumps([*m["rater_ids"], *withdrawn]), m["modlens_version"],
             m["schema_version"], m["exported_at"], now_iso(), source_name, signer)).lastrowid
        assert bundle_id is not None  # an INSERT that succeeded has a rowid
        for name, (cols, rows) in tables.items():
            conn.execute(f"CREATE TEMP TABLE bt_{name} AS SELECT {', '.join(cols)} FROM main.[{name}] WHERE 0")
            conn.executemany(f"INSERT INTO temp.bt_{name} VALUES ({', '.join('?' * len(cols))})", rows)
        added: dict[str, int] = {}
        differ: dict[str, dict[str, Any]] = {}
        temps = []
        for table in TRAVELLING:
            travel = _travel(table)
            _dangling(conn, table)
            conn.execute(_mapped(table))
            temps.append(f"m_{table.name}")
            for column, expression in travel.rewrite:
                conn.execute(f"UPDATE temp.m_{table.name} AS m SET {column} = {expression}")
            if travel.tracked and not table.row_id:  # before the insert: which rows are new
                conn.execute(_provenance(table), (bundle_id,))
            if travel.compare:  # before the insert too: which rows say otherwise than the merged log
                n, n_replaced, *largest = conn.execute(_differ(table)).fetchone()
                differ[table.name] = {"kept": n - n_replaced, "replaced": n_replaced,
                                      "largest": dict(zip(_real(table), largest))}
            added[table.name] = max(conn.execute(_insert(table)).rowcount, 0)
            if table.row_id:
                conn.execute(_id_map(table))
                # the children's joins (`_mapped`, `_dangling`) look ids up here: indexed once, not per join
                conn.execute(f"CREATE UNIQUE INDEX temp.map_{table.name}_old ON map_{table.name} (old)")
                temps.append(f"map_{table.name}")
        for t in tracked_ids:
            conn.execute(f"INSERT OR IGNORE INTO row_sources (table_name, row_key, bundle_id, added) "
                         f"SELECT '{t.name}', new, ?, new > ? FROM (SELECT DISTINCT new FROM temp.map_{t.name})",
                         (bundle_id, before[t.name]))
        # an upsert's rowcount includes rows it only updated: count the new ones from provenance
        for table_name, n in conn.execute("SELECT table_name, sum(added) FROM row_sources WHERE bundle_id = ? "
                                          "GROUP BY table_name", (bundle_id,)):
            added[table_name] = n
        rows_info = {t: {"in_bundle": len(tables[t][1]), "added": added.get(t, 0),
                         **({"differ": differ[t]} if t in differ else {})} for t in tables}
        conn.execute("UPDATE bundles SET rows_json = ? WHERE bundle_id = ?", (json.dumps(rows_info), bundle_id))
        for name in [f"bt_{n}" for n in tables] + temps:
            conn.execute(f"DROP TABLE temp.{name}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return bundle_id, rows_info
