"""The reads an audit needs to resume where an earlier run stopped: the unfinished run with the
same parameters, the comments it completed, and attacks already logged (never redone)."""
from __future__ import annotations

import json
from typing import Any

from modlens.studylog.store import StudyLog, canonical_json


def resumable_run(log: StudyLog, dataset: str, path: str, params: dict[str, Any]) -> int | None:
    """The latest unfinished run of this dataset file with exactly these parameters."""
    rows = log.query("SELECT run_id FROM audit_runs WHERE dataset = ? AND path = ? AND params_json = ? "
                     "AND status != 'finished' ORDER BY run_id DESC LIMIT 1", (dataset, path, canonical_json(params)))
    return rows[0]["run_id"] if rows else None


def completed_keys(log: StudyLog, run_id: int) -> set[str]:
    """comment_key of every item the run completed."""
    return {r["comment_key"] for r in log.query(
        "SELECT c.comment_key FROM run_items ri JOIN comments c USING (comment_id) WHERE ri.run_id = ?", (run_id,))}


def n_completed(log: StudyLog, run_id: int) -> int:
    return log.query("SELECT count(*) AS n FROM run_items WHERE run_id = ?", (run_id,))[0]["n"]


def logged_attacks(log: StudyLog, comment_id: int, strategy: str, target: str, seed: int) -> list[dict[str, Any]]:
    """Attack variants of a comment: {"text", "params", "attack"} each, oldest first."""
    rows = log.query(
        "SELECT v.params_json, v.attack_json, t.text FROM variants v JOIN texts t ON t.text_id = v.text_id "
        "WHERE v.comment_id = ? AND v.strategy = ? AND v.target_detector = ? AND v.seed = ? "
        "AND v.attack_json IS NOT NULL ORDER BY v.variant_id", (comment_id, strategy, target, seed))
    return [{"text": r["text"], "params": json.loads(r["params_json"]), "attack": json.loads(r["attack_json"])}
            for r in rows]
