"""The same audit through the local engine and through Ray on this machine, as a ratio.

    .venv/bin/python bench/bench_ray.py [--rows 20000] [--detectors profanity-check] [--perturb]

Synthetic comments (seeded), normalization on, one fresh study log per engine. Ray is started
once before the timed runs (`ray.init(num_cpus=N)`, all cores by default) and its start-up is
printed on its own line: it is paid once per driver, not per row. The target (docs/SCALE.md): Ray's
overhead over the local engine under 15% on 2 CPUs. Rows are compared after the runs (same scores)."""
from __future__ import annotations

import argparse
import csv
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("you are an idiot great post thanks stupid nice hate love this trash article fool damn wonderful "
         "moron kind shut up loser brilliant garbage the a of and to in is it that for").split()


def make_comments(path: Path, n: int) -> None:
    rng = random.Random(7)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "toxic"])
        for i in range(n):
            w.writerow([" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))) + f" #{i}", rng.randint(0, 1)])


def scores(db: Path) -> list[tuple[object, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT t.text, s.detector_id, round(s.toxicity, 6), s.error FROM scores s "
                           "JOIN texts t USING (text_id) ORDER BY 1, 2").fetchall()
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--detectors", nargs="+", default=["profanity-check"])
    ap.add_argument("--perturb", action="store_true", help="also generate variants (slow: use fewer rows)")
    ap.add_argument("--num-cpus", type=int, default=os.cpu_count())
    ap.add_argument("--gpus-per-detector", type=float, default=0.0)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--engines", nargs="+", default=["local", "ray"])
    ap.add_argument("--repeat", type=int, default=3, help="rounds, engines interleaved (the machine's load varies)")
    args = ap.parse_args()

    import ray

    from modlens.audit import run_audit
    from modlens.scale.ray_audit import RayOptions

    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    data = tmp / "comments.csv"
    make_comments(data, args.rows)
    print(f"{args.rows} comments, detectors {', '.join(args.detectors)}, normalize on"
          f"{', perturb on' if args.perturb else ''}, chunk {args.chunk}, {os.cpu_count()} CPUs here")
    t0 = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    print(f"ray.init(num_cpus={args.num_cpus}): {time.perf_counter() - t0:.1f} s (once per driver, not timed below)")
    extra = {"perturb": ["homoglyph", "char_swap"]} if args.perturb else {}
    times: dict[str, list[float]] = {e: [] for e in args.engines}
    first: dict[str, list[float]] = {e: [] for e in args.engines}   # start-up: until the first chunk is written
    steady: dict[str, list[float]] = {e: [] for e in args.engines}  # comments/s after the first chunk
    for r in range(args.repeat):
        for engine in args.engines:
            db = tmp / f"{engine}-{r}.sqlite"  # a fresh log each time: nothing is resumed
            opts = RayOptions(gpus_per_detector=args.gpus_per_detector) if engine == "ray" else None
            marks: list[tuple[float, int]] = []
            t0 = time.perf_counter()
            res = run_audit(str(data), db=db, detectors=args.detectors, normalize=True, chunk_size=args.chunk,
                            progress=False, engine=engine, ray_options=opts,
                            on_chunk=lambda n, m=marks: m.append((time.perf_counter(), n)), **extra)
            t = time.perf_counter() - t0
            times[engine].append(t)
            first[engine].append(marks[0][0] - t0)
            (t1, n1), (t2, n2) = marks[0], marks[-1]
            steady[engine].append((n2 - n1) / (t2 - t1) if t2 > t1 else float("nan"))
            print(f"round {r + 1} {engine:>5}: {t:6.1f} s  {res.n_items / t:6.0f} comments/s overall, first chunk "
                  f"after {first[engine][-1]:4.1f} s, then {steady[engine][-1]:6.0f} comments/s; {res.n_scored} scores",
                  flush=True)
    ray.shutdown()
    if {"local", "ray"} <= times.keys():
        same = scores(tmp / "local-0.sqlite") == scores(tmp / "ray-0.sqlite")
        med = {e: statistics.median(t) for e, t in times.items()}
        rate = {e: statistics.median(v) for e, v in steady.items()}
        start = {e: statistics.median(v) for e, v in first.items()}
        ratio, rate_ratio = med["ray"] / med["local"], rate["local"] / rate["ray"]
        print(f"start-up (first chunk written, median): local {start['local']:.1f} s, ray {start['ray']:.1f} s "
              f"(actors and workers load the detector and normalizer once per audit)")
        print(f"steady state (median): local {rate['local']:.0f} comments/s, ray {rate['ray']:.0f} comments/s; "
              f"ray's overhead {rate_ratio - 1:+.0%} (target < +15%): {'PASS' if rate_ratio - 1 < 0.15 else 'FAIL'}")
        print(f"whole audit of {args.rows} (median of {args.repeat}): local {med['local']:.1f} s, ray {med['ray']:.1f} s, "
              f"ratio {ratio:.2f} (overhead {ratio - 1:+.0%}, start-up included); same scores: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
