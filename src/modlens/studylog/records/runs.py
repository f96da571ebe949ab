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


# run parameters that record which bytes a run read, not which audit it is (`run_identity`): the data
# set's name is made of those bytes already (`datasets.base.content_name`), so a run an earlier modlens
# left unfinished before it recorded them resumes, and so does a rerun into an --out-parquet folder over a
# file that grew (rows keyed by --id-col: `chunks.parquet.ParquetSink`)
READ_RECORDS = ("file_digest", "file_digests")


def run_identity(params: dict[str, Any] | None) -> str:
    """The run parameters that make the audit, as canonical JSON: those in READ_RECORDS left out."""
    return canonical_json({k: v for k, v in (params or {}).items() if k not in READ_RECORDS})


def find_run(db: LogConnection, dataset: str, path: str | None, params: dict[str, Any], *,
             unfinished_only: bool = False) -> int | None:
    """The latest run of this dataset and path with these parameters, READ_RECORDS aside (`run_identity`;
    only one that has not finished, with `unfinished_only`): the run an audit resumes or an import adds to."""
    identity = run_identity(params)
    rows = db.conn.execute(
        "SELECT run_id, params_json FROM audit_runs WHERE dataset = ? AND path IS ? "
        "AND (? = 0 OR status != 'finished') ORDER BY run_id DESC", (dataset, path, int(unfinished_only)))
    return next((int(run_id) for run_id, stored in rows if run_identity(json.loads(stored)) == identity), None)


def _digests(params: dict[str, Any]) -> list[str]:
    """The digests of the bytes `params` record as read, oldest first ([] where they record none)."""
    return list(params.get("file_digests") or ([params["file_digest"]] if params.get("file_digest") else []))


def with_bytes_read(stored: dict[str, Any], params: dict[str, Any], *, unknown_earlier: bool) -> dict[str, Any] | None:
    """`stored` (a run's or an --out-parquet folder's parameters) with the digests `params` record and
    it lacks added to its READ_RECORDS: `file_digest` while it read one version, else `file_digests`,
    every version, oldest first. None when there is nothing to add. Where `stored` records none,
    `unknown_earlier` says whether its earlier reads are unknown (None: no list of them can be made) or
    were these same bytes (they are recorded)."""
    had = _digests(stored)
    if not had and unknown_earlier:
        return None
    read = [*had, *(d for d in _digests(params) if d not in had)]
    if read == had:
        return None
    kept = {k: v for k, v in stored.items() if k not in READ_RECORDS}
    return {**kept, **({"file_digest": read[0]} if len(read) == 1 else {"file_digests": read})}


def record_bytes_read(db: LogConnection, run_id: int, params: dict[str, Any]) -> None:
    """Adds to the run's READ_RECORDS the digests `params` (those of the attempt that goes on with it,
    or of the folder an import adds to it) record and it lacks (`with_bytes_read`). A run an earlier
    modlens started before runs recorded them gets this attempt's: `find_run` matched it on the data
    set's name, made of the bytes, so its earlier attempts read the same ones."""
    stored = json.loads(db.scalar("SELECT params_json FROM audit_runs WHERE run_id = ?", (run_id,)))
    read = with_bytes_read(stored, params, unknown_earlier=False)
    if read is not None:
        db.write("UPDATE audit_runs SET params_json = ? WHERE run_id = ?", (canonical_json(read), run_id))


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
