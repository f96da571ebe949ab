"""Dataset readers: rows/s and peak Python memory reading a generated Civil-Comments-like file
(text, toxicity score, identity, ~20 unused score columns) as CSV, JSONL and Parquet, streamed
(`Dataset.iter_items`, what `modlens audit` uses) against holding every item at once
(`Dataset.items`, what the readers did before). Both sides do the same work: the same reader
(`registry.load` with the same --label, its checks included) builds the same items, which one side
counts as they come and the other keeps in a list; the bench checks both counted the same items.
Peak memory is tracemalloc's, so the numbers are Python objects only.

    python bench/bench_dataset_stream.py [--rows 200000] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from modlens.datasets import registry

SCORES = [f"score_{i}" for i in range(20)]
LABEL = "toxicity>=0.5"  # the gold both sides read


def make_rows(n: int) -> list[dict[str, object]]:
    return [{"text": f"comment {i}: " + "lorem ipsum dolor sit amet " * (1 + i % 9), "toxicity": (i % 10) / 10,
             "identity": "muslim" if i % 5 == 0 else "", **{c: 0.0 for c in SCORES}} for i in range(n)]


def write(folder: Path, n: int) -> dict[str, Path]:
    rows = make_rows(n)
    out = {"csv": folder / "big.csv", "jsonl": folder / "big.jsonl", "parquet": folder / "big.parquet"}
    with open(out["csv"], "w", encoding="utf-8") as fh:
        fh.write(",".join(rows[0]) + "\n")
        fh.writelines(",".join(f'"{v}"' if k == "text" else str(v) for k, v in r.items()) + "\n" for r in rows)
    with open(out["jsonl"], "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), out["parquet"])
    return out


def measure(fn: Callable[[], int]) -> tuple[int, float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        n = fn()
        return n, time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        files = write(Path(tmp), args.rows)
        print(f"# {args.rows} rows per file, each read by registry.load(FILE, label={LABEL!r}) into the same items: "
              "'streamed' counts them as iter_items yields them, 'held' keeps them all (Dataset.items); "
              "both after one unmeasured read of the file")
        print(f"{'file':<8} {'MB':>6} {'how':<10} {'rows/s':>10} {'peak MB':>8}")
        for fmt, path in files.items():
            mb = path.stat().st_size / 1e6
            stream = lambda p=path: sum(1 for _ in registry.load(str(p), label=LABEL).iter_items())  # noqa: E731
            held = lambda p=path: len(registry.load(str(p), label=LABEL).items)  # noqa: E731
            # unmeasured: the reader keeps a file's hash and text format by its size and mtime, so the
            # first read of a file pays for them and the reads after it do not; both sides read after it
            stream()
            counted = []
            for how, fn in (("streamed", stream), ("held", held)):
                n, secs, peak = measure(fn)
                counted.append(n)
                print(f"{fmt:<8} {mb:6.1f} {how:<10} {n / secs:10,.0f} {peak / 1e6:8.1f}")
            if len(set(counted)) != 1:
                raise SystemExit(f"{fmt}: streamed and held read different numbers of items {counted}: not comparable")


if __name__ == "__main__":
    main()
