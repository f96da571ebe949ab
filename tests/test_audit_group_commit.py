"""Chunks that come fast share one transaction when asked (`modlens audit --group-commit SECONDS`,
chunks/sinks.py `LogSink(group_s=...)`; off by default, since another writer of the log waits for the
whole audit): a COMMIT per chunk cost a third of an audit's CPU with a cheap detector. What the
log says stays exact: an audit stopped after its third chunk leaves those three chunks committed,
whole, for any other connection to read, and resumes to the rows an uninterrupted audit writes."""
from __future__ import annotations

import sqlite3

import pytest

from modlens.audit.run import AuditInterrupted, run_audit
from modlens.detectors.base import Detector

from log_helpers import table_counts

TABLES = ("comments", "labels", "gold_labels", "scores", "run_items", "texts")


class Constant(Detector):
    name, version, labels, toxicity_label, max_batch = "constant", "1", ("toxicity",), "toxicity", 1024

    def score(self, texts):
        return [{"toxicity": 0.25} for _ in texts]


def counts(db) -> dict[str, int]:
    return table_counts(db, TABLES)  # another connection: sees committed rows only


def test_an_audit_stopped_inside_a_group_commits_its_finished_chunks_whole(tmp_path):
    seen = []

    def stop_after_three(n_done):
        seen.append(n_done)
        if len(seen) == 3:
            raise KeyboardInterrupt

    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditInterrupted) as stopped:
        run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False, group_commit_s=1.0,
                  detector_objects={"c": Constant()}, on_chunk=stop_after_three)
    assert stopped.value.n_done == 300
    got = counts(db)
    assert got["run_items"] == 300 and got["scores"] >= 300  # every finished item with its score
    con = sqlite3.connect(db)
    assert con.execute("SELECT status, n_done FROM audit_runs").fetchall() == [("interrupted", 300)]
    # no item in run_items without its score
    assert con.execute("SELECT count(*) FROM run_items r JOIN comments c USING (comment_id) "
                       "LEFT JOIN scores s ON s.text_id = c.text_id WHERE s.text_id IS NULL").fetchone() == (0,)
    con.close()
    again = run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False, group_commit_s=1.0,
                      detector_objects={"c": Constant()})
    assert again.resumed and again.n_skipped == 300
    straight = tmp_path / "straight.sqlite"
    run_audit("davidson", db=straight, limit=500, chunk_size=100, progress=False, detector_objects={"c": Constant()})
    assert counts(db) == counts(straight)
