"""The Perspective-compatible endpoint: requests/s and p50/p99 latency of logged calls against
`doNotStore` calls, interleaved, at 16 and 20 concurrent clients (and one client for reference).

  python bench/bench_perspective.py [--requests 200] [--rounds 3] [--clients 16 20] [--config study.toml]

Runs the daemon in this process on a free loopback port with the study's detectors (default: the
embedded MiniLM for TOXICITY, profanity-check for PROFANITY) and sends Perspective's documented request
(`comments:analyze`, TOXICITY + PROFANITY, no `languages`) over HTTP, each client one request after
another. Texts are Davidson tweets, each sent once in the whole run, so neither the detectors' score
cache nor the batchers' de-duplication flatters a mode. Each round runs both modes at each client
count, the mode that goes first alternating, because the machine's load moves between runs. At the
end it checks that every logged call is in the study log with a score from each detector its answer
named (`attributeScores[...].detector`), and prints the medians and the ratios logged / doNotStore. For comparison: Perspective's default quota was 1 request/s.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import aiohttp
from aiohttp import web

import modlens.study
from modlens.daemon.app import create_app
from modlens.datasets import davidson
from modlens.perspective import languages

KEY = "bench-key-0123456789"
DAVIDSON = Path(davidson.__file__).with_name("data") / "davidson" / "labeled_data.csv"
MODES = {"logged": False, "doNotStore": True}  # mode -> the request's doNotStore


def tweets() -> list[str]:
    """Davidson's distinct English tweets, entities decoded, in file order (the same texts every run;
    the 18 in Dutch, Spanish or Arabic would be refused for TOXICITY, which is trusted for English)."""
    texts = dict.fromkeys(it.text for it in davidson.read(DAVIDSON).iter_items())
    return [t for t in texts if languages.detect(t) == [languages.ENGLISH]]


Answered = dict[str, set[tuple[str, str]]]  # text -> (name, version) of each detector its answer named


async def run_clients(base: str, texts: list[str], n_clients: int, do_not_store: bool,
                      answered: Answered | None = None) -> tuple[float, list[float]]:
    """Sends each text once from `n_clients` clients; (wall seconds, latencies in ms). `answered` gets
    each text's detectors as the answer names them."""
    queue = list(reversed(texts))
    latencies: list[float] = []

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            text = queue.pop()
            t0 = time.perf_counter()
            async with session.post(f"{base}/v1alpha1/comments:analyze", params={"key": KEY},
                                    json={"comment": {"text": text}, "doNotStore": do_not_store,
                                          "requestedAttributes": {"TOXICITY": {}, "PROFANITY": {}}}) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}: {await r.text()}")
                body = await r.json()
            latencies.append((time.perf_counter() - t0) * 1000)
            if answered is not None:
                answered[text] = {(a["detector"]["name"], a["detector"]["version"])
                                  for a in body["attributeScores"].values()}

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n_clients)) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(n_clients)))
        return time.perf_counter() - t0, latencies


def p99(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98]


def logged_calls(db: Path, answered: Mapping[str, set[tuple[str, str]]]) -> tuple[int, int]:
    """(calls logged as platform `api`, answered calls whose text is not logged as a call with a score from
    every detector its answer named): a call with one of its two scores missing counts as missing."""
    con = sqlite3.connect(db)
    try:
        calls = con.execute("SELECT count(*) FROM comments WHERE platform = 'api'").fetchone()[0]
        logged: dict[str, set[tuple[str, str]]] = {}
        for text, name, version in con.execute(
                "SELECT t.text, d.name, d.version FROM comments c JOIN texts t USING (text_id) "
                "JOIN scores s ON s.text_id = c.text_id JOIN detectors d USING (detector_id) "
                "WHERE c.platform = 'api'"):
            logged.setdefault(text, set()).add((name, version))
        missing = sum(1 for text, dets in answered.items() if not dets <= logged.get(text, set()))
        return calls, missing
    finally:
        con.close()


async def main(args: argparse.Namespace) -> dict[str, dict[int, list[tuple[float, float, float]]]]:
    """Prints the table; returns mode -> clients -> [(requests/s, p50, p99) per round]."""
    study = modlens.study.load(args.config)
    texts = tweets()
    needed = 20 + args.requests * (1 + args.rounds * len(MODES) * len(args.clients))
    if needed > len(texts):
        raise SystemExit(f"{needed} requests need more than the {len(texts)} distinct tweets: lower --requests or --rounds")
    fresh = iter(texts)

    def take(n: int) -> list[str]:
        return [next(fresh) for _ in range(n)]

    results: dict[str, dict[int, list[tuple[float, float, float]]]] = {m: {n: [] for n in args.clients} for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite"
        app = create_app(study, db, KEY, extension_protocol=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        answered: Answered = {}  # the logged calls' texts and the detectors that answered them
        try:
            print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
            await run_clients(base, take(20), 4, True)  # warm-up: model and connections
            print(f"{'round':>5} {'mode':>10} {'clients':>7} {'requests':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")

            def row(label: str, mode: str, n: int, wall: float, lat: list[float]) -> tuple[float, float, float]:
                got = (len(lat) / wall, statistics.median(lat), p99(lat))
                print(f"{label:>5} {mode:>10} {n:>7} {len(lat):>8} {got[0]:>8.1f} {got[1]:>8.1f} {got[2]:>8.1f}")
                return got

            wall, lat = await run_clients(base, take(args.requests), 1, True)
            row("-", "doNotStore", 1, wall, lat)
            for r in range(args.rounds):
                order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
                for n in args.clients:
                    for mode in order:
                        wall, lat = await run_clients(base, take(args.requests), n, MODES[mode],
                                                      None if MODES[mode] else answered)
                        results[mode][n].append(row(str(r + 1), mode, n, wall, lat))
        finally:
            await runner.cleanup()  # drains the writer: every acknowledged call's rows committed
        calls, missing = logged_calls(db, answered)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"study log: {calls} calls logged of {len(answered)} sent with doNotStore false, {missing} of them without "
          "a score from each detector their answer named")
    print(f"\nmedian of {args.rounds} rounds   {'req/s':>8} {'p99 ms':>8}   logged/doNotStore: req/s  p99")
    for n in args.clients:
        med = {m: (statistics.median(x[0] for x in results[m][n]), statistics.median(x[2] for x in results[m][n]))
               for m in MODES}
        for m in MODES:
            print(f"{n:>3} clients {m:>10}     {med[m][0]:>8.1f} {med[m][1]:>8.1f}")
        print(f"{'':>38}{med['logged'][0] / med['doNotStore'][0]:>7.2f}x {med['logged'][1] / med['doNotStore'][1]:>5.2f}x")
    return results


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=200, help="requests per mode, client count and round")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each runs both modes)")
    p.add_argument("--clients", type=int, nargs="+", default=[16, 20], help="concurrent clients to compare at")
    p.add_argument("--config", help="study.toml (default: the embedded defaults)")
    return p


if __name__ == "__main__":
    asyncio.run(main(parser().parse_args()))
