"""Study-log ingest: rows/s through the batched LogWriter vs one transaction per row, with
synchronous=FULL (the default, fsync per commit) and NORMAL for reference.

A "row" is what the daemon stores per comment: the comment (with its text) plus one score.
Pages of 20 comments are submitted by concurrent clients, as the daemon does.

    python bench/bench_studylog.py [--rows 4000] [--clients 16] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from modlens.studylog import store
from modlens.studylog.store import LogWriter, StudyLog

PAGE = 20


def store_row(log: StudyLog, n: int, detector_id: int) -> None:
    text = f"comment number {n}: " + "lorem ipsum dolor sit amet " * (1 + n % 7)
    cid = log.add_comment("bench", f"c{n}", None, text, author_hash=f"{n:08x}")
    log.add_score(text, detector_id, {"toxic": 0.1, "non_toxic": 0.9}, 0.1, 3.0, None)
    return cid


def one_transaction_per_row(path: Path, rows: int) -> float:
    """Direct StudyLog calls, each row committed on its own (what a naive writer does)."""
    with StudyLog(path) as log:
        det = log.ensure_detector("bench", "1", "toxic", 0.5, {})
        t0 = time.perf_counter()
        for n in range(rows):
            with log.transaction():
                store_row(log, n, det)
        return rows / (time.perf_counter() - t0)


async def through_writer(path: Path, rows: int, clients: int, max_batch: int) -> tuple[float, float]:
    """Concurrent clients each submit one call per page (20 rows), like the daemon."""
    writer = LogWriter(path, max_batch=max_batch)
    await writer.start()
    det = await writer.submit(lambda log: log.ensure_detector("bench", "1", "toxic", 0.5, {}))
    pages = list(range(0, rows, PAGE))
    queue: asyncio.Queue[int] = asyncio.Queue()
    for p in pages:
        queue.put_nowait(p)
    latencies: list[float] = []

    async def client():
        while not queue.empty():
            start = queue.get_nowait()
            t = time.perf_counter()
            await writer.submit(lambda log, s=start: [store_row(log, n, det) for n in range(s, min(s + PAGE, rows))])
            latencies.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    await writer.stop()
    latencies.sort()
    return rows / elapsed, latencies[len(latencies) // 2] * 1000


def filesystem(path: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True, check=True).stdout.splitlines()
        return out[-1].split()[1]
    except Exception:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the scratch databases go (use the disk the real log lives on)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="modlens-bench-", dir=args.dir))
    print(f"study-log ingest, {args.rows} rows (comment + score), pages of {PAGE}, {args.clients} clients, "
          f"{os.cpu_count()} cores, {filesystem(work)} at {work}\n")
    print("| synchronous | path | rows/s | page p50 ms | vs one tx/row |")
    print("|---|---|---:|---:|---:|")
    try:
        for sync in ("FULL", "NORMAL"):
            store.SYNCHRONOUS = sync  # read by StudyLog at open
            per_row = one_transaction_per_row(work / f"row-{sync}.sqlite", args.rows)
            print(f"| {sync} | one transaction per row | {per_row:,.0f} | - | 1.0x |")
            one, p50_one = asyncio.run(through_writer(work / f"w1-{sync}.sqlite", args.rows, args.clients, 1))
            print(f"| {sync} | LogWriter, one transaction per page | {one:,.0f} | {p50_one:.1f} | {one / per_row:.1f}x |")
            batched, p50 = asyncio.run(through_writer(work / f"wb-{sync}.sqlite", args.rows, args.clients, 256))
            print(f"| {sync} | LogWriter, batched (max 256 calls) | {batched:,.0f} | {p50:.1f} | {batched / per_row:.1f}x |")
    finally:
        store.SYNCHRONOUS = "FULL"
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
