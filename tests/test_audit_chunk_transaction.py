"""One transaction per audit chunk: a chunk's items are registered in the transaction that records
their results (its compute needs texts, not comment ids), so a chunk is one COMMIT and an audit
stopped while a chunk computes leaves none of that chunk's rows. Inside that transaction the chunk's
writers take no SAVEPOINT of their own (`transaction(whole=True)`) and look each text up once
(`LogConnection.text_memo`); neither may ever leave a row behind that the transaction undid. The
lookup made before the chunk's compute (which texts are scored) is the transaction's own when
nothing was written to the log in between, by this connection or another (`records.texts.known`)."""
from __future__ import annotations

import sqlite3

import pytest

from modlens.audit.run import AuditInterrupted, run_audit
from modlens.chunks import sinks
from modlens.detectors.base import Detector
from modlens.rows import CommentRow
from modlens.studylog.store import StudyLog


class StopsAtChunk(Detector):
    """A constant score; Ctrl-C while scoring its `stop_at`-th call (a chunk's compute)."""
    name, version, labels, toxicity_label, max_batch = "stops", "1", ("toxicity",), "toxicity", 1024

    def __init__(self, stop_at: int) -> None:
        super().__init__()
        self.stop_at, self.calls = stop_at, 0

    def score(self, texts):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return [{"toxicity": 0.25} for _ in texts]


def count(db, sql: str) -> int:
    con = sqlite3.connect(db)  # another connection: committed rows only
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def commits_of_an_audit(db, rows: int, monkeypatch) -> int:
    """COMMITs the audit of `rows` Davidson rows in chunks of 100 runs (progress written once)."""
    commits = 0
    real_connect = sqlite3.connect

    def traced(*args, **kwargs):
        def seen(sql: str) -> None:
            nonlocal commits
            commits += sql == "COMMIT"
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(seen)
        return conn

    with monkeypatch.context() as mp:
        mp.setattr(sqlite3, "connect", traced)
        mp.setattr(sinks, "PROGRESS_EVERY_S", 1e9)  # the first chunk's progress row only, however slow the machine
        run_audit("davidson", db=db, limit=rows, chunk_size=100, progress=False,
                  detector_objects={"s": StopsAtChunk(stop_at=0)})
    return commits


def test_a_chunk_is_one_commit(tmp_path, monkeypatch):
    two = commits_of_an_audit(tmp_path / "two.sqlite", 200, monkeypatch)
    four = commits_of_an_audit(tmp_path / "four.sqlite", 400, monkeypatch)
    assert four - two == 2  # registration and results of a chunk share its one COMMIT (it was 2 per chunk)


def test_a_stop_during_a_chunks_compute_leaves_none_of_its_rows(tmp_path):
    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditInterrupted) as stopped:
        run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False,
                  detector_objects={"s": StopsAtChunk(stop_at=3)})
    assert stopped.value.n_done == 200
    # two chunks done: their items, labels and scores; of the third, stopped in its compute, nothing
    for table in ("comments", "run_items", "gold_labels"):
        assert count(db, f"SELECT count(*) FROM {table}") == 200
    assert count(db, "SELECT count(*) FROM labels") == 200 * 5
    assert count(db, "SELECT count(*) FROM comments c LEFT JOIN scores s USING (text_id) "
                     "WHERE s.text_id IS NULL") == 0
    again = run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False,
                      detector_objects={"s": StopsAtChunk(stop_at=0)})
    assert again.resumed and again.n_skipped == 200
    assert count(db, "SELECT count(*) FROM run_items") == 500


def test_a_whole_transaction_nests_no_savepoint_and_undoes_everything_when_one_write_fails(tmp_path):
    with StudyLog(tmp_path / "l.sqlite") as log:
        statements: list[str] = []
        log.conn.set_trace_callback(statements.append)
        with pytest.raises(TypeError):
            with log.transaction(whole=True):
                log.add_comments_many("p", [CommentRow("a", "text a")])
                log.add_labels_many([(1, "n", "v", "src")])
                log.add_comments_many("p", [CommentRow("b", 7)])  # type: ignore[arg-type]  # not a str: raises
        log.conn.set_trace_callback(None)
        assert not any(s.startswith("SAVEPOINT") for s in statements)
        assert log.text_memo is None
        assert log.query("SELECT count(*) AS n FROM comments")[0]["n"] == 0
        assert log.query("SELECT count(*) AS n FROM texts")[0]["n"] == 0
        # a plain transaction's nested blocks still take savepoints: a failing one is undone alone
        with log.transaction():
            log.add_comments_many("p", [CommentRow("a", "text a")])
            with pytest.raises(TypeError):
                with log.transaction():
                    log.text_id("text b")
                    log.add_comments_many("p", [CommentRow("b", 7)])  # type: ignore[arg-type]
            # the memo forgot "text b" with its savepoint: it is added again, not named by a dead id
            tid = log.text_id("text b")
        assert log.query("SELECT text FROM texts WHERE text_id = ?", (tid,)) == [{"text": "text b"}]
        assert [r["comment_key"] for r in log.query("SELECT comment_key FROM comments")] == ["a"]


def test_texts_are_looked_up_once_per_transaction(tmp_path):
    with StudyLog(tmp_path / "l.sqlite") as log:
        log.text_ids(["x", "y"])  # in the log before the transaction
        lookups: list[str] = []
        log.conn.set_trace_callback(lambda sql: lookups.append(sql) if "FROM texts WHERE text_hash" in sql else None)
        with log.transaction():
            first = log.text_ids(["x", "z"])
            again = log.text_ids(["z", "x", "y"])  # y: not looked up in this transaction yet
            third = log.text_ids(["y", "z"])
        assert first == {"x": 1, "z": 3} and again == {"z": 3, "x": 1, "y": 2} and third == {"y": 2, "z": 3}
        assert len(lookups) == 2  # [x, z], then [y] alone
        assert log.text_memo is None


def text_lookups(log: StudyLog) -> list[str]:
    seen: list[str] = []
    log.conn.set_trace_callback(lambda sql: seen.append(sql) if "FROM texts WHERE text_hash" in sql else None)
    return seen


def test_a_chunks_lookup_before_its_compute_is_its_transactions_when_nothing_was_written_between(tmp_path):
    with StudyLog(tmp_path / "l.sqlite") as log:
        det = log.ensure_detector("d", "1", "toxicity", None, {})
        x = log.text_id("x")
        log.add_score("x", det, {"toxicity": 0.1}, 0.1, 1.0, None)
        log.add_score("e", det, None, None, 1.0, "boom")  # an error: still to score
        other = log.ensure_detector("o", "1", "toxicity", None, {})
        log.add_score("e", other, {"toxicity": 0.2}, 0.2, 1.0, None)
        log.add_score("x", log.ensure_detector("not asked", "1", "toxicity", None, {}), None, 0.3, 1.0, None)
        seen, scored = log.seen_texts(["x", "y", "e", "z"], [det, other])
        assert scored == {det: {"x"}, other: {"e"}} and seen.ids == {"x": x, "e": x + 1}
        lookups = text_lookups(log)
        with log.transaction():
            assert log.known_texts(seen)
            ids = log.text_ids(["z", "x", "y", "e"])
            again = log.text_ids(["y", "z"])
        assert lookups == []  # every text was known: none looked up again under the lock
        assert ids == {"z": x + 2, "x": x, "y": x + 3, "e": x + 1} and again == {"y": x + 3, "z": x + 2}
        # the same ids as a log that looked each text up under the lock
        assert log.query("SELECT text FROM texts ORDER BY text_id") == [{"text": t} for t in "xezy"]
        # a later transaction does not take the earlier one's knowledge: "w" is looked up
        with log.transaction():
            log.text_ids(["w"])
        assert len(lookups) == 1


def test_a_text_another_writer_added_after_the_lookup_is_found_under_the_lock(tmp_path):
    db = tmp_path / "l.sqlite"
    with StudyLog(db) as log, StudyLog(db) as other:
        seen, _ = log.seen_texts(["a", "b", "c"], [])
        other.text_ids(["b"])  # another process writes between the lookup and the chunk's transaction
        with log.transaction():
            assert not log.known_texts(seen)
            ids = log.text_ids(["a", "b", "c"])
        assert ids["b"] == 1 and log.query("SELECT count(*) AS n FROM texts")[0]["n"] == 3


def test_a_lookup_is_not_taken_after_this_connection_wrote(tmp_path):
    with StudyLog(tmp_path / "l.sqlite") as log:
        seen, _ = log.seen_texts(["a", "b"], [])
        log.text_ids(["b"])  # this connection's own write (the chunk before, on an engine that overlaps them)
        with log.transaction():
            assert not log.known_texts(seen)
            assert log.text_ids(["a", "b"]) == {"b": 1, "a": 2}


def test_a_known_missing_text_undone_with_its_savepoint_is_added_again(tmp_path):
    with StudyLog(tmp_path / "l.sqlite") as log:
        seen, _ = log.seen_texts(["a", "b"], [])
        with log.transaction():
            assert log.known_texts(seen)
            with pytest.raises(TypeError):
                with log.transaction():
                    log.text_ids(["a"])
                    log.text_ids([7])  # type: ignore[list-item]  # not a str: raises, "a" is undone
            ids = log.text_ids(["b", "a"])
        assert log.query("SELECT text_id, text FROM texts ORDER BY text_id") == [
            {"text_id": ids["b"], "text": "b"}, {"text_id": ids["a"], "text": "a"}]


def test_an_audit_beside_a_writer_that_adds_its_texts_between_lookup_and_record(tmp_path, monkeypatch):
    """Another process adds a chunk's texts (and a good score of one) after the chunk's lookup: the
    audit finds them under the write lock, each text stays one row, and nothing is scored twice."""
    db = tmp_path / "log.sqlite"
    other = StudyLog(db)
    real = sinks.LogSink.unscored

    def unscored(self, texts, keys):
        todo = real(self, texts, keys)
        other.text_ids(list(texts)[:3])
        return todo

    monkeypatch.setattr(sinks.LogSink, "unscored", unscored)
    try:
        run_audit("davidson", db=db, limit=200, chunk_size=100, progress=False,
                  detector_objects={"s": StopsAtChunk(stop_at=0)})
    finally:
        other.close()
    assert count(db, "SELECT count(*) FROM comments") == 200
    assert count(db, "SELECT count(*) - count(DISTINCT text_hash) FROM texts") == 0
    assert count(db, "SELECT count(*) FROM comments c LEFT JOIN scores s USING (text_id) WHERE s.text_id IS NULL") == 0


def test_a_known_missing_text_once_added_is_found_after_the_memo_is_emptied(tmp_path, monkeypatch):
    from modlens.studylog.records import texts
    monkeypatch.setattr(texts, "TEXT_MEMO_MAX", 1)  # every new text empties the memo
    with StudyLog(tmp_path / "l.sqlite") as log:
        seen, _ = log.seen_texts(["a", "b"], [])
        with log.transaction():
            assert log.known_texts(seen)
            a = log.text_ids(["a"])["a"]
            log.text_ids(["b"])
            assert log.text_ids(["a"]) == {"a": a}  # looked up, not added a second time


def test_a_later_chunks_lookup_is_carried_past_the_commit_of_the_chunk_before(tmp_path):
    """Chunk 2's lookup, made before chunk 1 is recorded (an overlapped audit), learns the ids of the
    texts chunk 1 added (`records.texts.carried`) and is its transaction's own: nothing looked up under
    the lock, the ids those lookups give. Not when something wrote between it and chunk 1. A lookup
    that calls a present text missing (carried with a memo emptied past TEXT_MEMO_MAX) costs a lookup,
    never a second row."""
    from modlens.studylog.records.texts import carried, log_state

    with StudyLog(tmp_path / "l.sqlite") as log:
        stale, _ = log.seen_texts(["c", "d"], [])
        log.text_ids(["w"])  # a write after `stale`: the chunk's transaction below began at another state
        one, _ = log.seen_texts(["a", "b"], [])
        two, _ = log.seen_texts(["b", "c"], [])
        wrong, _ = log.seen_texts(["c"], [])
        lookups = text_lookups(log)
        with log.transaction():
            since = log_state(log)
            assert log.known_texts(one)
            first = log.text_ids(["a", "b"])
            memo, after = dict(log.text_memo or {}), log_state(log)
        assert carried(two, since, memo, after) and two.ids == {"b": first["b"]}
        assert not carried(stale, since, memo, after) and stale.ids == {}
        with log.transaction():
            assert log.known_texts(two)
            second = log.text_ids(["b", "c"])
        assert lookups == [] and second == {"b": first["b"], "c": 4}
        wrong.state = log_state(log)  # "c" is in the log now, and `wrong` says it is missing
        with log.transaction():
            assert log.known_texts(wrong)
            assert log.text_ids(["c"]) == {"c": 4}
        assert len(lookups) == 1
        assert [r["text"] for r in log.query("SELECT text FROM texts ORDER BY text_id")] == ["w", "a", "b", "c"]


def test_an_overlapped_audit_looks_each_chunk_up_once(tmp_path, monkeypatch):
    """At depth 2 every chunk's lookup is made before the chunk ahead of it is recorded; each chunk's
    record still takes its own (carried past the COMMITs before it): no text is looked up again under
    the lock but in the chunk after the progress row is written, and the rows are those of depth 1."""
    from modlens.chunks.compute import LocalCompute

    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"id": "k{i}", "text": "text {i % 450}"}}\n' for i in range(500)))

    def audit(depth: int) -> tuple[int, list[tuple]]:
        db = tmp_path / f"{depth}.sqlite"
        statements: list[str] = []
        real_connect = sqlite3.connect

        def traced(*args, **kwargs):
            conn = real_connect(*args, **kwargs)
            conn.set_trace_callback(lambda sql: statements.append(sql) if "FROM texts WHERE text_hash" in sql else None)
            return conn

        with monkeypatch.context() as mp:
            mp.setattr(sqlite3, "connect", traced)
            mp.setattr(LocalCompute, "depth", property(lambda self: depth))
            mp.setattr(sinks, "PROGRESS_EVERY_S", 1e9)  # the first chunk's progress row only
            run_audit(str(data), db=db, chunk_size=100, progress=False, detector_objects={"s": StopsAtChunk(stop_at=0)})
        con = sqlite3.connect(db)
        try:
            rows = [con.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in ("texts", "comments")]
            rows.append(con.execute("SELECT text_id, detector_id, labels_json, toxicity FROM scores ORDER BY rowid").fetchall())
        finally:
            con.close()
        return len(statements), rows

    under_lock_1, rows_1 = audit(1)
    under_lock_2, rows_2 = audit(2)
    # at most chunk 2 looks up again (when the first progress row is written after its lookup: the tasks'
    # timing decides); each chunk looking up again under the lock, as before the carry, gives 4
    assert under_lock_1 == 0 and under_lock_2 <= 1
    assert [r[:2] for r in rows_2[0]] == [r[:2] for r in rows_1[0]]
    assert [r[:6] for r in rows_2[1]] == [r[:6] for r in rows_1[1]] and rows_2[2] == rows_1[2]
