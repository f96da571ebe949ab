"""Batched study-log ingest (`StudyLog.*_many`, `recording.record_*_many`): the same rows as the
row-at-a-time API (ids, dedup by text and detector version, conflict rules), idempotent re-insert,
a failing batch leaves nothing behind, concurrent batched writers lose nothing. Real SQLite files;
speed is measured in bench/bench_studylog.py, not here."""
from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from modlens.engine import DetectorResult
from modlens.rows import Variant
from modlens.services import recording
from modlens.studylog import connection
from modlens.studylog.store import LogWriter, StudyLog
from modlens.rows import CommentRow
from modlens.studylog.codec import canonical_json
from modlens.studylog.connection import StudyLogError

TIMESTAMPS = {"created_at", "first_seen", "first_used", "started_at", "finished_at"}
P = "dataset:test"


def tables(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in rowid order (ids included), timestamps left out."""
    with StudyLog(path, readonly=True) as log:
        out = {}
        for t in log.table_names():
            cols = [r[1] for r in log.conn.execute(f"PRAGMA table_info([{t}])") if r[1] not in TIMESTAMPS]
            order = "rowid" if t != "row_sources" else ", ".join(cols)
            out[t] = log.conn.execute(f"SELECT {', '.join(cols)} FROM [{t}] ORDER BY {order}").fetchall()
        return out


@dataclass
class Norm:  # the fields recording reads from the normalizer's `Normalized`
    text: str
    normalizer: str | None
    version: str | None
    edits: list


@dataclass
class Edit:
    start: int
    end: int

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end}


def result(key: str, tox: float | None, error: str | None = None) -> DetectorResult:
    labels = None if tox is None else {"toxic": tox, "non_toxic": 1 - tox}
    return DetectorResult(key, key, "1", labels, tox, 1.5, error)


def workload() -> dict:
    """A mixed chunk with every awkward case: duplicate keys, texts shared across tables, an error
    later replaced by a score, a score not replaced by a later error, variants without source_text."""
    comments = [CommentRow(f"c{i}", f"comment {i % 7}" if i % 5 else "shared text", None) for i in range(40)]
    comments += [CommentRow("c3", "a different text for an existing key"), CommentRow("c40", "late comment", None,
                                                                                        "c1", "ab12", None, True, 99)]
    scores = []
    for i in range(30):
        t = f"comment {i % 9}" if i % 4 else f"new text {i}"
        scores += [(t, "a", result("a", i / 30)), (t, "b", result("b", None, "TimeoutError"))]
    scores += [("comment 1", "b", result("b", 0.25)), ("comment 1", "b", result("b", None, "429 quota")),
               ("comment 2", "a", result("a", 0.5))]  # a good score already there: kept
    norms = [(f"comment {i}", Norm(f"normalized {i % 3}", "default" if i % 2 else None, "v1" if i else None,
                                   [Edit(0, i)])) for i in range(8)]
    norms.append(("comment 1", Norm("other result", "default", "v1", [])))  # same key: the first stays
    variants = [(i % 6, Variant(f"variant {i % 10}", ["leet", "homoglyph"][i % 2], {"rate": 0.1, "i": i % 4}, 7,
                                [(0, 2)], source_text="" if i % 3 else f"source {i}")) for i in range(24)]
    variants += [variants[0], (1, Variant("odd params", "leet", {"note": 'q"\\\n\x01é\u2028', "n": [1, None]}, 2**40))]
    return {"comments": comments, "scores": scores, "norms": norms, "variants": variants}


def write_row_at_a_time(log: StudyLog, w: dict) -> tuple[list[int], list[int]]:
    dets = {k: log.ensure_detector(k, "1", "toxic", 0.5, {}) for k in ("a", "b")}
    cids = [log.add_comment(P, c.key, c.page_id, c.text, parent_key=c.parent_key, author_hash=c.author_hash,
                            time_shown=c.time_shown, truncated=c.truncated, original_length=c.original_length)
            for c in w["comments"]]
    for text, key, r in w["scores"]:
        log.add_score(text, dets[key], r.labels, r.toxicity, r.latency_ms, r.error)
    for src, n in w["norms"]:
        recording.record_normalization(log, src, n)
    vids = [log.add_variant(cids[c], v, 1) for c, v in w["variants"]]
    for c in cids[:10]:
        log.add_label(c, "toxic", c % 2, "gold")
        log.add_label(c, "group", {"target": ["women"]}, "gold")
    for c in cids[:20] + cids[5:15]:
        log.add_run_item(1, c)
    return cids, vids


def write_batched(log: StudyLog, w: dict) -> tuple[list[int], list[int]]:
    dets = {k: log.ensure_detector(k, "1", "toxic", 0.5, {}) for k in ("a", "b")}
    with log.transaction():
        cids = log.add_comments_many(P, w["comments"])
        assert recording.record_scores_many(log, dets, w["scores"]).given == len(w["scores"])
        recording.record_normalizations_many(log, w["norms"])
        vids = recording.record_variants_many(log, [(cids[c], v) for c, v in w["variants"]], run_id=1)
        log.add_labels_many([(c, n, v, "gold") for c in cids[:10] for n, v in
                             (("toxic", c % 2), ("group", {"target": ["women"]}))])
        log.add_run_items_many(1, cids[:20] + cids[5:15])
    return cids, vids


def fresh(path: Path) -> StudyLog:
    log = StudyLog(path)
    log.start_run("test", None, {})
    return log


def test_batched_writes_store_exactly_the_rows_of_the_row_at_a_time_api(tmp_path):
    w = workload()
    with fresh(tmp_path / "rows.sqlite") as log:
        expected = write_row_at_a_time(log, w)
    with fresh(tmp_path / "batch.sqlite") as log:
        got = write_batched(log, w)
    assert got == expected  # the same comment and variant ids, in the callers' order
    a, b = tables(tmp_path / "rows.sqlite"), tables(tmp_path / "batch.sqlite")
    assert a == b
    # the cases the workload plants, read back
    with StudyLog(tmp_path / "batch.sqlite", readonly=True) as log:
        assert log.comment_text(log.comment_id(P, "c3")) == "comment 3"  # the first text of a key stays
        det_b = log.query("SELECT detector_id FROM detectors WHERE name = 'b'")[0]["detector_id"]
        assert log.get_score("comment 1", det_b)["toxicity"] == 0.25  # error replaced, then not undone
        assert log.get_score("comment 5", det_b)["error"] == "TimeoutError"
        det_a = log.query("SELECT detector_id FROM detectors WHERE name = 'a'")[0]["detector_id"]
        assert log.get_score("comment 2", det_a)["toxicity"] == 2 / 30  # a good score is never overwritten
        assert log.query("SELECT n_items FROM audit_runs")[0]["n_items"] == 20
        assert len(b["texts"]) == len({r[1] for r in b["texts"]})  # one row per distinct text


def test_batched_reinsert_is_idempotent_and_returns_the_same_ids(tmp_path):
    w = workload()
    with fresh(tmp_path / "log.sqlite") as log:
        first = write_batched(log, w)
        before = tables(tmp_path / "log.sqlite")
        assert write_batched(log, w) == first
    assert tables(tmp_path / "log.sqlite") == before


def test_more_rows_than_one_lookup_statement_takes(tmp_path, monkeypatch):
    monkeypatch.setattr(connection, "LOOKUP_CHUNK", 97)
    texts = [f"text {i}" for i in range(1000)]
    with StudyLog(tmp_path / "log.sqlite") as log:
        det = log.ensure_detector("d", "1", None, None, {})
        ids = log.text_ids(texts[:500])
        assert list(ids.values()) == list(range(1, 501))  # ids in order of first appearance
        assert log.add_scores_many((t, det, {"x": 0.5}, 0.5, 1.0, None) for t in texts) == (1000, 1000, 0)
        assert log.text_ids(texts) == {t: i + 1 for i, t in enumerate(texts)}
        assert log.counts()["scores"] == 1000
        assert log.scored_texts(texts[::2] + ["never seen"], det) == set(texts[::2])
        assert log.add_scores_many([("errored", det, None, None, None, "boom")]) == (1, 1, 0)
        assert log.scored_texts(["errored", "text 1"], det) == {"text 1"}
        # given, added, replaced, counted by the write: an error again and a score again change nothing
        again = log.add_scores_many([("errored", det, None, None, None, "boom"), ("text 1", det, None, 0.9, 1.0, None)])
        assert (again, again.kept) == ((2, 0, 0), 2)
        assert log.add_scores_many([("errored", det, {"x": 0.1}, 0.1, 1.0, None)]) == (1, 0, 1)


def test_a_failing_batch_leaves_no_partial_rows(tmp_path):
    with StudyLog(tmp_path / "log.sqlite") as log:
        det = log.ensure_detector("d", "1", None, None, {})
        log.add_comments_many(P, [CommentRow("c0", "kept")])
        before = tables(tmp_path / "log.sqlite")
        with pytest.raises(TypeError):
            log.add_comments_many(P, [CommentRow("c1", "fine"), CommentRow("c2", None)])  # type: ignore[arg-type]
        with pytest.raises(sqlite3.IntegrityError):  # unknown detector: foreign key, after the texts went in
            log.add_scores_many([("new text", det, None, 0.1, 1.0, None), ("other", det + 99, None, 0.1, 1.0, None)])
        with pytest.raises(StudyLogError, match="no comment with id"):
            log.add_variants_many([(1, Variant("v", "leet", {}, 0, source_text="s")), (999, Variant("w", "leet", {}, 0))])
        assert tables(tmp_path / "log.sqlite") == before


async def test_batched_calls_through_the_writer_are_isolated_per_call(tmp_path):
    writer = LogWriter(tmp_path / "log.sqlite", max_delay_ms=5)
    await writer.start()
    try:
        det = await writer.submit(lambda log: log.ensure_detector("d", "1", None, None, {}))
        ok = [writer.submit(lambda log, i=i: recording.record_scores_many(
            log, {"d": det}, [(f"t{i}-{j}", "d", result("d", 0.1)) for j in range(50)])) for i in range(10)]
        bad = writer.submit(lambda log: recording.record_scores_many(
            log, {"d": det, "x": det + 5}, [("half", "d", result("d", 0.2)), ("done", "x", result("x", 0.3))]))
        results = await asyncio.gather(*ok, bad, return_exceptions=True)
        assert results[:10] == [(50, 50, 0)] * 10 and isinstance(results[10], sqlite3.IntegrityError)
    finally:
        await writer.stop()
    with StudyLog(tmp_path / "log.sqlite", readonly=True) as log:
        assert log.counts()["scores"] == 500 and log.counts()["texts"] == 500  # nothing of the failed call


def test_concurrent_batched_writers_wait_for_each_other_and_lose_nothing(tmp_path):
    """Two connections (two audits) store overlapping texts at once: the text lookup and inserts
    run under one write lock, so neither hits a duplicate text or loses a row."""
    path = tmp_path / "log.sqlite"
    with StudyLog(path) as log:
        dets = [log.ensure_detector(f"d{i}", "1", None, None, {}) for i in range(2)]
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with StudyLog(path) as log:
                for chunk in range(20):
                    rows = [(f"text {chunk * 50 + j}", dets[n], {"p": j / 50}, j / 50, 1.0, None) for j in range(50)]
                    with log.transaction():
                        log.add_scores_many(rows)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with StudyLog(path, readonly=True) as log:
        assert log.counts()["texts"] == 1000 and log.counts()["scores"] == 2000
        assert log.integrity_check() == "ok"


def test_canonical_json_is_the_json_dumps_it_replaces():
    def old(v: object) -> str:
        return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    for value in [{"toxic": 0.1, "non_toxic": 0.9}, {"b": [1, {"z": None, "y": True}], "a": "é\"\n"}, "text", 1e-300,
                  float("nan"), -0.0, 10 ** 30, (1, 2), {"path": Path("/x")}, [], {}, {2: "int keys", 1: "sorted"}]:
        assert canonical_json(value) == old(value)


def test_synchronous_is_a_documented_choice_per_writer(tmp_path):
    with StudyLog(tmp_path / "a.sqlite") as log:
        assert log.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL by default
        assert log.conn.execute("PRAGMA cache_size").fetchone()[0] == -connection.CACHE_SIZE_KIB
        assert log.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == connection.WAL_AUTOCHECKPOINT_PAGES
    with StudyLog(tmp_path / "a.sqlite", synchronous="NORMAL") as log:
        assert log.conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    with pytest.raises(ValueError, match="FULL or NORMAL"):
        StudyLog(tmp_path / "a.sqlite", synchronous="OFF")


def test_edits_json_is_the_json_dumps_it_replaces():
    """`normalize.base.edits_json`: the very string json.dumps made of the edits' dicts, whatever their
    fields hold (quotes, control characters, non-ASCII, odd floats, values of other types)."""
    from modlens.normalize.base import Edit as NormEdit, edits_json

    odd = ['q"\\\n\x01é\u2028😭', "", "&amp;", "\x7f\ud800"]
    cases = [[], [NormEdit(0, 5, "&amp;", "&", "html_unescape", 1.0)],
             [NormEdit(i, i + 3, o, o[::-1], "step\t" + o, c, h)
              for i, (o, c, h) in enumerate(zip(odd * 3, [0.1, 1e-300, 1e22, -0.0, 0.5, 2.0 / 3] * 2,
                                               [None, "rats", 'h"\n', None] * 3))],
             [NormEdit(0, 1, "a", "b", "s", float("nan"))], [NormEdit(0, 1, "a", "b", "s", float("inf"))],
             [NormEdit(0, 1, "a", "b", "s", 1)], [NormEdit(True, 1, "a", "b", "s", 1.0)],  # type: ignore[arg-type]
             [NormEdit(0, 1, "a", "b", "s", 1.0), Edit(2, 3)]]  # an edit of another kind: its to_dict
    for edits in cases:
        assert edits_json(edits) == json.dumps([e.to_dict() for e in edits], ensure_ascii=False), edits
