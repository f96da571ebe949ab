"""`audit_runs` and `run_items`: each audit, import or fusion run with its parameters, progress
and status, the comments it completed, and the one way to find an earlier run to resume."""
from __future__ import annotations

import json
from itertools import repeat
from typing import Any, Iterable

from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.connection import LogConnection
from modlens.studylog.records.batch import write_rows


def start_run(db: LogConnection, dataset: str, path: str | None, params: dict[str, Any],
              label_set_id: int | None = None) -> int:
    run_id = db.write("INSERT INTO audit_runs (dataset, path, params_json, status, started_at, label_set_id) "
                      "VALUES (?, ?, ?, ?, ?, ?)",
                      (dataset, path, canonical_json(params), "running", now_iso(), label_set_id)).lastrowid
    assert run_id is not None
    return run_id


def find_run(db: LogConnection, dataset: str, path: str | None, params: dict[str, Any], *,
             unfinished_only: bool = False) -> int | None:
    """The latest run of this dataset and path with exactly these parameters (only one that has
    not finished, with `unfinished_only`): the run an audit resumes or an import adds to."""
    run_id: int | None = db.scalar(
        "SELECT run_id FROM audit_runs WHERE dataset = ? AND path IS ? AND params_json = ? "
        "AND (? = 0 OR status != 'finished') ORDER BY run_id DESC LIMIT 1",
        (dataset, path, canonical_json(params), int(unfinished_only)))
    return run_id


def add_run_items(db: LogConnection, run_id: int, comment_ids: Iterable[int]) -> None:
    """The comments this run completed; n_items counts the new ones."""
    with db.transaction():
        ids = list(comment_ids)
        if not ids:
            return
        added = write_rows(db, "INSERT OR IGNORE INTO run_items (run_id, comment_id) VALUES (?, ?)",
                           list(zip(repeat(run_id), ids)))
        if added > 0:
            db.write("UPDATE audit_runs SET n_items = n_items + ? WHERE run_id = ?", (added, run_id))


def add_run_item(db: LogConnection, run_id: int, comment_id: int) -> None:
    add_run_items(db, run_id, [comment_id])


def set_run_progress(db: LogConnection, run_id: int, n_done: int) -> None:
    db.write("UPDATE audit_runs SET n_done = ? WHERE run_id = ?", (n_done, run_id))


def set_run_status(db: LogConnection, run_id: int, status: str) -> None:
    """E.g. back to "running" when an interrupted audit resumes (finished_at is cleared)."""
    db.write("UPDATE audit_runs SET status = ?, finished_at = NULL WHERE run_id = ?", (status, run_id))


def finish_run(db: LogConnection, run_id: int, status: str) -> None:
    db.write("UPDATE audit_runs SET status = ?, finished_at = ? WHERE run_id = ?", (status, now_iso(), run_id))


def completed_keys(db: LogConnection, run_id: int) -> set[str]:
    """comment_key of every item the run completed."""
    return {r[0] for r in db.conn.execute(
        "SELECT c.comment_key FROM run_items ri JOIN comments c USING (comment_id) WHERE ri.run_id = ?", (run_id,))}


def n_completed(db: LogConnection, run_id: int) -> int:
    return int(db.scalar("SELECT count(*) FROM run_items WHERE run_id = ?", (run_id,)))


def logged_attacks(db: LogConnection, comment_id: int, strategy: str, target: str, seed: int) -> list[dict[str, Any]]:
    """Attack variants of a comment: {"variant_id", "text", "params", "attack"} each, oldest first (an
    audit that resumes never runs an attack again)."""
    rows = db.conn.execute(
        "SELECT v.variant_id, v.params_json, v.attack_json, t.text FROM variants v JOIN texts t ON t.text_id = v.text_id "
        "WHERE v.comment_id = ? AND v.strategy = ? AND v.target_detector = ? AND v.seed = ? "
        "AND v.attack_json IS NOT NULL ORDER BY v.variant_id", (comment_id, strategy, target, seed)).fetchall()
    return [{"variant_id": vid, "text": text, "params": json.loads(params), "attack": json.loads(attack)}
            for vid, params, attack, text in rows]
