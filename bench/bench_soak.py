"""Soak benchmark (throughput, latency and RSS over a long run): the real `modlens serve`, N closed-loop clients, variants on vs off.

    python bench/bench_soak.py [--clients 32] [--minutes 20] [--live-rate auto 20 100] [--live-share 0.0625 0.25]
                               [--live-backlog 256] [--rss-every 60] [--no-off]
                               [--importance pooled] [--daemon-env MALLOC_ARENA_MAX=2] [--tracemalloc]
    python bench/bench_soak.py --heap-diff A.snap B.snap

Per run a fresh `modlens serve --port 0` (its own MODLENS_HOME and study log) with the real
`minilm-toxicity`, normalizer off, and the default perturbation strategies; the clients speak
protocol v1 on loopback, as the extension does: each sends a page of 20 distinct comments, waits
for that page's scores (not its variants: the extension shows scores and lets variants come
later) and sends the next, honouring `rate_limited`. Variants arrive whenever the daemon makes
them; a `variants` message whose error starts with "deferred:" counts as deferred.

Runs, in this order: variants off (pages ask for none), then variants on once per --live-rate and
--live-share.
Each prints comments/s scored, p50/p99 page latency (page sent -> its last score), variants
completed per second (comments whose variants came back, over the run's wall time), deferred and
failed counts, and the daemon's RSS (from /proc) at start, one minute in, peak, and 10 s after the
clients close; `--rss-every 60` also prints the curve. `--pace S` makes each client send a page every S
seconds at most (an offered load, as participants scrolling), instead of a closed loop that keeps
the cores saturated with scoring.
Daemon and clients share this machine's CPU; the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modlens import heap
from modlens.paths import shipped_data
from modlens.runtime import start_serve
from modlens.protocol.client import Client, ClientError, connect, make_pages, parse_reply
from modlens.protocol.errors import ErrorCode
from modlens.protocol.messages import Comments, Error, Scores, Variants

PAGE = 20
DEFAULT_DATA = shipped_data() / "noisyhate" / "dev.csv"


def load_now() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def base_texts(path: Path) -> list[str]:
    texts: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for col in ("clean", "perturbed"):
                if row.get(col, "").strip():
                    texts.append(row[col].strip())
    if not texts:
        raise SystemExit(f"{path}: no texts in its clean/perturbed columns")
    return texts


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def write_study(path: Path, live_rate: float | str, live_backlog: int, variants: bool,
                importance: str = "leave_one_out", live_share: float = 0.0625, detector: str = "minilm-toxicity") -> None:
    path.write_text("\n".join([
        'study_id = "soak"', f'detectors = [{{ name = "{detector}" }}]',
        "[normalizer]", "enabled = false",
        "[perturbation]", f"enabled = {'true' if variants else 'false'}",
        f"live_rate = {json.dumps(live_rate)}", f"live_backlog = {live_backlog}", f'importance_method = "{importance}"',
        f"live_share = {live_share}",
        # the bench measures the daemon, not the per-connection message limit
        "[limits]", "messages_per_second = 1000", "burst = 1000"]) + "\n")


def start_daemon(home: Path, study: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    try:
        return start_serve(home, "--config", str(study), "--db", str(home / "study.sqlite"), "--log-level", "WARNING",
                           timeout=180)
    except RuntimeError as err:
        raise SystemExit(str(err)) from None


def stop_daemon(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a person stops it (the study log drains), killed after a minute."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def daemon_status(token: str, info: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{info['port']}/status", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    return answer


def token_of(home: Path) -> str:
    from modlens import pairing

    os.environ["MODLENS_HOME"] = str(home)
    return pairing.read() or ""


@dataclass
class Tally:
    pages: int = 0
    comments: int = 0
    latency_ms: list[float] = field(default_factory=list)
    variants_done: int = 0      # comments whose variants came back (made live)
    variant_items: int = 0
    deferred: int = 0
    failed: int = 0
    rate_limited: int = 0


class Conn:
    """One closed-loop client: a reader routes the daemon's answers by message id."""

    def __init__(self, ws: Any, tally: Tally) -> None:
        self.ws, self.tally = ws, tally
        self.waiting: dict[str, tuple[Comments, set[str], asyncio.Future[None]]] = {}

    async def read(self) -> None:
        async for raw in self.ws:
            msg = parse_reply(raw)
            if isinstance(msg, Variants):
                if msg.error is None:
                    self.tally.variants_done += 1
                    self.tally.variant_items += len(msg.items)
                elif msg.error.startswith("deferred:"):
                    self.tally.deferred += 1
                else:
                    self.tally.failed += 1
                continue
            entry = self.waiting.get(getattr(msg, "id", None) or "")
            if entry is None:
                continue
            page, keys, done = entry
            if isinstance(msg, Scores):
                keys.difference_update(item.key for item in msg.items)
                if not keys and not done.done():
                    done.set_result(None)
            elif isinstance(msg, Error) and msg.code == ErrorCode.rate_limited:
                self.tally.rate_limited += 1
                asyncio.get_running_loop().call_later((msg.retry_after_ms or 100) / 1000,
                                                      lambda p=page: asyncio.ensure_future(self.send(p)))
            elif isinstance(msg, Error) and not done.done():
                done.set_exception(ClientError(f"{msg.code}: {msg.message}"))

    async def send(self, page: Comments) -> None:
        await self.ws.send(page.model_dump_json(exclude_none=True))

    async def page(self, page: Comments) -> float:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[page.id] = (page, {item.key for item in page.items}, done)
        t0 = time.perf_counter()
        await self.send(page)
        await asyncio.wait_for(done, 300)
        del self.waiting[page.id]
        return (time.perf_counter() - t0) * 1000


def page_texts(texts: list[str], client: int, page: int, *, warm: bool = False) -> list[str]:
    """The texts of a client's n-th page: distinct across clients and pages (no cache or
    de-duplication flatters a run), and the SAME in every run, so runs compare. The marker once
    carried the run's name: "#r1000s0.0625…" is 7 tokens longer than "#off…", which made every
    variants-on run's texts 38% longer than the off run's (NoisyHate texts average 11 tokens).
    Warm-up pages get their own marker, so the measured pages are new to the daemon's log."""
    at = (client * 7919 + page * PAGE) % len(texts)
    mark = "w" if warm else ""
    return [f"{texts[(at + i) % len(texts)]} #{mark}{client}.{page}.{i}" for i in range(PAGE)]


async def drive(url: str, token: str, texts: list[str], clients: int, seconds: float, variants: bool,
                tag: str, pace: float = 0.0, *, warm: bool = False) -> tuple[Tally, float]:
    tally = Tally()
    stop_at = time.perf_counter() + seconds

    async def client(c: int) -> None:
        ws = await connect(url, token)
        try:
            hello = Client(ws, f"{tag}{c}")
            await hello.say_hello(token, f"soak-{c}", client="bench-soak")
            conn = Conn(ws, tally)
            reader = asyncio.create_task(conn.read())
            n = 0
            while time.perf_counter() < stop_at:
                sent_at = time.perf_counter()
                n += 1
                rows = [(f"{tag}-{c}-{n}-{i}", text) for i, text in enumerate(page_texts(texts, c, n, warm=warm))]
                page = make_pages(rows, PAGE, "bench", "https://bench.invalid/soak", f"{tag}-{c}")[0]
                page = page.model_copy(update={"id": f"{tag}-{c}-p{n}", "variants": variants})
                ms = await conn.page(page)
                tally.pages += 1
                tally.comments += PAGE
                tally.latency_ms.append(ms)
                if pace:  # a participant's page every `pace` s at most, not as fast as the daemon answers
                    await asyncio.sleep(max(0.0, min(pace - (time.perf_counter() - sent_at), stop_at - time.perf_counter())))
            reader.cancel()
        finally:
            await ws.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return tally, time.perf_counter() - t0


async def sample_rss(pid: int, out: list[float], stop: asyncio.Event, every: float = 0.0, tag: str = "",
                     snapshots: bool = False) -> None:
    """RSS once a second into `out`; with `every`, also print it (the curve over the run) that often,
    and with `snapshots` ask the daemon for a heap snapshot then (SIGUSR1, `modlens.heap`)."""
    t0 = last = time.perf_counter()
    while not stop.is_set():
        out.append(rss_mib(pid))
        if every and time.perf_counter() - last >= every:
            last = time.perf_counter()
            print(f"  [{tag}] {last - t0:6.0f} s  RSS {out[-1]:6.0f} MiB  load {load_now()}", flush=True)
            if snapshots:
                os.kill(pid, signal.SIGUSR1)
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass


def print_heap_diff(home: Path, tag: str) -> None:
    """What grew between the first heap snapshot (one --rss-every in) and the last."""
    snaps = sorted((p.with_name(p.name.replace(".types.json", ".snap")) for p in home.glob("heap.*.types.json")),
                   key=lambda p: int(p.name.split(".")[1]))
    if len(snaps) < 2:
        print(f"  [{tag}] heap: {len(snaps)} snapshot(s), need two (--rss-every shorter than the run)")
        return
    print(f"  [{tag}] heap grown from {snaps[0].name} to {snaps[-1].name} (Python allocations, tracemalloc; native):")
    for line in heap.diff(snaps[0], snaps[-1]):
        print(f"    {line}")
    for snap in snaps:  # the native curve: RSS, malloc's heaps, SQLite, at each snapshot
        native = snap.with_suffix(".native.json")
        if native.exists():
            print(f"    {snap.name.split('.')[1]:>3}: {native.read_text()}")


async def one_run(args: argparse.Namespace, texts: list[str], variants: bool, live_rate: float | str,
                  tag: str, live_share: float = 0.0625) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"modlens-soak-{tag}-"))
    study = home / "study.toml"
    write_study(study, live_rate, args.live_backlog, variants, args.importance, live_share, args.detector)
    os.environ.update(kv.split("=", 1) for kv in args.daemon_env)  # the daemon inherits this process's environment
    os.environ.pop(heap.ENV, None)
    if args.tracemalloc:
        os.environ[heap.ENV] = str(home / "heap")
        os.environ.setdefault(heap.FRAMES_ENV, "8")  # --daemon-env MODLENS_TRACEMALLOC_FRAMES=0: native figures only
    proc, info = start_daemon(home, study)
    try:
        token = token_of(home)
        rss: list[float] = []
        stop = asyncio.Event()
        # warm-up: the first model calls allocate; not counted
        await drive(info["url"], token, texts, 2, 3.0, False, f"w{tag}", warm=True)
        start_rss = rss_mib(proc.pid)
        sampler = asyncio.create_task(sample_rss(proc.pid, rss, stop, args.rss_every, tag, args.tracemalloc))
        tally, wall = await drive(info["url"], token, texts, args.clients, args.minutes * 60, variants, tag, args.pace)
        status = await asyncio.to_thread(daemon_status, token, info)
        await asyncio.sleep(10)
        after = rss_mib(proc.pid)
        stop.set()
        await sampler
    finally:
        stop_daemon(proc)
    if args.tracemalloc:
        print_heap_diff(home, tag)
    lat = sorted(tally.latency_ms)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))] if lat else float("nan")
    return {"variants": variants, "live_rate": live_rate, "live_share": live_share, "comments_s": tally.comments / wall,
            "p50": statistics.median(lat) if lat else float("nan"), "p99": p99,
            "variants_s": tally.variants_done / wall, "variant_items": tally.variant_items,
            "deferred": tally.deferred, "failed": tally.failed, "rate_limited": tally.rate_limited,
            "rss": (start_rss, max(rss + [start_rss]), after),
            "rss_1min": rss[min(60, len(rss) - 1)] if rss else start_rss, "wall": wall,
            "daemon_variants": status.get("queue", {}).get("variants"),
            # texts per model call, per detector: a page's latency and the cores' efficiency both follow it
            "per_call": {k: round(b["items"] / b["batches"], 1)
                         for k, b in status.get("queue", {}).get("batchers", {}).items() if b.get("batches")}}


def _rate(value: str) -> float | str:
    return value if value == "auto" else float(value)


def _g(rate: float | str) -> str:
    return rate if isinstance(rate, str) else format(rate, "g")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--minutes", type=float, default=20.0, help="per run (off, then each --live-rate)")
    ap.add_argument("--live-rate", type=_rate, nargs="+", default=["auto"],
                    help="perturbation.live_rate for the variants-on runs (comments/s, or auto: the study default)")
    ap.add_argument("--live-share", type=float, nargs="+", default=[0.0625],
                    help="perturbation.live_share for the variants-on runs (one run per rate and share)")
    ap.add_argument("--live-backlog", type=int, default=256)
    ap.add_argument("--importance", choices=("leave_one_out", "pooled"), default="leave_one_out",
                    help="perturbation.importance_method of the variants-on runs")
    ap.add_argument("--daemon-env", nargs="*", default=[], metavar="KEY=VALUE",
                    help="environment of the daemon (allocator settings: MALLOC_ARENA_MAX=2, ...)")
    ap.add_argument("--rss-every", type=float, default=0.0, metavar="SECONDS",
                    help="print the daemon's RSS this often during each run (the curve, not only its ends)")
    ap.add_argument("--pace", type=float, default=0.0, metavar="SECONDS",
                    help="each client sends a page every SECONDS at most (0: closed loop, the next page as soon as "
                         "the last is scored); an offered load below the cores' capacity leaves them idle time")
    ap.add_argument("--no-off", action="store_true", help="skip the variants-off run (on/off ratios then print as -)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--detector", default="minilm-toxicity",
                    help="the study's one detector; a cheap one (profanity-check) stands in for a fast device, "
                         "where the daemon's own Python, not the model, is what binds")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="trace the daemon's Python allocations (MODLENS_TRACEMALLOC, slows it), take a heap snapshot "
                         "at each --rss-every, and print what grew from the first to the last")
    ap.add_argument("--heap-diff", nargs=2, type=Path, metavar=("A.snap", "B.snap"),
                    help="only print what grew from one saved heap snapshot to another, and exit")
    args = ap.parse_args()
    if args.heap_diff:
        print("\n".join(heap.diff(*args.heap_diff)))
        return 0
    if args.tracemalloc and not args.rss_every:
        ap.error("--tracemalloc takes its snapshots at each --rss-every")
    if any("=" not in kv for kv in args.daemon_env):
        ap.error("--daemon-env takes KEY=VALUE")
    if args.clients < 1 or args.minutes <= 0:
        ap.error("--clients must be >= 1 and --minutes > 0")
    texts = base_texts(args.data)
    print(f"{args.clients} {'closed-loop' if not args.pace else f'paced ({args.pace:g} s a page)'} clients, pages of {PAGE}, {args.minutes:g} min per run; "
          f"{os.cpu_count()} cores, load average {load_now()} (daemon and clients share them); "
          f"detector {args.detector}; importance {args.importance}; daemon env {' '.join(args.daemon_env) or 'as this shell'}", flush=True)
    runs = [] if args.no_off else [await one_run(args, texts, False, 0.0, "off")]
    for rate in args.live_rate:
        for share in args.live_share:
            runs.append(await one_run(args, texts, True, rate, f"r{_g(rate)}s{share:g}", share))
    off = None if args.no_off else runs[0]

    def vs_off(value: float, key: str, fmt: str) -> str:
        return "-" if off is None else format(value / off[key], fmt)

    print(f"\n{'variants':>18} | {'comments/s':>10} {'vs off':>7} | {'p50 ms':>7} {'p99 ms':>7} {'p99/off':>7} | "
          f"{'variants c/s':>12} {'deferred':>8} {'failed':>6} | {'RSS MiB start/1 min/peak/+10s':>30}")
    for r in runs:
        what = f"on, {_g(r['live_rate'])}/s, {r['live_share']:g}" if r["variants"] else "off"
        start, peak, after = r["rss"]
        print(f"{what:>18} | {r['comments_s']:>10.1f} {vs_off(r['comments_s'], 'comments_s', '.0%'):>7} | {r['p50']:>7.0f} "
              f"{r['p99']:>7.0f} {vs_off(r['p99'], 'p99', '.2f'):>6}x | {r['variants_s']:>12.1f} {r['deferred']:>8} "
              f"{r['failed']:>6} | {start:>7.0f}/{r['rss_1min']:.0f}/{peak:.0f}/{after:.0f} "
              f"(peak {peak / start - 1:+.0%} of start, {peak / r['rss_1min'] - 1:+.0%} of 1 min)")
    for r in runs:
        print(f"{'on' if r['variants'] else 'off'}: texts per model call {r['per_call']}")
    for r in runs[0 if off is None else 1:]:
        print(f"rate {_g(r['live_rate'])}, share {r['live_share']:g}: {r['variant_items']} variants in all; daemon's count: {r['daemon_variants']}; "
              f"rate_limited answers {r['rate_limited']}")
    print(f"load average after the runs: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
