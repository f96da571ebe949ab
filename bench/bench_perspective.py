"""Requests/s and p50/p99 latency of the Perspective-compatible endpoint at 1 and 16 concurrent clients.

  python bench/bench_perspective.py [--requests 200] [--config study.toml] [--store]

Runs the daemon in this process on a free loopback port with the study's detectors (default: the
embedded MiniLM for TOXICITY, profanity-check for PROFANITY) and sends Perspective's documented request
(`comments:analyze`, TOXICITY + PROFANITY) over HTTP, each client one request after another. Texts are
NoisyHate sentences, each sent once per run, so the batchers' de-duplication does not flatter the numbers.
`doNotStore: true` unless --store (then every call is also logged). For comparison: Perspective's default
quota was 1 request/s.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

import modlens.study
from modlens.daemon.app import create_app
from modlens.perspective import calibration

KEY = "bench-key-0123456789"


async def _clients(base: str, texts: list[str], n_clients: int, store: bool) -> tuple[float, list[float]]:
    queue = list(texts)
    latencies: list[float] = []

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            text = queue.pop()
            t0 = time.perf_counter()
            async with session.post(f"{base}/v1alpha1/comments:analyze", params={"key": KEY},
                                    json={"comment": {"text": text}, "doNotStore": not store,
                                          "requestedAttributes": {"TOXICITY": {}, "PROFANITY": {}}}) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}: {await r.text()}")
            latencies.append((time.perf_counter() - t0) * 1000)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n_clients)) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(n_clients)))
        return time.perf_counter() - t0, latencies


async def main(args: argparse.Namespace) -> None:
    study = modlens.study.load(args.config)
    texts = [t for t, _ in calibration.recorded_pairs("noisyhate")]
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(study, Path(tmp) / "bench.sqlite", KEY, extension_protocol=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            await _clients(base, texts[-20:], 4, args.store)  # warm-up: model and connections
            print(f"{'clients':>7} {'requests':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
            offset = 0
            for n in (1, 16):
                batch = texts[offset:offset + args.requests]
                offset += args.requests
                wall, lat = await _clients(base, batch, n, args.store)
                q = statistics.quantiles(lat, n=100)
                print(f"{n:>7} {len(lat):>8} {len(lat) / wall:>8.1f} {statistics.median(lat):>8.1f} {q[98]:>8.1f}")
        finally:
            await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per concurrency level")
    parser.add_argument("--config", help="study.toml (default: the embedded defaults)")
    parser.add_argument("--store", action="store_true", help="log every call (doNotStore: false)")
    asyncio.run(main(parser.parse_args()))
