"""The local engine records chunk n while chunk n+1 computes, when a detector frees the event loop
while it computes (one that declares `releases_gil`, a remote detector: `chunks.compute.frees_the_loop`). What
it states stays exact: records, ids and run_items in the file's order, `n_done` counting recorded
chunks only, a stop leaving whole chunks, and the very rows of chunks one after the other.

The overlap is shown by events, never by time: the record of chunk 1 waits until chunk 2's detector
call has begun, and that call waits until chunk 1 is committed; without the overlap neither can
happen (each wait has a generous limit only so that a broken overlap fails instead of hanging)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any, Sequence

import pytest
import torch

from audit_rows import audit_rows, digests
from modlens.audit.attacks import AttackSpec
from modlens.audit import AuditError
from modlens.audit.run import AuditInterrupted, run_audit
from modlens.chunks import ChunkPipeline, LocalCompute, LogSink
from modlens.chunks.compute import OVERLAP_DEPTH, frees_the_loop
from modlens.chunks.pipeline import EarlierChunkFailed
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.config import StudyConfig
from modlens.datasets.base import DatasetItem

GOLDEN = Path(__file__).parent / "fixtures" / "audit_rows" / "golden.json"
WAIT_S = 60.0  # a limit for a wait that the overlap ends at once; only a broken overlap reaches it


def committed(db: Path, sql: str) -> int:
    con = sqlite3.connect(db)  # another connection: committed rows only
    try:
        return int(con.execute(sql).fetchone()[0])
    finally:
        con.close()


class Model(Detector):
    """A constant score from a detector that declares `releases_gil`, as a model does (so the engine
    overlaps its chunks). Its calls are counted; `on_call(n)` runs in the detector's worker thread
    at the start of call n (one call per chunk: chunks are smaller than `max_batch`)."""
    name, version, labels, toxicity_label, max_batch = "model", "1", ("toxicity",), "toxicity", 4096
    releases_gil = True

    def __init__(self, on_call: Any = None) -> None:
        super().__init__()
        self.calls = 0
        self.on_call = on_call

    def score(self, texts: Sequence[str]) -> list[Any]:
        self.calls += 1
        if self.on_call is not None:
            self.on_call(self.calls)
        return [{"toxicity": (len(t) % 10) / 10} for t in texts]


class Plain(Model):
    """The same scores in plain Python: it holds the GIL while it scores, and is not overlapped."""
    releases_gil = False


def test_the_engine_overlaps_chunks_for_a_model_or_a_remote_detector_only():
    assert frees_the_loop(Model()) and not frees_the_loop(Plain())
    undeclared = Plain()
    undeclared.model = torch.nn.Identity()
    assert not frees_the_loop(undeclared)  # the declaration decides, not what the detector holds
    remote = Plain()
    remote.remote = True
    assert frees_the_loop(remote)
    study = StudyConfig()
    assert LocalCompute(Engine(study, detectors={"m": Model(), "p": Plain()})).depth == OVERLAP_DEPTH == 2
    assert LocalCompute(Engine(study, detectors={"p": Plain()})).depth == 1


def test_an_audit_with_attacks_records_one_chunk_after_the_other(tmp_path, monkeypatch):
    """A chunk's attacks run after its record and before its items are done: no chunk overlaps them."""
    from modlens.audit import run

    depths: list[int] = []
    real = run._drive

    async def drive(runner: Any, feed: Any, *args: Any) -> None:
        depths.append(runner.depth)
        await real(runner, run.Feed(iter(()), set(), None), *args)  # no chunk: no attack to check with a model

    monkeypatch.setattr(run, "_drive", drive)
    for attack in (None, AttackSpec("tae", max_queries=4)):
        run_audit("davidson", db=tmp_path / f"{attack is None}.sqlite", limit=4, chunk_size=2, progress=False,
                  detector_objects={"m": Model()}, attack=attack)
    assert depths == [2, 1]


def record_spy(monkeypatch, before_record: Any = None) -> dict[int, threading.Event]:
    """Wraps `LogSink.record`: `before_record(k)` runs before the k-th chunk's record; the returned
    events are set once the k-th chunk is committed."""
    recorded: dict[int, threading.Event] = {k: threading.Event() for k in range(1, 20)}
    real = LogSink.record
    count = 0

    def record(self: LogSink, chunk: Any, *, done: bool = True) -> None:
        nonlocal count
        count += 1
        if before_record is not None:
            before_record(count)
        real(self, chunk, done=done)  # committed when it returns (no group commit)
        recorded[count].set()

    monkeypatch.setattr(LogSink, "record", record)
    return recorded


def test_chunk_2_computes_while_chunk_1_is_recorded_and_n_done_counts_recorded_chunks(tmp_path, monkeypatch):
    db = tmp_path / "log.sqlite"
    call_2_began = threading.Event()
    spans: list[bool] = []

    def before_record(k: int) -> None:  # on the event loop's thread
        if k == 1:
            assert call_2_began.wait(WAIT_S), "chunk 2's detector call had not begun when chunk 1 was recorded"

    recorded = record_spy(monkeypatch, before_record)

    def on_call(n: int) -> None:  # in the detector's thread
        if n == 2:
            call_2_began.set()
            spans.append(recorded[1].wait(WAIT_S))  # chunk 1 is committed while this call is under way

    seen: list[tuple[int, int]] = []
    res = run_audit("davidson", db=db, limit=300, chunk_size=100, progress=False,
                    detector_objects={"m": Model(on_call)},
                    on_chunk=lambda n: seen.append((n, committed(db, "SELECT count(*) FROM run_items"))))
    assert spans == [True]
    # the bar, the run's progress and on_chunk count recorded chunks only, never one still in flight
    assert [n for n, _ in seen] == [100, 200, 300] and all(rows >= n for n, rows in seen)
    assert res.n_items == 300 and committed(db, "SELECT n_done FROM audit_runs") == 300
    keys = [r[0] for r in sqlite3.connect(db).execute("SELECT comment_key FROM comments ORDER BY comment_id")]
    straight = tmp_path / "straight.sqlite"
    run_audit("davidson", db=straight, limit=300, chunk_size=300, progress=False, detector_objects={"m": Plain()})
    assert keys == [r[0] for r in sqlite3.connect(straight).execute(
        "SELECT comment_key FROM comments ORDER BY comment_id")]  # ids follow the file


@pytest.mark.parametrize("how", ["ctrl-c", "crash"])
def test_a_stop_while_chunk_3_computes_leaves_chunks_1_and_2_and_resumes_without_duplicates(tmp_path, monkeypatch, how):
    db = tmp_path / "log.sqlite"
    recorded = record_spy(monkeypatch)
    release = threading.Event()

    def on_call(n: int) -> None:
        if n == 3:  # chunk 3 computes; chunk 2, computed beside it, is committed first
            assert recorded[2].wait(WAIT_S)
            if how == "crash":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as a terminal sends it
            release.wait(WAIT_S)  # still computing when the audit stops

    try:
        with pytest.raises(AuditInterrupted) as stopped:
            run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False,
                      detector_objects={"m": Model(on_call)})
    finally:
        release.set()
        monkeypatch.undo()
    assert stopped.value.n_done == 200
    for table in ("comments", "run_items", "gold_labels"):
        assert committed(db, f"SELECT count(*) FROM {table}") == 200
    # none of chunk 3's rows: the texts and scores of an audit of the first 200 rows
    first = tmp_path / "first.sqlite"
    run_audit("davidson", db=first, limit=200, chunk_size=100, progress=False, detector_objects={"m": Plain()})
    for table in ("texts", "scores", "labels"):
        assert committed(db, f"SELECT count(*) FROM {table}") == committed(first, f"SELECT count(*) FROM {table}")
    assert committed(db, "SELECT n_done FROM audit_runs") == 200

    again = run_audit("davidson", db=db, limit=500, chunk_size=100, progress=False, detector_objects={"m": Model()})
    assert again.resumed and again.n_skipped == 200
    straight = tmp_path / "straight.sqlite"
    run_audit("davidson", db=straight, limit=500, chunk_size=100, progress=False, detector_objects={"m": Model()})
    rows = "SELECT c.comment_id, c.comment_key, t.text, s.toxicity FROM comments c JOIN texts t USING (text_id) " \
           "JOIN scores s USING (text_id) ORDER BY c.comment_id"
    assert sqlite3.connect(db).execute(rows).fetchall() == sqlite3.connect(straight).execute(rows).fetchall()
    assert committed(db, "SELECT count(*) FROM run_items") == 500


def test_a_chunk_that_fails_to_record_stops_the_audit_and_the_next_chunk_records_nothing(tmp_path, monkeypatch):
    db = tmp_path / "log.sqlite"
    attempted = threading.Event()

    def before_record(k: int) -> None:
        if k == 1:
            attempted.set()
            raise OSError("disk I/O error")  # as SQLite may say when the disk fails mid-write

    def on_call(n: int) -> None:
        if n == 2:  # chunk 2 ends its compute only once chunk 1's record has failed
            assert attempted.wait(WAIT_S)

    recorded = record_spy(monkeypatch, before_record)
    with pytest.raises(OSError, match="disk I/O error"):  # chunk 1's own error, not the one chunk 2 stops on
        run_audit("davidson", db=db, limit=300, chunk_size=100, progress=False, detector_objects={"m": Model(on_call)})
    assert not recorded[2].is_set()
    for table in ("comments", "run_items", "scores"):
        assert committed(db, f"SELECT count(*) FROM {table}") == 0
    assert sqlite3.connect(db).execute("SELECT status, n_done FROM audit_runs").fetchall() == [("interrupted", 0)]


def test_a_chunk_whose_compute_ended_first_is_not_recorded_after_one_before_it_failed():
    """Chunk 2 ends its compute while chunk 1 still computes; chunk 1's record then fails: chunk 2
    records nothing (its items would get ids and run_items ahead of chunk 1's)."""
    chunk_2_computed = asyncio.Event()

    class Gated(LocalCompute):
        calls = 0

        async def score(self, todo: Any) -> Any:
            Gated.calls += 1
            if Gated.calls == 1:
                await chunk_2_computed.wait()
            got = await super().score(todo)
            if Gated.calls == 2:
                chunk_2_computed.set()  # chunk 2 goes on to wait for its turn before chunk 1 may end
            return got

    class Sink:
        records = 0

        def unscored(self, texts: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
            return {k: list(texts) for k in keys}

        def record(self, chunk: Any, *, done: bool = True) -> None:
            self.records += 1
            raise OSError("disk I/O error")

    async def two_chunks() -> tuple[Any, Any]:
        pipeline = ChunkPipeline(Gated(Engine(StudyConfig(), detectors={"p": Plain()})), Sink())
        one = asyncio.ensure_future(pipeline.run_chunk([DatasetItem("a", "text a")]))
        two = asyncio.ensure_future(pipeline.run_chunk([DatasetItem("b", "text b")]))
        await asyncio.wait([one, two])
        assert pipeline.sink.records == 1  # type: ignore[attr-defined]
        return one.exception(), two.exception()

    first, second = asyncio.run(two_chunks())
    assert isinstance(first, OSError) and isinstance(second, EarlierChunkFailed)


def test_a_bad_row_met_while_a_chunk_computes_stops_the_audit_after_that_chunk_is_recorded(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("text,toxic\n" + "".join(f"comment {i},{'maybe' if i == 350 else i % 2}\n" for i in range(1, 351)),
                    encoding="utf-8")
    chunk_2_counted = threading.Event()

    def on_call(n: int) -> None:
        if n == 3:  # chunk 3 still computes when the reader meets the bad row (right after chunk 2 is counted)
            assert chunk_2_counted.wait(WAIT_S)

    def on_chunk(n_done: int) -> None:
        if n_done == 200:
            chunk_2_counted.set()

    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditError, match=r"row 350: toxic = 'maybe'.*300 items before it are in the log"):
        run_audit(str(path), db=db, chunk_size=100, progress=False, detector_objects={"m": Model(on_call)},
                  on_chunk=on_chunk)
    assert committed(db, "SELECT count(*) FROM run_items") == 300


def test_overlapped_chunks_write_the_rows_of_chunks_one_after_the_other(tmp_path, monkeypatch):
    """The golden audits (texts repeated across chunks, score errors, normalization, variants, a
    resume) at depth 2, for a detector in plain Python: the very rows, ids included."""
    monkeypatch.setattr(LocalCompute, "depth", property(lambda self: 2))
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = digests(audit_rows(tmp_path))
    for name in sorted(n for n, d in golden.items() if d["rows"]):
        assert got.get(name) == golden[name], f"{name}: rows differ from chunks one after the other"


class FailsOnce(Model):
    """No score for a text with 'zz' in its first call only (an error row; a later chunk retries it);
    counts the texts it is asked for."""

    def __init__(self, plain: bool) -> None:
        super().__init__()
        if plain:
            self.releases_gil = False
        self.asked = 0

    def score(self, texts: Sequence[str]) -> list[Any]:
        self.asked += len(texts)
        first = self.calls == 0
        return [None if "zz" in t and first else got for t, got in zip(texts, super().score(texts))]


def test_a_text_the_chunk_before_scores_is_left_to_it_and_retried_only_after_its_error(tmp_path, monkeypatch):
    path = tmp_path / "comments.csv"
    texts = ["a", "shared", "shared zz", "b", "c", "shared", "shared zz", "d", "e", "shared", "f", "g"]
    path.write_text("id,text\n" + "".join(f"k{i},{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    left: list[list[str]] = []
    real = ChunkPipeline._still_unscored

    def spy(self: ChunkPipeline, todo: Any) -> dict[str, list[str]]:
        left.extend(todo.values())
        return real(self, todo)

    monkeypatch.setattr(ChunkPipeline, "_still_unscored", spy)
    runs, rows = {}, {}
    for plain in (True, False):
        db, det = tmp_path / f"{plain}.sqlite", FailsOnce(plain)
        res = run_audit(str(path), db=db, chunk_size=4, progress=False, detector_objects={"m": det})
        runs[plain] = (res.n_scored, res.n_missing, det.asked)
        con = sqlite3.connect(db)
        rows[plain] = [con.execute(q).fetchall() for q in (
            "SELECT comment_id, comment_key, text_id FROM comments ORDER BY comment_id",
            "SELECT text_id, text FROM texts ORDER BY text_id",
            "SELECT text_id, detector_id, labels_json, toxicity, error FROM scores ORDER BY text_id, detector_id",
            "SELECT run_id, comment_id FROM run_items ORDER BY comment_id")]
        con.close()
    # chunk 2 computed beside chunk 1 and left it both shared texts; after chunk 1's record it
    # scored again only the one chunk 1 has an error for, as chunks one after the other do
    assert left == [["shared", "shared zz"]]
    assert runs[False] == runs[True] and rows[False] == rows[True]
    assert all(r[3] is not None and r[4] is None for r in rows[False][2])  # the retry's score replaced the error
    assert runs[False][2] == len(set(texts)) + 1  # every text asked for once, "shared zz" twice


def test_after_a_bad_row_the_progress_counts_the_recorded_items_not_the_rows_read_past_them(tmp_path, capsys):
    """Two chunks in flight: the reader meets the bad row while reading chunk 4, with chunk 3 still in
    flight. Chunk 4's 49 good rows were read but are never recorded, so the bar, `on_chunk` and the
    run's progress say the 300 items the log holds (and the error says), not the 349 rows read."""
    path = tmp_path / "big.csv"
    path.write_text("text,toxic\n" + "".join(f"comment {i},{'maybe' if i == 350 else i % 2}\n" for i in range(1, 351)),
                    encoding="utf-8")
    said: list[int] = []
    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditError, match=r"row 350: toxic = 'maybe'.*300 items before it are in the log"):
        run_audit(str(path), db=db, chunk_size=100, progress=True, detector_objects={"m": Model()},
                  on_chunk=said.append)
    assert said == [100, 200, 300]
    assert committed(db, "SELECT count(*) FROM run_items") == 300
    bar = capsys.readouterr().err.split("\r")[-1]  # the bar as it was left
    assert "300/350" in bar, bar
