"""The daemon against the detector alone, back to back on the same texts (the goal: the daemon
should reach at least 90% of the detector-alone throughput at 16 clients).

    python bench/bench_daemon_gap.py [--pages 128] [--clients 16] [--rounds 3] [--normalize off on] [--delay-ms 10]

Texts: the shipped NoisyHate dev set (clean and perturbed columns), made distinct. Per round, in
this order, on the same process and model:
  (a) detector alone: `minilm-toxicity` scores the texts in exactly the call sizes the daemon's
      batcher used in the previous daemon run (recorded from the detector's own calls), with the
      same work the daemon is configured to do: with `--normalize on`, the normalizer runs over
      every text first and the changed normalized texts are scored too, as the daemon does;
  (b) the daemon: `modlens serve`'s app on loopback, `--clients` concurrent feed clients (pages of
      20, each client waiting for a page's scores before it sends the next, as `modlens feed` does),
      the comments, sightings, scores and normalizations written to a fresh study log.
The rounds alternate (a) and (b) so that load changes hit both; the table gives each round and
the medians, and the load average before and after. Perturbation is off in both: feed clients
ask for no variants (the extension asks for them only for sampled comments).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_daemon import DEFAULT_DATA, load_detector, load_now, load_texts, run_load  # noqa: E402

from modlens.config import parse_study  # noqa: E402
from modlens.engine import Engine  # noqa: E402


class CallSizes:
    """Records the size of every call the engine makes to the detector (the real detector runs)."""

    def __init__(self, detector: Any) -> None:
        self.sizes: list[int] = []
        self.busy_s = 0.0  # wall time inside the detector's calls
        self._score = detector.score
        detector.score = self

    def __call__(self, texts: Any) -> Any:
        self.sizes.append(len(texts))
        t0 = time.perf_counter()
        try:
            return self._score(texts)
        finally:
            self.busy_s += time.perf_counter() - t0


def model_cpu() -> float:
    """CPU seconds of the detector's worker thread and torch's OpenMP threads (threads Python did
    not start), from /proc; the rest of the process is the daemon's own overhead."""
    import threading

    python_threads = {str(t.native_id): t.name for t in threading.enumerate()}
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        name = python_threads.get(tid)
        if name is not None and not name.startswith("det-"):
            continue
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def study_for(normalize: bool) -> Any:
    return parse_study({"study_id": "bench", "detectors": [{"name": "minilm-toxicity"}],
                        "normalizer": {"enabled": normalize}, "perturbation": {"enabled": False},
                        "limits": {"messages_per_second": 1000, "burst": 1000}})


def alone(score: Any, max_batch: int, normalizer: Any, texts: list[str], sizes: list[int]) -> tuple[float, float]:
    """(comments/s, seconds spent normalizing): the daemon's work without the daemon."""
    t0 = time.perf_counter()
    todo = list(texts)
    if normalizer is not None:
        normalized = [normalizer.normalize(t).text for t in texts]
        originals = set(texts)
        todo += list(dict.fromkeys(n for n in normalized if n not in originals))
    t_norm = time.perf_counter() - t0
    i = 0
    for n in sizes:
        if i >= len(todo):
            break
        score(todo[i:i + n])
        i += n
    while i < len(todo):  # the daemon run may have had fewer texts (it never does; kept exact)
        score(todo[i:i + max_batch])
        i += max_batch
    return len(texts) / (time.perf_counter() - t0), t_norm


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pages", type=int, default=128, help="20-comment pages per run")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--normalize", nargs="+", choices=["off", "on"], default=["off", "on"])
    ap.add_argument("--delay-ms", type=float, nargs="+", default=[10.0],
                    help="the batcher's window (the engine's max_delay_ms; 10 is the daemon's)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="modlens-gap-"))
    detector, label = load_detector(tmp)
    texts = load_texts(args.data, args.pages * 20)
    calls = CallSizes(detector)
    print(f"detector: {label}, version {detector.version}, max_batch {detector.max_batch}; "
          f"{len(texts)} distinct NoisyHate dev comments per run, pages of 20, {args.clients} clients; "
          f"{os.cpu_count()} cores, load average {load_now()}")
    for mode, delay in [(m, d) for m in args.normalize for d in args.delay_ms]:
        study = study_for(mode == "on")
        engine = Engine(study, detectors={"minilm-toxicity": detector}, max_delay_ms=delay)
        if len(args.delay_ms) > 1:
            print(f"batcher window {delay:g} ms")
        await engine.score(texts[:40])  # warm-up: the first call allocates
        calls.sizes.clear()
        await run_load(engine, study, tmp / f"warm-{mode}.sqlite", texts, args.clients, f"w{mode}")  # sizes, page cache
        rows = []
        for r in range(args.rounds):
            sizes = list(calls.sizes)
            a, t_norm = alone(calls._score, detector.max_batch, engine.normalizer, texts, sizes)
            calls.sizes.clear()
            calls.busy_s, cpu0, w0 = 0.0, time.process_time(), time.perf_counter()
            model0 = model_cpu()
            b = await run_load(engine, study, tmp / f"d-{mode}-{r}.sqlite", texts, args.clients, f"r{r}{mode}")
            wall, cpu = time.perf_counter() - w0, time.process_time() - cpu0
            other = cpu - (model_cpu() - model0)  # CPU outside the model's threads: event loop, clients, writer
            per_call = sum(calls.sizes) / max(1, len(calls.sizes))
            rows.append((a, b[0], per_call, t_norm, load_now()))
            print(f"    daemon run: model busy {calls.busy_s / wall:.0%} of the wall time; CPU outside the model "
                  f"{other:.2f} s of {cpu:.2f} s ({other / cpu:.1%})", flush=True)
            print(f"  normalize {mode:>3} round {r + 1}: alone {a:7.1f} c/s (normalizing {t_norm:.2f} s) | daemon "
                  f"{b[0]:7.1f} c/s, p50 {b[1]:.0f} ms, {per_call:.0f} texts per model call | "
                  f"{b[0] / a:6.1%} | load {rows[-1][4]}", flush=True)
        ratios = [b / a for a, b, *_ in rows]
        print(f"normalize {mode}: alone median {statistics.median(r[0] for r in rows):.1f} c/s, daemon median "
              f"{statistics.median(r[1] for r in rows):.1f} c/s: daemon/alone median {statistics.median(ratios):.1%} "
              f"(rounds {', '.join(f'{x:.0%}' for x in ratios)}; goal >= 90%)\n", flush=True)
        for runner in engine.runners.values():  # not engine.close(): that closes the detector, used again
            await runner.batcher.close()
            await runner.media_batcher.close()
    print(f"load average after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
