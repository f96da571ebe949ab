"""Every audit run records the digest of the bytes it read: a file keyed by its content records it as
the run's `source` (another version is another run), a file keyed by an id column (`--id-col`, the
shipped HateCheck's case ids, Davidson's index) as `file_digest`, so a run says which bytes its rows
came from either way."""
from __future__ import annotations

import csv
import hashlib
import json
import sqlite3

from modlens import paths
from modlens.audit import run_audit
from modlens.datasets.base import DIGEST_CHARS
from test_report_training_overlap import Fake


def _params(db):
    with sqlite3.connect(db) as conn:
        return [json.loads(p) for (p,) in conn.execute("SELECT params_json FROM audit_runs ORDER BY run_id")]


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_CHARS]


def test_an_id_keyed_run_records_the_digest_of_the_bytes_it_read(tmp_path):
    f = tmp_path / "comments.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("cid", "text", "toxic"), *((f"c-{i}", f"comment {i}", i % 2) for i in range(6))])
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False)
    hatecheck = paths.shipped_data() / "hatecheck" / "test_suite_cases.csv"
    run_audit(str(hatecheck), db=db, detector_objects={"d": Fake("d")}, progress=False, limit=5)
    by_ids, cases = _params(db)
    assert "source" not in by_ids and by_ids["file_digest"] == _digest(f)
    assert "source" not in cases and cases["file_digest"] == _digest(hatecheck)


def test_a_content_keyed_run_records_it_once_as_its_source(tmp_path):
    f = tmp_path / "comments.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("text", "toxic"), *((f"comment {i}", i % 2) for i in range(6))])
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"d": Fake("d")}, progress=False)
    [params] = _params(db)
    assert params["source"] == _digest(f) and "file_digest" not in params


def test_a_folder_run_records_the_digest_of_the_bytes_it_read(tmp_path):
    """A folder of id-keyed files (or content-keyed: the folder has no one source) records as
    `file_digest` the digest of its files' paths and digests, the one its `file-DIGEST` name is made of."""
    folder = tmp_path / "shards"
    folder.mkdir()
    for part in ("a", "b"):
        with open(folder / f"{part}.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([("cid", "text", "toxic"),
                                      *((f"{part}-{i}", f"comment {part} {i}", i % 2) for i in range(4))])
    db = tmp_path / "log.sqlite"
    run_audit(str(folder), db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False)
    listing = "".join(f"{p}.csv\t{_digest(folder / f'{p}.csv')}\n" for p in ("a", "b"))
    [params] = _params(db)
    assert "source" not in params and params["file_digest"] == hashlib.sha256(listing.encode()).hexdigest()[:DIGEST_CHARS]


def test_the_bytes_read_added_to_a_run_or_an_out_parquet_manifest():
    """`with_bytes_read`, the one rule for the log's runs and the --out-parquet manifest."""
    from modlens.studylog.records.runs import with_bytes_read

    run = {"detectors": ["d"]}
    # an old run (no digest recorded): its earlier attempts read these bytes, so they are recorded, in the one-digest form
    assert with_bytes_read(run, {"file_digest": "a"}, unknown_earlier=False) == {"detectors": ["d"], "file_digest": "a"}
    # a folder manifest written before runs recorded them: what its runs read is unknown, no list is made
    assert with_bytes_read(run, {"file_digest": "a"}, unknown_earlier=True) is None
    for unknown in (False, True):
        one = {**run, "file_digest": "a"}
        assert with_bytes_read(one, {"file_digest": "a"}, unknown_earlier=unknown) is None  # nothing new
        assert with_bytes_read(one, run, unknown_earlier=unknown) is None  # nothing recorded by this attempt
        two = with_bytes_read(one, {"file_digest": "b"}, unknown_earlier=unknown)
        assert two == {"detectors": ["d"], "file_digests": ["a", "b"]}
        assert with_bytes_read(two, {"file_digests": ["b", "c"]}, unknown_earlier=unknown) == {
            "detectors": ["d"], "file_digests": ["a", "b", "c"]}
