"""Daemon benchmark: comments/s and page latency through the real socket, batched vs one model
call per comment, with 1, 4 and 16 concurrent clients; plus study-log ingest rows/s.

    python bench/bench_daemon.py [--data PATH] [--pages 128]

Everything runs on loopback in one process (daemon and clients share the CPU, as they would
on a rater's laptop). The detector is the real `minilm-toxicity`; if its trained head is not
installed yet, the same encoder with an untrained head of the same shape is used (identical
compute, meaningless scores; printed as such). Loops are bounded by --pages.
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

from modlens.config import parse_study
from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.engine import Engine
from modlens.paths import shipped_data
from modlens.protocol.client import make_pages, send_pages
from modlens.studylog.store import LogWriter

from modlens.daemon.app import create_app

TOKEN = "bench-token"
DEFAULT_DATA = shipped_data() / "noisyhate" / "dev.csv"


def load_now() -> str:
    """1/5/15-minute load averages: other processes competing for the CPU during the run."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def load_detector(tmp: Path):
    try:
        return registry.create("minilm-toxicity"), "minilm-toxicity"
    except DetectorUnavailable as err:
        if err.status != "missing_weights":
            raise
    import numpy as np

    from modlens.detectors.minilm import Head, MiniLMToxicity, SentenceEncoder

    enc = SentenceEncoder(device="cpu")
    head = Head(weights=np.random.default_rng(0).normal(size=enc.dim) * 0.1, bias=0.0)
    path = head.save(tmp / "bench-head.json")
    return MiniLMToxicity(enc, head, Path(path)), "minilm-toxicity (untrained bench head: throughput only)"


def load_texts(path: Path, n: int) -> list[str]:
    texts: list[str] = []
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                for col in ("clean", "perturbed"):
                    if row.get(col, "").strip():
                        texts.append(row[col].strip())
    base = texts or ["this is a perfectly ordinary comment about the video"]
    # distinct texts, so the batcher cannot merge duplicates and flatter the numbers
    return [f"{base[i % len(base)]} #{i}" for i in range(n)]


async def run_load(engine: Engine, study, db: Path, texts: list[str], clients: int, tag: str):
    app = create_app(study, db, TOKEN, engine=engine)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    rows = [(f"{tag}-{i}", t) for i, t in enumerate(texts)]
    pages = make_pages(rows, 20, "bench", "https://bench.invalid/", tag)
    try:
        stats = await send_pages(f"ws://127.0.0.1:{port}/ws", TOKEN, pages, concurrency=clients, variants=False)
    finally:
        await runner.cleanup()
    lat = sorted(p.latency_ms for p in stats.pages)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    return stats.comments / stats.wall_s, statistics.median(lat), p99


async def bench_ingest(db: Path, n: int) -> tuple[float, int]:
    writer = LogWriter(db)
    await writer.start()
    try:
        page = await writer.submit(lambda lg: lg.ensure_page("bench", "ingest", None, None))
        det = await writer.submit(lambda lg: lg.ensure_detector("bench", "1", "toxic", 0.5, {}))
        t0 = time.perf_counter()

        def write(i: int):
            def fn(lg):
                cid = lg.add_comment("bench-ingest", f"k{i}", page, f"ingest comment number {i}")
                lg.add_score(f"ingest comment number {i}", det, {"toxic": 0.1}, 0.1, 1.0, None)
                return cid
            return fn

        await asyncio.gather(*(writer.submit(write(i)) for i in range(n)))
        dt = time.perf_counter() - t0
        batches = writer.batches
    finally:
        await writer.stop()
    return n * 3 / dt, batches  # rows: comment + text + score per call


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pages", type=int, default=128, help="20-comment pages per run (bounds the run time)")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--ingest", type=int, default=5000, help="comments written in the ingest benchmark")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="modlens-bench-"))
    study = parse_study({"study_id": "bench", "detectors": [{"name": "minilm-toxicity"}],
                         "normalizer": {"enabled": False}, "perturbation": {"enabled": False},
                         "limits": {"messages_per_second": 1000, "burst": 1000}})
    detector, label = load_detector(tmp)
    texts = load_texts(args.data, args.pages * 20)
    print(f"detector: {label}, version {detector.version}, max_batch {detector.max_batch}")
    print(f"{len(texts)} distinct comments per run in pages of 20; daemon and clients share this machine "
          f"({os.cpu_count()} cores, load average {load_now()})\n")

    batched = Engine(study, detectors={"minilm-toxicity": detector}, max_delay_ms=10.0)
    single = Engine(study, detectors={"minilm-toxicity": detector}, max_delay_ms=0.0)
    single.runners["minilm-toxicity"].batcher.max_batch = 1  # one model call per comment
    await batched.score(texts[:40])  # warm up the model (first call allocates)

    print(f"{'clients':>7} | {'batched c/s':>11} {'p50 ms':>8} {'p99 ms':>8} | {'per-comment c/s':>15} {'p50 ms':>8} "
          f"{'p99 ms':>8} | {'speed-up':>8}")
    ratios = []
    for n in args.clients:
        b = await run_load(batched, study, tmp / f"b{n}.sqlite", texts, n, f"b{n}")
        s = await run_load(single, study, tmp / f"s{n}.sqlite", texts, n, f"s{n}")
        ratios.append(b[0] / s[0])
        print(f"{n:>7} | {b[0]:>11.1f} {b[1]:>8.0f} {b[2]:>8.0f} | {s[0]:>15.1f} {s[1]:>8.0f} {s[2]:>8.0f} | "
              f"{ratios[-1]:>7.1f}x", flush=True)
    r = batched.runners["minilm-toxicity"].batcher
    print(f"\nbatched path: {r.items} texts in {r.batches} model calls ({r.items / max(1, r.batches):.1f} per call)")
    print(f"best speed-up of batching: {max(ratios):.1f}x (target >= 5x) at {args.clients[ratios.index(max(ratios))]} clients")
    print(f"load average after the runs: {load_now()}")

    rows_s, batches = await bench_ingest(tmp / "ingest.sqlite", args.ingest)
    print(f"study-log ingest: {rows_s:,.0f} rows/s ({args.ingest} comment+text+score writes in {batches} transactions)")
    await single.close()
    await batched.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
