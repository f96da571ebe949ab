"""What caps an audit's rows/s on this machine, stage by stage, with a detector that costs nothing,
against 50,000 rows/s: a target once set for such an audit and retired, since the log floor this
bench measures stays below it for today's log format.

An audit's rate can never beat (a) reading the file alone, nor (b) writing the rows it leaves in
the log with nothing else running. This bench measures both beside the audit itself:

1. **audit**: `run_audit` of the shipped Davidson file with a free detector (a constant score),
   into a fresh log; rows per CPU second and wall.
2. **read**: the same reader over the same rows, nothing else (CSV, HTML entities, `DatasetItem`s).
3. **log floor**: the rows that audit wrote, table by table, inserted again into a fresh log opened
   by `StudyLog` (the product's schema, indexes, foreign keys and connection settings) with bare
   `executemany` of ready tuples in ONE transaction: no Python pipeline, no lookups, one COMMIT.
   The replayed log is checked to hold the same rows as the audited one. The goal (audit >= 0.80
   of read + this floor) was set against these one-row inserts; the audit now writes most tables
   32 rows to a statement (`records/batch.py`), which this floor does not, so the bench also
   replays the rows that way: **the floor of 32 rows per INSERT** is the one an audit cannot beat.
4. **what-if floors** (not the product's schema, for the decision the target needs): the same
   replay with the five label rows per tweet as one JSON row per comment; and a log of one row
   per item (key, text, labels, score) with no index at all, the least any SQLite log can write.

Each stage's ceiling is its rows per CPU second; `read + floor` is the ceiling of reading and
writing one after the other, as an audit does.

    python bench/bench_audit_floor.py [--rows 24783] [--rounds 3] [--chunk N (default: the audit's own)]
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any, Callable

from free_detector import Free

from modlens.audit.run import run_audit
from modlens.chunks.sinks import CHUNK_ITEMS
from modlens.studylog.records.batch import MAX_PARAMS, ROWS_PER_STATEMENT, write_grouped
from modlens.scale.sources import load_dataset
from modlens.studylog.store import StudyLog

TARGET = 50_000  # rows/s: the retired target for an audit with a free detector (see the docstring)


def cpu_timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """fn()'s result, CPU seconds of this process, wall seconds."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def tables_in_order(conn: sqlite3.Connection) -> list[str]:
    """Tables, each after those its foreign keys name (creation order is not enough: a later
    migration's ALTER TABLE can point an old table at a newer one)."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
    parents = {t: {r[2] for r in conn.execute(f"PRAGMA foreign_key_list([{t}])")} - {t} for t in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [t for t in names if t not in ordered and parents[t] <= set(ordered)]
        if not ready:
            raise SystemExit(f"foreign keys form a cycle among {sorted(set(names) - set(ordered))}")
        ordered += ready
    return ordered


def insert_sql(table: str, width: int, n_rows: int = 1) -> str:
    row = f"({', '.join('?' * width)})"
    return f"INSERT INTO [{table}] VALUES {', '.join([row] * n_rows)}"


def replay(rows: dict[str, list[tuple[Any, ...]]], path: Path, per_statement: int = 1) -> tuple[dict[str, float], float]:
    """The audited rows into a fresh product log, one transaction, `per_statement` rows to an INSERT
    (1: bare `executemany`, the floor as the goal was set; ROWS_PER_STATEMENT: the many-row form the
    audit itself writes most tables with, records/batch.py): CPU seconds per table, and COMMIT's."""
    log = StudyLog(path)
    conn = log.conn
    per_table: dict[str, float] = {}
    conn.execute("BEGIN IMMEDIATE")
    for table, got in rows.items():
        if got:
            width = len(got[0])
            per = max(1, min(per_statement, MAX_PARAMS // width))
            c0 = time.process_time()
            write_grouped(log, insert_sql(table, width, per), insert_sql(table, width), got, per)
            per_table[table] = time.process_time() - c0
    _, commit, _ = cpu_timed(lambda: conn.execute("COMMIT"))
    log.close()
    return per_table, commit


def same_rows(a: Path, b: Path) -> bool:
    """Both logs hold the same rows in every table (the replay measured the same work)."""
    ca, cb = sqlite3.connect(a), sqlite3.connect(b)
    try:
        return all(ca.execute(f"SELECT * FROM [{t}]").fetchall()
                   == cb.execute(f"SELECT * FROM [{t}]").fetchall() for t in tables_in_order(ca))
    finally:
        ca.close()
        cb.close()


def what_if_labels_as_json(rows: dict[str, list[tuple[Any, ...]]], path: Path) -> float:
    """The replay with `labels` as one JSON row per comment: CPU seconds, COMMIT included."""
    per_comment: dict[int, dict[str, Any]] = {}
    for comment_id, name, value, source in rows.get("labels", []):
        per_comment.setdefault(comment_id, {})[f"{source}:{name}"] = value
    log = StudyLog(path)
    conn = log.conn
    conn.execute("CREATE TABLE labels_json (comment_id INTEGER PRIMARY KEY REFERENCES comments(comment_id), "
                 "labels_json TEXT NOT NULL)")

    def write() -> None:
        conn.execute("BEGIN IMMEDIATE")
        for table, got in rows.items():
            if table == "labels":
                conn.executemany("INSERT INTO labels_json VALUES (?, ?)",
                                 [(c, json.dumps(v)) for c, v in per_comment.items()])
            elif got:
                conn.executemany(insert_sql(table, len(got[0])), got)
        conn.execute("COMMIT")

    _, cpu, _ = cpu_timed(write)
    log.close()
    return cpu


def what_if_one_row_per_item(items: list[tuple[str, str, str]], path: Path) -> float:
    """One row per item (key, text, labels, score), no index, one transaction: CPU seconds."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE items (item_key TEXT, text TEXT, labels_json TEXT, toxicity REAL)")

    def write() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO items VALUES (?, ?, ?, 0.25)", items)
        conn.execute("COMMIT")

    _, cpu, _ = cpu_timed(write)
    conn.close()
    return cpu


def one_round(n_rows: int, chunk: int, work: Path) -> dict[str, Any]:
    audited = work / "audited.db"
    res, audit_cpu, audit_wall = cpu_timed(lambda: run_audit(
        "davidson", db=audited, limit=n_rows, detector_objects={"free": Free()}, progress=False, chunk_size=chunk))
    n = res.n_items
    read = load_dataset("davidson", None, "local")
    items, read_cpu, _ = cpu_timed(lambda: list(islice(read.iter_items(), n)))

    src = sqlite3.connect(audited)
    rows = {t: src.execute(f"SELECT * FROM [{t}]").fetchall() for t in tables_in_order(src)}
    src.close()
    per_table, commit = replay(rows, work / "replayed.db")
    many_table, many_commit = replay(rows, work / "replayed_many.db", ROWS_PER_STATEMENT)
    for replayed in ("replayed.db", "replayed_many.db"):
        if not same_rows(audited, work / replayed):
            raise SystemExit(f"the replayed log {replayed} differs from the audited one: the floor would not "
                             "measure the same work")
    labels_json_cpu = what_if_labels_as_json(rows, work / "labels_json.db")
    one_row_cpu = what_if_one_row_per_item(
        [(it.key, it.text, json.dumps(it.labels)) for it in items], work / "one_row.db")
    out: dict[str, Any] = {"n": n, "audit_cpu": audit_cpu, "audit_wall": audit_wall, "read_cpu": read_cpu,
            "floor_cpu": sum(per_table.values()) + commit, "per_table": per_table, "commit": commit,
            "floor_many_cpu": sum(many_table.values()) + many_commit,
            "row_counts": {t: len(r) for t, r in rows.items() if r},
            "labels_json_cpu": labels_json_cpu, "one_row_cpu": one_row_cpu}
    return out


def print_report(rounds: list[dict[str, Any]], chunk: int) -> None:
    n = rounds[0]["n"]

    def med(key: str) -> float:
        return float(statistics.median(r[key] for r in rounds))

    def line(stage: str, cpu_s: float, note: str = "") -> None:
        rate = n / cpu_s
        print(f"| {stage} | {rate:,.0f} | {cpu_s / n * 1e6:.1f} | {rate / TARGET:.2f} | {note} |")

    print(f"\n{n:,} Davidson rows, detector free, chunk {chunk}, {os.cpu_count()} CPU cores, "
          f"load {os.getloadavg()[0]:.1f}; medians over {len(rounds)} rounds, per CPU second")
    print("\n| stage | rows per CPU s | µs per row | vs 50,000 | note |\n|---|---:|---:|---:|---|")
    line("audit into the log", med("audit_cpu"), f"wall {n / med('audit_wall'):,.0f} rows/s")
    line("read the file alone", med("read_cpu"))
    line("log floor (the audit's rows, bare inserts, one COMMIT)", med("floor_cpu"))
    line("read + log floor", med("read_cpu") + med("floor_cpu"), "the ceiling the goal was set against")
    line(f"log floor, {ROWS_PER_STATEMENT} rows per INSERT", med("floor_many_cpu"),
         "the form the audit writes most tables with")
    line(f"read + log floor, {ROWS_PER_STATEMENT} rows per INSERT", med("read_cpu") + med("floor_many_cpu"),
         "the most an audit into this log can do")
    line("what-if: labels as one JSON row per comment", med("labels_json_cpu"), "floor only")
    line("what-if: read + one row per item, no index", med("read_cpu") + med("one_row_cpu"),
         "the least any SQLite log writes")
    print(f"\naudit / (read + log floor), per CPU second: "
          f"{(med('read_cpu') + med('floor_cpu')) / med('audit_cpu'):.2f} (goal >= 0.80); against the floor of "
          f"{ROWS_PER_STATEMENT} rows per INSERT: {(med('read_cpu') + med('floor_many_cpu')) / med('audit_cpu'):.2f}")
    print("\nlog floor by table (rows written; µs per Davidson row):\n")
    counts = rounds[0]["row_counts"]
    for table in rounds[0]["per_table"]:
        cpu = statistics.median(r["per_table"][table] for r in rounds)
        if cpu / n * 1e6 >= 0.05:
            print(f"  {table:<16} {counts[table]:>8,} rows  {cpu / n * 1e6:6.1f} µs")
    print(f"  {'COMMIT':<16} {'':>8}       {med('commit') / n * 1e6:6.1f} µs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=24_783, help="Davidson rows (all: 24,783)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=CHUNK_ITEMS, help=f"the audit's chunk size (its default: {CHUNK_ITEMS})")
    ap.add_argument("--dir", default=None, help="where the scratch logs go (default: a temporary folder)")
    args = ap.parse_args()
    rounds = []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            r = one_round(args.rows, args.chunk, Path(tmp))
        rounds.append(r)
        print(f"round {i + 1}: audit {r['n'] / r['audit_cpu']:,.0f}, read {r['n'] / r['read_cpu']:,.0f}, "
              f"log floor {r['n'] / r['floor_cpu']:,.0f} rows per CPU s", flush=True)
    print_report(rounds, args.chunk)


if __name__ == "__main__":
    main()
