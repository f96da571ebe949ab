"""The same audit through the local engine and through Ray on this machine, as a ratio.

    .venv/bin/python bench/bench_ray.py [--rows 20000] [--detectors profanity-check] [--perturb]

Synthetic comments (seeded), normalization on, one fresh study log per engine. Ray is started
once before the timed runs (`ray.init(num_cpus=N)`, all cores by default) and its start-up is
printed on its own line: it is paid once per driver, not per row. The target (docs/SCALE.md): Ray's
overhead over the local engine under 15% on 2 CPUs. The first round's logs are compared after the runs:
the same (text, detector, version) rows and errors, toxicities equal within `TOLERANCE` ("same scores:
yes"; "NO" exits 1, saying which log has no toxicity where one has none; two logs without one are
refused: nothing compared)."""
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


# Largest |toxicity difference| between the engines still counted as the same score. Both run the same
# detector code on the same texts, but float sums are not associative: a forward pass's GEMMs reduce in
# an order that depends on the intra-op thread count (a Ray actor's `Plan.threads` against the driver's)
# and on the batch a text shares (its padded width and rows). Measured with minilm-toxicity
# (docs/SCALE.md): 1 against 2 threads, 83 of 4,000 toxicities differed, by at most 4.1e-7; calls of 100
# against 256 texts, at most 9.1e-7. A different text, normalization or model moves a score by far more.
TOLERANCE = 1e-5


def scores(db: Path) -> dict[tuple[str, str, str], tuple[float | None, str | None]]:
    """(text, detector name, version) -> (toxicity, error) of every score in the log."""
    con = sqlite3.connect(db)
    try:
        return {(text, name, version): (tox, err) for text, name, version, tox, err in con.execute(
            "SELECT t.text, d.name, d.version, s.toxicity, s.error FROM scores s JOIN texts t USING (text_id) "
            "JOIN detectors d USING (detector_id)")}
    finally:
        con.close()


def compare(a: Path, b: Path) -> tuple[bool, str]:
    """Whether the logs at `a` and `b` hold the same scores (toxicities within TOLERANCE), and a line saying
    how many rows were compared, how many differ at all and by how much at most. Two logs neither of
    which holds a toxicity (no score, or error rows only) compare nothing: refused (SystemExit), never
    called the same. One that holds none against one that does differs, and the line says which."""
    x, y = scores(a), scores(b)
    both = x.keys() & y.keys()
    errors = sum(x[k][1] != y[k][1] or (x[k][0] is None) != (y[k][0] is None) for k in both)
    deltas = [abs(p - q) for p, q in ((x[k][0], y[k][0]) for k in both) if p is not None and q is not None]
    without = [side for side, s in (("local", x), ("ray", y)) if all(t is None for t, _ in s.values())]
    if not deltas and len(without) != 1:
        raise SystemExit(f"no toxicity to compare: {a} holds {len(x)} scores, {b} {len(y)}, {len(both)} of the same "
                         "text and detector, none with a toxicity in both (error rows only, or none): nothing compared")
    differ = sum(d > 0 for d in deltas)
    worst = max(deltas, default=0.0)
    same = len(x) == len(y) == len(both) and errors == 0 and worst <= TOLERANCE
    return same, (f"{len(both)} scores compared ({len(x) - len(both)} only local, {len(y) - len(both)} only ray, "
                  f"{errors} with an error on one side); toxicity differs in {differ}, max |diff| {worst:.1e} "
                  f"(tolerance {TOLERANCE:.0e})" + (f"; the {without[0]} log has no toxicity (error rows only, or none)"
                                                   if len(without) == 1 else ""))


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
    # comments/s after the first chunk; None for an audit that wrote one chunk (nothing after it to time)
    steady: dict[str, list[float | None]] = {e: [] for e in args.engines}
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
            steady[engine].append((n2 - n1) / (t2 - t1) if len(marks) > 1 else None)
            after = steady[engine][-1]
            print(f"round {r + 1} {engine:>5}: {t:6.1f} s  {res.n_items / t:6.0f} comments/s overall, first chunk "
                  f"after {first[engine][-1]:4.1f} s, " + (f"then {after:6.0f} comments/s" if after is not None else
                                                         "its only chunk") + f"; {res.n_scored} scores", flush=True)
    ray.shutdown()
    if {"local", "ray"} <= times.keys():
        same, how = compare(tmp / "local-0.sqlite", tmp / "ray-0.sqlite")
        med = {e: statistics.median(t) for e, t in times.items()}
        start = {e: statistics.median(v) for e, v in first.items()}
        ratio = med["ray"] / med["local"]
        print(f"start-up (first chunk written, median): local {start['local']:.1f} s, ray {start['ray']:.1f} s "
              f"(actors and workers load the detector and normalizer once per audit)")
        timed = {e: [v for v in steady[e] if v is not None] for e in ("local", "ray")}
        if all(timed.values()):
            rate = {e: statistics.median(v) for e, v in timed.items()}
            rate_ratio = rate["local"] / rate["ray"]
            print(f"steady state (median): local {rate['local']:.0f} comments/s, ray {rate['ray']:.0f} comments/s; "
                  f"ray's overhead {rate_ratio - 1:+.0%} (target < +15%): {'PASS' if rate_ratio - 1 < 0.15 else 'FAIL'}")
        else:  # no rate to compare with the target: neither a pass nor a fail
            print(f"steady state: not measured (every audit wrote its {args.rows} comments in one chunk of up to "
                  f"{args.chunk}; give --rows more than --chunk)")
        print(f"whole audit of {args.rows} (median of {args.repeat}): local {med['local']:.1f} s, ray {med['ray']:.1f} s, "
              f"ratio {ratio:.2f} (overhead {ratio - 1:+.0%}, start-up included)")
        print(f"same scores: {'yes' if same else 'NO'}: {how}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
