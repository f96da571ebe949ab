"""Study-log ingest: rows/s, row-at-a-time API (before) vs the batched API (after), in one run.

Tables: score rows (texts already in the log, as an audit scores the comments it registered;
and texts new to the log, as normalized forms and variants are), comments with their texts,
and variants. Both paths write the same chunks inside one transaction per chunk (what an audit
does); "before" also runs with the connection settings and JSON encoding of the code before the
batched API (SQLite's default page cache and checkpointing), so it measures that code. After
each pair the two logs are compared row by row (timestamps aside): the same rows, the same ids.

    python bench/bench_studylog.py [--rows 100000] [--chunk 10000] [--detectors 5] [--dir /tmp]
    python bench/bench_studylog.py --writer     # also: daemon-style pages through LogWriter
    python bench/bench_studylog.py --rows 1000000 --tables scores --sync FULL   # corpus scale
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from modlens.rows import CommentRow, Variant
from modlens.services.recording import record_scores_many
from modlens.studylog import connection
from modlens.studylog.records import comments as records_comments
from modlens.studylog.records import media as records_media
from modlens.studylog.records import runs as records_runs
from modlens.studylog.records import scores as records_scores
from modlens.studylog.records import sessions as records_sessions
from modlens.studylog.records import variants as records_variants
from modlens.studylog.store import LogWriter, StudyLog

PAGE = 20
PLATFORM = "dataset:bench"


class Result:
    def __init__(self, labels: dict[str, float], toxicity: float) -> None:
        self.labels, self.toxicity, self.latency_ms, self.error = labels, toxicity, 2.5, None


def text(n: int, prefix: str = "comment") -> str:
    return f"{prefix} number {n}: " + "lorem ipsum dolor sit amet " * (1 + n % 7)


def _old_canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


# every module that calls canonical_json by name (the "before" path swaps it for the old encoder)
JSON_USERS = [m for m in (records_comments, records_scores, records_sessions, records_variants, records_runs,
                          records_media) if hasattr(m, "canonical_json")]


@contextlib.contextmanager
def before_settings() -> Iterator[None]:
    """The code before the batched API: SQLite's default cache and checkpointing, and a JSON
    encoder built per call (`json.dumps` with options)."""
    saved = (connection.CACHE_SIZE_KIB, connection.WAL_AUTOCHECKPOINT_PAGES, connection.JOURNAL_SIZE_LIMIT)
    saved_json = [m.canonical_json for m in JSON_USERS]
    connection.CACHE_SIZE_KIB, connection.WAL_AUTOCHECKPOINT_PAGES, connection.JOURNAL_SIZE_LIMIT = 2000, 1000, -1
    for m in JSON_USERS:
        m.canonical_json = _old_canonical_json  # type: ignore[attr-defined]
    try:
        yield
    finally:
        connection.CACHE_SIZE_KIB, connection.WAL_AUTOCHECKPOINT_PAGES, connection.JOURNAL_SIZE_LIMIT = saved
        for m, fn in zip(JSON_USERS, saved_json):
            m.canonical_json = fn  # type: ignore[attr-defined]


def open_log(path: Path, before: bool, sync: str) -> StudyLog:
    log = StudyLog(path, synchronous=sync)
    if before:
        log.conn.execute("PRAGMA temp_store = DEFAULT")
    return log


def chunks(n: int, size: int) -> Iterator[range]:
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


def timed(log: StudyLog, n_rows: int, chunk: int, make: Callable[[range], Any],
          write: Callable[[StudyLog, Any], object]) -> tuple[float, float]:
    """(rows/s wall, rows per CPU second) of `write`, one transaction per chunk; the chunk's input
    is built by `make` before the clock starts (the bench's own data is not the log's cost)."""
    wall = cpu = 0.0
    for part in chunks(n_rows, chunk):
        data = make(part)
        t0, c0 = time.perf_counter(), time.process_time()
        with log.transaction():
            write(log, data)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
    return n_rows / wall, n_rows / cpu


# --- the workloads: (prepare, before, after), each writes rows [part] -----------------------------

def setup_detectors(log: StudyLog, n_det: int) -> list[int]:
    with log.transaction():
        return [log.ensure_detector(f"det{d}", "1", "toxic", 0.5, {"d": d}) for d in range(n_det)]


def score_rows(part: range, dets: list[int], prefix: str) -> Iterator[tuple[str, int, Result]]:
    for r in part:
        n, d = divmod(r, len(dets))
        s = (n * 7919 + d) % 1000 / 1000
        yield text(n, prefix), dets[d], Result({"non_toxic": 1 - s, "toxic": s}, s)


def scores_workload(n_det: int, prefix: str, preload_texts: bool):
    """(text, detector key, result) rows, as the engine hands them to recording."""
    def prepare(log: StudyLog, n_rows: int) -> dict[str, int]:
        dets = setup_detectors(log, n_det)
        if preload_texts:  # the audit registered these comments before scoring them
            with log.transaction():
                log.text_ids(text(n, prefix) for n in range(n_rows // n_det + 1))
        return {f"k{i}": d for i, d in enumerate(dets)}

    def make(part: range, ids: dict[str, int]) -> list[tuple[str, str, Result]]:
        key = {d: k for k, d in ids.items()}
        return [(t, key[det], r) for t, det, r in score_rows(part, list(ids.values()), prefix)]

    def before(log: StudyLog, rows: list[tuple[str, str, Result]], ids: dict[str, int]) -> None:
        for t, k, r in rows:  # what record_scores did: add_score per row
            log.add_score(t, ids[k], r.labels, r.toxicity, r.latency_ms, r.error)

    def after(log: StudyLog, rows: list[tuple[str, str, Result]], ids: dict[str, int]) -> None:
        record_scores_many(log, ids, rows)
    return prepare, make, before, after


def comments_workload():
    def prepare(log: StudyLog, n_rows: int) -> int:
        return log.ensure_page(PLATFORM, "file.csv", None, None)

    def make(part: range, page: int) -> list[CommentRow]:
        return [CommentRow(f"c{n}", text(n), page) for n in part]

    def before(log: StudyLog, rows: list[CommentRow], page: int) -> None:
        for r in rows:
            log.add_comment(PLATFORM, r.key, r.page_id, r.text)

    def after(log: StudyLog, rows: list[CommentRow], page: int) -> None:
        log.add_comments_many(PLATFORM, rows)
    return prepare, make, before, after


def variants_workload(per_comment: int = 4):
    def variant(n: int) -> Variant:
        c, k = divmod(n, per_comment)
        return Variant(text(n, "variant"), ["char_swap", "homoglyph", "leet", "spacing"][k % 4],
                       {"rate": 0.1, "k": k}, 7, [(3, 5), (9, 10)], source_text=text(c))

    def prepare(log: StudyLog, n_rows: int) -> dict[int, int]:
        page = log.ensure_page(PLATFORM, "file.csv", None, None)
        n_comments = n_rows // per_comment + 1
        with log.transaction():
            ids = log.add_comments_many(PLATFORM, [CommentRow(f"c{n}", text(n), page) for n in range(n_comments)])
        return dict(enumerate(ids))

    def make(part: range, cids: dict[int, int]) -> list[tuple[int, Variant]]:
        return [(cids[n // per_comment], variant(n)) for n in part]

    def before(log: StudyLog, rows: list[tuple[int, Variant]], cids: dict[int, int]) -> None:
        for cid, v in rows:
            log.add_variant(cid, v, None)

    def after(log: StudyLog, rows: list[tuple[int, Variant]], cids: dict[int, int]) -> None:
        log.add_variants_many(rows, None)
    return prepare, make, before, after


TIMESTAMPS = {"created_at", "first_seen", "first_used", "started_at", "finished_at"}


def table_rows(path: Path) -> dict[str, list[tuple]]:
    with StudyLog(path, readonly=True) as log:
        out = {}
        for t in log.table_names():
            cols = [r[1] for r in log.conn.execute(f"PRAGMA table_info([{t}])") if r[1] not in TIMESTAMPS]
            out[t] = sorted(log.conn.execute(f"SELECT {', '.join(cols)} FROM [{t}]").fetchall(), key=repr)
        return out


def run_pair(work: Path, name: str, workload, n_rows: int, chunk: int,
             sync: str) -> tuple[tuple[float, float], tuple[float, float], bool]:
    prepare, make, before, after = workload
    rates = []
    for label, fn in (("before", before), ("after", after)):
        path = work / f"{name}-{label}-{sync}.sqlite"
        with (before_settings() if label == "before" else contextlib.nullcontext()):
            with open_log(path, label == "before", sync) as log:
                ctx = prepare(log, n_rows)
                rates.append(timed(log, n_rows, chunk, lambda part, ctx=ctx: make(part, ctx),
                                   lambda lg, data, fn=fn, ctx=ctx: fn(lg, data, ctx)))
    same = table_rows(work / f"{name}-before-{sync}.sqlite") == table_rows(work / f"{name}-after-{sync}.sqlite")
    for label in ("before", "after"):
        (work / f"{name}-{label}-{sync}.sqlite").unlink()
    return rates[0], rates[1], same


# --- daemon-style pages through the LogWriter (the earlier benchmark, --writer) --------------------

def store_row(log: StudyLog, n: int, detector_id: int) -> None:
    t = text(n)
    log.add_comment("bench", f"c{n}", None, t, author_hash=f"{n:08x}")
    log.add_score(t, detector_id, {"toxic": 0.1, "non_toxic": 0.9}, 0.1, 3.0, None)


async def through_writer(path: Path, rows: int, clients: int, max_batch: int) -> float:
    writer = LogWriter(path, max_batch=max_batch)
    await writer.start()
    det = await writer.submit(lambda log: log.ensure_detector("bench", "1", "toxic", 0.5, {}))
    queue: asyncio.Queue[int] = asyncio.Queue()
    for p in range(0, rows, PAGE):
        queue.put_nowait(p)

    async def client() -> None:
        while not queue.empty():
            s = queue.get_nowait()
            await writer.submit(lambda log, s=s: [store_row(log, n, det) for n in range(s, min(s + PAGE, rows))])

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    await writer.stop()
    return rows / elapsed


def filesystem(path: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True, check=True).stdout.splitlines()
        return out[-1].split()[1]
    except Exception:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="rows per table and path")
    ap.add_argument("--chunk", type=int, default=10_000, help="rows per transaction")
    ap.add_argument("--detectors", type=int, default=5, help="detectors scoring each text")
    ap.add_argument("--sync", nargs="+", default=["FULL", "NORMAL"], choices=["FULL", "NORMAL"])
    ap.add_argument("--tables", nargs="+", default=["scores", "scores-new", "comments", "variants"],
                    choices=["scores", "scores-new", "comments", "variants"])
    ap.add_argument("--writer", action="store_true", help="also daemon-style pages of 20 through LogWriter")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the scratch databases go (use the disk the real log lives on)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="modlens-bench-", dir=args.dir))
    load = os.getloadavg()[0]
    print(f"study-log ingest: {args.rows:,} rows per table, {args.chunk:,} per transaction, {args.detectors} detectors, "
          f"{os.cpu_count()} cores, load {load:.1f}, {filesystem(work)} at {work}\n")
    print("rows/s is wall time; in brackets, rows per CPU second of this process (what a quiet machine would\n"
          "approach; it leaves out waits for fsync and for other processes' CPU).\n")
    print("| synchronous | rows | before (row at a time) rows/s | after (batched) rows/s | speed-up | same rows |")
    print("|---|---|---:|---:|---:|---|")
    workloads = [("scores (texts in the log)", "scores", scores_workload(args.detectors, "comment", True)),
                 ("scores (new texts)", "scores-new", scores_workload(args.detectors, "normalized", False)),
                 ("comments with texts", "comments", comments_workload()),
                 ("variants", "variants", variants_workload())]
    try:
        for sync in args.sync:
            for label, name, workload in workloads:
                if name not in args.tables or sync != args.sync[0] and not name.startswith("scores"):
                    continue  # the other mode: score rows only
                (b, b_cpu), (a, a_cpu), same = run_pair(work, name, workload, args.rows, args.chunk, sync)
                print(f"| {sync} | {label} | {b:,.0f} ({b_cpu:,.0f}) | {a:,.0f} ({a_cpu:,.0f}) | {a / b:.1f}x | "
                      f"{'yes' if same else 'NO'} |", flush=True)
        if args.writer:
            print("\ndaemon-style: comment + score per row, pages of 20, 16 clients, through LogWriter (max 256 calls)")
            for sync in args.sync:
                connection.SYNCHRONOUS = sync
                rate = asyncio.run(through_writer(work / f"writer-{sync}.sqlite", 4000, 16, 256))
                print(f"  {sync}: {rate:,.0f} rows/s")
    finally:
        connection.SYNCHRONOUS = "FULL"
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
