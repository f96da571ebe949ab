"""An audit resumes on its identity, not on what its run records of the bytes it read: a run an earlier
modlens left unfinished, before runs recorded `file_digest`, resumes (its data set's name is made of the
bytes, so its earlier part read the same ones), and its record then says which bytes the whole run read."""
from __future__ import annotations

import csv
import hashlib
import json
import sqlite3

import pytest

from modlens.audit import run_audit
from modlens.datasets.base import DIGEST_CHARS
from test_report_training_overlap import Fake


def _interrupt(n_done):
    raise KeyboardInterrupt


def _runs(db):
    with sqlite3.connect(db) as conn:
        return [(r, s, json.loads(p)) for r, s, p in
                conn.execute("SELECT run_id, status, params_json FROM audit_runs ORDER BY run_id")]


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_a_run_interrupted_before_runs_recorded_file_digest_resumes(tmp_path, folder):
    src = tmp_path / "shards"
    src.mkdir()
    for part in ("a", "b") if folder else ("a",):
        with open(src / f"{part}.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([("cid", "text", "toxic"),
                                      *((f"{part}-{i}", f"comment {part} {i}", i % 2) for i in range(10))])
    target = src if folder else src / "a.csv"
    db = tmp_path / "log.sqlite"
    args = dict(db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False,
                chunk_size=4)
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(target), on_chunk=_interrupt, **args)
    [(_, status, params)] = _runs(db)
    digest = params["file_digest"]
    # the run as the previous version wrote it: no file_digest among its parameters
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE audit_runs SET params_json = json_remove(params_json, '$.file_digest')")
    again = run_audit(str(target), **args)
    assert status == "interrupted"
    assert again.resumed and again.run_id == 1 and again.n_skipped == 4
    assert again.n_items == (20 if folder else 10)
    [(run_id, status, params)] = _runs(db)
    # the whole run read these bytes: the earlier part's data set name is made of the same ones
    assert status == "finished" and params["file_digest"] == digest
    if not folder:
        assert digest == hashlib.sha256(target.read_bytes()).hexdigest()[:DIGEST_CHARS]


def test_an_import_adding_a_grown_files_chunks_to_its_run_records_both_versions(tmp_path):
    """An --out-parquet folder resumed over a file that grew (rows keyed by --id-col), imported before and
    after: the second import adds the new chunks to the run the first made (matched on its identity, not
    on the bytes read), and that run's record lists both versions read, as the folder's manifest does."""
    from modlens.chunks.parquet import import_parquet

    f, out, db = tmp_path / "c.csv", tmp_path / "out", tmp_path / "log.sqlite"
    f.write_text("cid,text\n1,comment one\n2,comment two\n", encoding="utf-8")
    args = dict(db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False,
                out_parquet=out)
    run_audit(str(f), **args)
    first = hashlib.sha256(f.read_bytes()).hexdigest()[:DIGEST_CHARS]
    assert import_parquet(out, db)["items"] == 2
    with f.open("a", encoding="utf-8") as fh:
        fh.write("3,comment three\n")
    run_audit(str(f), **args)
    second = hashlib.sha256(f.read_bytes()).hexdigest()[:DIGEST_CHARS]
    counts = import_parquet(out, db)
    assert (counts["run_id"], counts["items"], counts["skipped"]) == (1, 1, 2)
    [(_, status, params)] = _runs(db)
    assert status == "finished" and params["file_digests"] == [first, second] and "file_digest" not in params
