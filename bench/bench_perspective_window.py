"""The Perspective-compatible endpoint against its detector alone, at 1, 8 and 32 clients: how much
of the model's own throughput a client gets through HTTP, the request checks and the batchers.

  python bench/bench_perspective_window.py [--requests 160] [--clients 1 8 32] [--rounds 2] [--in-process-clients]

"Detector alone" is the embedded MiniLM (`minilm-toxicity`, TOXICITY's default) called directly,
with as many texts per call as there are clients (one at a time for one client): the most a
batcher could make of that many concurrent requests. "Endpoint" is `modlens serve`'s app in this
process on a loopback port, each of N clients sending Perspective's documented request
(TOXICITY only, `doNotStore`, no `languages`) one after another. The clients run in a process of
their own, as a bot or a script does, on connections opened before the timing (a client keeps its
session); `--in-process-clients` runs them on the daemon's own event loop instead, which charges
their HTTP work to the endpoint (how this bench measured before). Both sides score the same number
of fresh Davidson tweets per round (each text used once, so no cache flatters either), at least ten
per client (so that the first call, which a request makes alone before the load is known, and the
last, made as the clients run out of texts, are a small part of the run), alternating which goes
first, because the machine's load moves. Prints each round with the load average and the calls
the endpoint's detector made (their sizes, the share of the run's time it computed: the rest it
waited for texts), then the medians and endpoint / detector (a shared machine's numbers are only
comparable within one run).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

import modlens.study
from modlens.daemon.app import ENGINE, create_app
from modlens.perspective import discovery

from bench_perspective import KEY, tweets

DETECTOR = "minilm-toxicity"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Clients:
    """N clients, each sending request after request on its own connection; `rate` returns requests/s.
    Each run opens its connections before its clock starts (a client keeps its session; between
    runs the daemon closes idle connections, `keepalive_timeout`)."""

    def __init__(self, base: str):
        self.base = base

    async def rate(self, texts: Sequence[str], n_clients: int) -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n_clients)) as session:
            async def connect() -> None:  # the discovery document: public, no model call
                async with session.get(f"{self.base}{discovery.PATHS[0]}") as r:
                    await r.read()
            await asyncio.gather(*(connect() for _ in range(n_clients)))
            return await self._run(session, texts, n_clients)

    async def _run(self, session: aiohttp.ClientSession, texts: Sequence[str], n_clients: int) -> float:
        queue = list(reversed(texts))

        async def client() -> None:
            while queue:
                text = queue.pop()
                async with session.post(f"{self.base}/v1alpha1/comments:analyze", params={"key": KEY},
                                        json={"comment": {"text": text}, "doNotStore": True,
                                              "requestedAttributes": {"TOXICITY": {}}}) as r:
                    body = await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"HTTP {r.status}: {body[:300]!r}")

        t0 = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(n_clients)))
        return len(texts) / (time.perf_counter() - t0)


async def client_process() -> None:
    """The clients' own process: one JSON line per run in ({base, texts, clients}), its requests/s out."""
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        job = json.loads(line)
        print(json.dumps({"rate": await Clients(job["base"]).rate(job["texts"], job["clients"])}), flush=True)


class ClientProcess:
    """`Clients` in a child process (this file run with --client-process)."""

    def __init__(self, base: str):
        self.base = base
        self.proc: asyncio.subprocess.Process | None = None

    async def rate(self, texts: Sequence[str], n_clients: int) -> float:
        if self.proc is None:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client-process", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"base": self.base, "texts": list(texts), "clients": n_clients}).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the client process ended (exit status {await self.proc.wait()})")
        return float(json.loads(line)["rate"])

    async def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            await self.proc.wait()


def detector_alone(detector: Any, texts: list[str], n_clients: int) -> float:
    """Texts/s of the model called directly, `n_clients` texts per call."""
    t0 = time.perf_counter()
    for i in range(0, len(texts), n_clients):
        detector.score(texts[i:i + n_clients])
    return len(texts) / (time.perf_counter() - t0)


def call_sizes(sizes: list[int], busy_s: float, wall_s: float) -> str:
    """The endpoint's model calls: their number and sizes (median, smallest, largest), and the share
    of the run's wall time the model was computing (the rest it waited for texts: HTTP, the window)."""
    if not sizes:
        return "no call"
    return (f"{len(sizes)} calls of {statistics.median(sizes):g} (min {min(sizes)}, max {max(sizes)}), "
            f"model busy {busy_s / wall_s:.0%}")


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
        engine = app[ENGINE]
        detector = engine.detectors[DETECTOR]
        batcher = engine.runners[DETECTOR].batcher
        sizes: list[int] = []
        busy = [0.0]
        model_call = batcher._fn

        async def counted(batch: Sequence[str]) -> Any:  # the endpoint's model calls: sizes, time
            sizes.append(len(batch))
            t0 = time.perf_counter()
            try:
                return await model_call(batch)
            finally:
                busy[0] += time.perf_counter() - t0
        batcher._fn = counted
        clients: Clients | ClientProcess = Clients(base) if args.in_process_clients else ClientProcess(base)
        try:
            print(f"load average at start: {load()} ({os.cpu_count()} CPUs); clients "
                  f"{'on the daemon loop' if args.in_process_clients else 'in a process of their own'}")
            for n in args.clients:  # warm-up: model, each client count's connections
                await clients.rate(take(max(n, 8)), n)
            detector_alone(detector, take(32), 8)
            print(f"{'round':>5} {'clients':>7} {'detector/s':>10} {'endpoint/s':>10} {'ratio':>6}  load (1 min)  endpoint's model calls")
            for r in range(args.rounds):
                for n in args.clients:
                    order = ("detector", "endpoint") if r % 2 == 0 else ("endpoint", "detector")
                    got = {}
                    for what in order:
                        batch = take(max(args.requests, 10 * n))
                        sizes.clear()
                        busy[0], t0 = 0.0, time.perf_counter()
                        got[what] = (detector_alone(detector, batch, n) if what == "detector"
                                     else await clients.rate(batch, n))
                        results[n][what].append(got[what])
                        if what == "endpoint":
                            calls = call_sizes(sizes, busy[0], time.perf_counter() - t0)
                    print(f"{r + 1:>5} {n:>7} {got['detector']:>10.1f} {got['endpoint']:>10.1f} "
                          f"{got['endpoint'] / got['detector']:>6.2f}  {os.getloadavg()[0]:>12.2f}  {calls}")
        finally:
            if isinstance(clients, ClientProcess):
                await clients.close()
            await runner.cleanup()
    print(f"load average at end: {load()}")
    print(f"\nmedians of {args.rounds} rounds: clients, detector alone texts/s, endpoint requests/s, endpoint/detector")
    ratios = {}
    for n in args.clients:
        det, end = statistics.median(results[n]["detector"]), statistics.median(results[n]["endpoint"])
        ratios[n] = end / det
        print(f"{n:>3} {det:>8.1f} {end:>8.1f} {ratios[n]:>6.2f}")
    return ratios


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=160,
                   help="texts per side, client count and round (at least 10 per client: 320 at 32 clients)")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--in-process-clients", action="store_true",
                   help="run the clients on the daemon's event loop (their HTTP work is then charged to the endpoint)")
    p.add_argument("--client-process", action="store_true", help=argparse.SUPPRESS)  # the clients' child process
    return p


if __name__ == "__main__":
    parsed = parser().parse_args()
    asyncio.run(client_process() if parsed.client_process else main(parsed))
