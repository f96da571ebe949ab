"""How fast the variant generator and the greedy attack run on NoisyHate dev comments.

    python bench/bench_perturb.py [--data DIR] [--n 200]

Prints variants/s for the generator (heuristic ranking, no detector: the cost the daemon adds
per comment on top of its importance queries) and, for the attack against profanity-check,
success rate, mean target queries and seconds per seed.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

from modlens.config import PerturbationConfig
from modlens.detectors import registry as detectors
from modlens.perturb import recipes
from modlens.paths import shipped_data
from modlens.perturb.generate import VariantGenerator


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(shipped_data()), help="folder with noisyhate/dev.csv (default: the shipped copy)")
    ap.add_argument("--n", type=int, default=200, help="comments to use")
    ap.add_argument("--target", default="profanity-check")
    args = ap.parse_args()
    with open(Path(args.data) / "noisyhate" / "dev.csv", encoding="utf-8", newline="") as fh:
        texts = [row["clean"] for row in csv.DictReader(fh)][: args.n]

    gen = VariantGenerator(PerturbationConfig().strategies, budget=3, seed=0, importance_threshold=0.1)
    gen.generate(texts[0])  # load the word list and lookup table outside the timing
    t0 = time.perf_counter()
    count = sum(len(gen.generate(t)) for t in texts)
    dt = time.perf_counter() - t0
    print(f"generator: {len(texts)} comments, {count} variants in {dt:.2f}s = {count / dt:,.0f} variants/s "
          f"({1000 * dt / len(texts):.2f} ms per comment, budget 3, unavailable: {list(gen.unavailable) or 'none'})")

    target = detectors.create(args.target)
    attack = recipes.create("char_greedy").build(target, max_edit_ratio=0.25, max_queries=200)
    t0 = time.perf_counter()
    results = [attack.run(t).attack for t in texts]
    dt = time.perf_counter() - t0
    by = {s: [r for r in results if r["status"] == s] for s in ("success", "failed", "skipped")}
    tried = len(by["success"]) + len(by["failed"])
    print(f"attack on {args.target}: {len(texts)} seeds in {dt:.1f}s ({dt / len(texts):.3f}s per seed); "
          f"skipped {len(by['skipped'])}, success {len(by['success'])}/{tried} = {len(by['success']) / max(tried, 1):.2f}; "
          f"mean queries (success) {statistics.mean([r['queries'] for r in by['success']] or [0]):.1f}")
    reasons = {}
    for r in by["failed"]:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    print(f"failure reasons: {reasons}")


if __name__ == "__main__":
    main()
