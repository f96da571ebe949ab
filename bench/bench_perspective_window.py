"""The Perspective-compatible endpoint against its detector alone, at 1, 8 and 32 clients: how much
of the model's own throughput a client gets through HTTP, the request checks and the batchers.

  python bench/bench_perspective_window.py [--requests 160] [--clients 1 8 32] [--rounds 2]

"Detector alone" is the embedded MiniLM (`minilm-toxicity`, TOXICITY's default) called directly,
with as many texts per call as there are clients (one at a time for one client): the most a
batcher could make of that many concurrent requests. "Endpoint" is `modlens serve`'s app in this
process on a loopback port, each of N clients sending Perspective's documented request
(TOXICITY only, `doNotStore`, no `languages`) one after another. Both score the same number of
fresh Davidson tweets per round (each text used once, so no cache flatters either), alternating
which goes first, because the machine's load moves. Prints each round, the medians and
endpoint / detector; the load average is printed at start and end (a shared machine's numbers are
only comparable within one run).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

import modlens.study
from modlens.daemon.app import ENGINE, create_app

from bench_perspective import KEY, tweets

DETECTOR = "minilm-toxicity"


async def endpoint(base: str, texts: list[str], n_clients: int) -> float:
    """Requests/s of `n_clients` clients, each request after request."""
    queue = list(reversed(texts))

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            text = queue.pop()
            async with session.post(f"{base}/v1alpha1/comments:analyze", params={"key": KEY},
                                    json={"comment": {"text": text}, "doNotStore": True,
                                          "requestedAttributes": {"TOXICITY": {}}}) as r:
                body = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}: {body[:300]!r}")

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n_clients)) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(n_clients)))
        return len(texts) / (time.perf_counter() - t0)


def detector_alone(detector, texts: list[str], n_clients: int) -> float:
    """Texts/s of the model called directly, `n_clients` texts per call."""
    t0 = time.perf_counter()
    for i in range(0, len(texts), n_clients):
        detector.score(texts[i:i + n_clients])
    return len(texts) / (time.perf_counter() - t0)


async def main(args: argparse.Namespace) -> dict[int, float]:
    study = modlens.study.load(None)
    study = study.model_copy(update={"detectors": [d for d in study.detectors if d.name == DETECTOR]})
    texts = iter(tweets())

    def take(n: int) -> list[str]:
        return [next(texts) for _ in range(n)]

    results: dict[int, dict[str, list[float]]] = {n: {"detector": [], "endpoint": []} for n in args.clients}
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(study, Path(tmp) / "bench.sqlite", KEY, extension_protocol=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        detector = app[ENGINE].detectors[DETECTOR]
        try:
            print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
            await endpoint(base, take(32), 4)  # warm-up: model, connections
            detector_alone(detector, take(32), 8)
            print(f"{'round':>5} {'clients':>7} {'detector/s':>10} {'endpoint/s':>10} {'ratio':>6}")
            for r in range(args.rounds):
                for n in args.clients:
                    order = ("detector", "endpoint") if r % 2 == 0 else ("endpoint", "detector")
                    got = {}
                    for what in order:
                        batch = take(args.requests)
                        got[what] = (detector_alone(detector, batch, n) if what == "detector"
                                     else await endpoint(base, batch, n))
                        results[n][what].append(got[what])
                    print(f"{r + 1:>5} {n:>7} {got['detector']:>10.1f} {got['endpoint']:>10.1f} "
                          f"{got['endpoint'] / got['detector']:>6.2f}")
        finally:
            await runner.cleanup()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\nmedians of {args.rounds} rounds: clients, detector alone texts/s, endpoint requests/s, endpoint/detector")
    ratios = {}
    for n in args.clients:
        det, end = statistics.median(results[n]["detector"]), statistics.median(results[n]["endpoint"])
        ratios[n] = end / det
        print(f"{n:>3} {det:>8.1f} {end:>8.1f} {ratios[n]:>6.2f}")
    return ratios


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=160, help="texts per side, client count and round")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--rounds", type=int, default=2)
    return p


if __name__ == "__main__":
    asyncio.run(main(parser().parse_args()))
