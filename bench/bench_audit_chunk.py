"""What an audit's chunk size (rows per transaction) costs the log's other writers, for the choice
of its default: each chunk is one transaction, so a bigger chunk writes the log's random-keyed
index pages fewer times (`bench_audit_floor.py` measures the rows/s) but holds the write lock
longer and keeps more rows in memory and at risk.

For each chunk size, in a fresh process (so that its peak memory is its own): `run_audit` of the
shipped Davidson file with a free detector (a constant score) into a fresh log, while a second
process writes a page of 20 comments every 20 ms into the same log, as the daemon does when a
participant's page arrives (one transaction: the page, its comments). It prints

- the audit's rows per CPU second and wall rows/s (the writer takes some of both);
- each chunk's transaction (BEGIN IMMEDIATE to COMMIT, the write lock held): median and max, wall
  and CPU milliseconds (wall includes waiting for the writer's lock and this machine's load);
- the writer's transactions during the audit: median, 95th percentile and max milliseconds, against
  the same writes before the audit began (alone);
- the audit process's peak resident memory above what it held before the audit;
- the rows a crash can lose to recompute: one chunk (two on the Ray engine, which computes one
  chunk while the driver writes the one before).

First, what taking the write lock costs a writer with no other writer beside it: an empty
transaction (BEGIN IMMEDIATE to COMMIT, nothing written, so no fsync), without and with the writers'
turnstile file beside the log (`studylog/connection.py`, made once a writer has had to wait).

    python bench/bench_audit_chunk.py [--chunks 256 1024 2048 4096] [--rows 24783] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PAGE = 20          # comments per page the writer writes
EVERY_S = 0.02     # between the writer's pages
ALONE = 50         # pages written before the audit starts: the writer's own time


def writer(db: str, started: Any, stop: Any, out: Any) -> None:
    """Pages of comments into `db` until `stop`: each page's transaction in ms, alone then during the audit."""
    from modlens.rows import CommentRow
    from modlens.studylog.store import StudyLog

    log = StudyLog(db)
    times: dict[str, list[float]] = {"alone": [], "during": []}
    i = 0
    while not stop.is_set():
        phase = "alone" if i < ALONE else "during"
        if i == ALONE:
            started.set()  # the audit may start
        t0 = time.perf_counter()
        with log.transaction():
            page = log.ensure_page("youtube", f"page-{i}", f"https://www.youtube.com/watch?v=v{i}", None)
            log.add_comments_many("youtube", [CommentRow(key=f"c{i}-{j}", text=f"comment {i}.{j} you idiot",
                                                         page_id=page) for j in range(PAGE)])
        times[phase].append((time.perf_counter() - t0) * 1e3)
        i += 1
        time.sleep(EVERY_S)
    log.close()
    out.put(times)


def one(chunk: int, n_rows: int) -> dict[str, Any]:
    """One audit at `chunk` beside the writer, in this (fresh) process."""
    sys.path.insert(0, str(Path(__file__).parent))
    from free_detector import Free

    from modlens.audit.run import run_audit
    from modlens.chunks import sinks
    from modlens.studylog.store import StudyLog

    holds: list[tuple[float, float]] = []  # (wall ms, CPU ms) per chunk transaction
    record = sinks.LogSink.record

    def timed_record(self: Any, *args: Any, **kwargs: Any) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        record(self, *args, **kwargs)
        holds.append(((time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3))

    sinks.LogSink.record = timed_record  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "log.sqlite")
        StudyLog(db).close()
        ctx = mp.get_context("spawn")
        started, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=writer, args=(db, started, stop, out))
        proc.start()
        started.wait(120)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        c0, t0 = time.process_time(), time.perf_counter()
        res = run_audit("davidson", db=db, limit=n_rows, detector_objects={"free": Free()}, progress=False,
                        chunk_size=chunk)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stop.set()
        times = out.get(timeout=120)
        proc.join(30)
    return {"chunk": chunk, "n": res.n_items, "cpu": cpu, "wall": wall, "holds": holds, "writer": times,
            "rss_mib": (peak - rss0) / 1024}


def uncontended(n: int = 2000, repeats: int = 5) -> str:
    """µs per empty transaction of a lone writer, median of `repeats` runs of `n`: without the
    turnstile file, then with it (the lock it takes and drops each time)."""
    from modlens.studylog import connection
    from modlens.studylog.store import StudyLog

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "log.sqlite"
        for present in (False, True):
            if present:  # as a writer that waited leaves it (an older tree has none to use: the same time)
                (Path(tmp) / f"log.sqlite{getattr(connection, 'TURNSTILE_SUFFIX', '-writers')}").touch(mode=0o600)
            runs = []
            with StudyLog(db) as log:
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    for _ in range(n):
                        with log.transaction():
                            pass
                    runs.append((time.perf_counter() - t0) / n * 1e6)
            out.append(f"{statistics.median(runs):.1f}")
    return f"{out[0]} µs, with the turnstile file {out[1]} µs"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def spread(xs: list[float]) -> str:
    """median / p95 / max ms, or a dash when the writer wrote no page meanwhile (a tiny run)."""
    return f"{statistics.median(xs):.1f} / {pct(xs, 0.95):.1f} / {max(xs):.1f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, nargs="+", default=[256, 1024, 2048, 4096])
    ap.add_argument("--rows", type=int, default=24_783, help="Davidson rows (all: 24,783)")
    ap.add_argument("--rounds", type=int, default=3, help="audits per chunk size, each in a fresh process (pooled)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one chunk size, JSON out
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.rows)))
        return
    print(f"{os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}; writer: a page of {PAGE} comments "
          f"every {EVERY_S * 1e3:.0f} ms; {args.rounds} rounds per chunk size, medians (rates, memory) and "
          "pooled transactions")
    print(f"an uncontended writer's empty transaction (median of 5 × 2,000): {uncontended()}\n")
    print("| chunk | audit rows per CPU s | wall rows/s | chunk transaction ms: median / max (CPU median / max) "
          "| writer ms alone: median / p95 / max | writer ms during: median / p95 / max (pages) | peak RSS above start MiB (median) "
          "| rows a crash recomputes (local / Ray) |")
    print("|---:|---:|---:|---|---|---|---:|---|")
    for chunk in args.chunks:
        rounds = []
        for _ in range(args.rounds):
            got = subprocess.run([sys.executable, __file__, "--one", str(chunk), "--rows", str(args.rows)],
                                 capture_output=True, text=True, check=True)
            rounds.append(json.loads(got.stdout.strip().splitlines()[-1]))
        n = rounds[0]["n"]
        walls = [h[0] for r in rounds for h in r["holds"]]
        cpus = [h[1] for r in rounds for h in r["holds"]]
        alone = [t for r in rounds for t in r["writer"]["alone"]]
        during = [t for r in rounds for t in r["writer"]["during"]]
        print(f"| {chunk} | {statistics.median(n / r['cpu'] for r in rounds):,.0f} "
              f"| {statistics.median(n / r['wall'] for r in rounds):,.0f} "
              f"| {statistics.median(walls):.0f} / {max(walls):.0f} ({statistics.median(cpus):.0f} / {max(cpus):.0f}) "
              f"| {spread(alone)} | {spread(during)} ({len(during)}) "
              f"| {statistics.median(r['rss_mib'] for r in rounds):.0f} | {chunk:,} / {2 * chunk:,} |", flush=True)


if __name__ == "__main__":
    main()
