"""Every audit run records the digest of the bytes it read: a file keyed by its content records it as
the run's `source` (another version is another run), a file keyed by an id column (`--id-col`, the
shipped HateCheck's case ids, Davidson's index) as `file_digest`, so a run says which bytes its rows
came from either way."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import sqlite3

import pytest

from modlens import fileversion, paths
from modlens.audit import run_audit
from modlens.datasets import base
from modlens.datasets.base import DIGEST_CHARS, file_digest, text_format
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


def _rewrite_same_size_and_mtime(path, new: bytes, *, rename_over: bool) -> None:
    """`path` given `new` bytes (the same length) and its old modification time back, to the nanosecond
    (a copy or an unpacked archive keeping its times). In place: the same inode; else a new file renamed
    over it (an editor's save). Setting the time moves the change time, so this is not a rewrite within
    the timestamps' resolution, which keeps that too (`_coarse_timestamps` below)."""
    st = path.stat()
    assert len(new) == st.st_size
    if rename_over:
        other = path.with_name(path.name + ".new")
        other.write_bytes(new)
        os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(other, path)
    else:
        with open(path, "r+b") as fh:
            fh.write(new)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (st.st_mtime_ns, st.st_size)


@pytest.mark.parametrize("rename_over", [False, True])
def test_a_rewrite_with_the_same_size_and_mtime_is_digested_anew(tmp_path, rename_over):
    """The digest cache was keyed on the file's modification time and size: a file rewritten with the same
    size and its old modification time got its old digest back, and a run recorded as its `file_digest`
    bytes it did not read. Its inode and change time tell these versions apart."""
    f = tmp_path / "comments.csv"
    old = "cid,text,toxic\nc-0,comment zero,0\nc-1,comment one!,1\n"
    f.write_text(old, encoding="utf-8")
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False)
    first = _digest(f)
    _rewrite_same_size_and_mtime(f, old.replace("zero", "nil!").encode(), rename_over=rename_over)
    assert file_digest(f) == _digest(f) != first
    run_audit(str(f), db=db, reader_options={"id_col": "cid"}, detector_objects={"d": Fake("d")}, progress=False)
    assert [p["file_digest"] for p in _params(db)] == [first, _digest(f)]


def test_a_rewrite_with_the_same_size_and_mtime_is_sniffed_anew(tmp_path):
    """The encoding and delimiter cache had the same key: a file rewritten so was read in its old delimiter."""
    f = tmp_path / "comments.csv"
    f.write_text("text,toxic\nyou idiot,1\n", encoding="utf-8")
    assert text_format(f).delimiter == ","
    _rewrite_same_size_and_mtime(f, b"text;toxic\nyou idiot;1\n", rename_over=False)
    assert text_format(f).delimiter == ";"


def _reads(monkeypatch) -> list[str]:
    """The files the digest and the encoding sniff read (not served from their per-version caches)."""
    reads: list[str] = []
    sha256, encoding = base._sha256, base._encoding

    def counted_sha256(path):
        reads.append(f"digest {path.name}")
        return sha256(path)

    def counted_encoding(path, head, declared):
        reads.append(f"sniff {path.name}")
        return encoding(path, head, declared)

    monkeypatch.setattr(base, "_sha256", counted_sha256)
    monkeypatch.setattr(base, "_encoding", counted_encoding)
    return reads


def _coarse_timestamps(monkeypatch, path) -> None:
    """A kernel with coarse timestamps (Linux before 6.13's fine-grained ones): a same-size rewrite within
    one clock tick leaves the file's whole stamp (inode, size, mtime, ctime) as it was."""
    stamp = base._stamp(path)
    monkeypatch.setattr(base, "_stamp", lambda p: stamp)


def test_a_file_rewritten_within_one_tick_of_its_read_is_read_again(tmp_path, monkeypatch):
    """With coarse timestamps a same-size rewrite within one tick keeps every field of the cache key: the
    old digest was recorded as the bytes read, and the file read in its old delimiter. A version whose
    times are within the timestamps' reach of the moment it was read (git's racily clean entries) is not
    kept: it is read again next time."""
    f = tmp_path / "comments.csv"
    f.write_bytes(b"cid,text,toxic\nc-0,comment zero,0\n")
    written = max(f.stat().st_mtime_ns, f.stat().st_ctime_ns)
    # read within the window, however long a loaded machine takes to get to the read: at the instant of the write
    monkeypatch.setattr(fileversion, "time_ns", lambda: written)
    reads = _reads(monkeypatch)
    _coarse_timestamps(monkeypatch, f)
    first, delimiter = file_digest(f), text_format(f).delimiter
    with open(f, "r+b") as fh:  # in place, the same size, within the same tick
        fh.write(b"cid;text;toxic\nc-0;comment nil!;0\n")
    assert delimiter == ","
    assert file_digest(f) == _digest(f) != first
    assert text_format(f).delimiter == ";"
    assert reads == ["digest comments.csv", "sniff comments.csv"] * 2


def test_a_file_unchanged_long_before_its_read_is_read_once(tmp_path, monkeypatch):
    """The per-version caches still serve a file whose last change (modification and change time) is
    well before the read: every load of a data set asks for its digest and format more than once."""
    f = tmp_path / "comments.csv"
    f.write_bytes(b"cid,text,toxic\nc-0,comment zero,0\n")
    past = f.stat().st_mtime_ns - 3600 * 10**9
    os.utime(f, ns=(past, past))  # modified an hour ago; its change time is now, which no user can set back
    real = fileversion.time_ns
    monkeypatch.setattr(fileversion, "time_ns", lambda: real() + 10 * 10**9)  # so the file is read 10 s after it
    reads = _reads(monkeypatch)
    _coarse_timestamps(monkeypatch, f)
    assert [file_digest(f) for _ in range(3)] == [_digest(f)] * 3
    assert [text_format(f).delimiter for _ in range(3)] == [","] * 3
    assert reads == ["digest comments.csv", "sniff comments.csv"]
