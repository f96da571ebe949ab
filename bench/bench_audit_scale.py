"""Whether the study log keeps an audit at a device's pace as the log grows to corpus size: a local
audit of N distinct comments (Davidson's tweets, each repeat marked " (copy k)" so that it is a new
text, as `gpu_check.py` builds them) from a CSV into a fresh log, on this machine's CPU.

The goal it answers: two million comments (Civil Comments' size) in five minutes, about 6,700 rows/s
end to end. Every chunk's COMMIT writes again the pages its texts touched in the texts' sha256 index,
and once that index has more leaf pages than a chunk has texts, that is about one page per new text,
so an audit's CPU per row grows with the log. This bench prints the rate over each fifth of the run
(rows per CPU second of this process and wall rows/s), the whole run's, and 2 million at the last
fifth's wall rate (the slowest, the log at its largest):

- `--detector free` (a constant score): the log side alone, the most an audit into this log can do;
- `--detector paced:RATE`: free, but each call waits as long as a device at RATE texts/s would take
  (`time.sleep`, the GIL released, as a GPU's kernels do; the H200's warm MiniLM: 7551), so the
  audit records chunk n while chunk n+1 "computes" (`LocalCompute.depth` 2): audit / RATE is how
  close the pipeline around a device comes to the device's pace, at this log size.

    python bench/bench_audit_scale.py [--rows 200000] [--detector free | paced:7551] [--chunk N] [--dir DIR]

The log and the CSV go to a temporary folder under --dir (default: the system's; 1 million rows take
about 600 MB).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

from free_detector import Free, Paced
from gpu_check import distinct_comments

from modlens.audit.run import run_audit
from modlens.chunks.sinks import CHUNK_ITEMS

TWO_MILLION = 2_000_000
GOAL_S = 300  # two million comments in five minutes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--detector", default="free", help="`free` or `paced:RATE` (texts/s)")
    ap.add_argument("--chunk", type=int, default=CHUNK_ITEMS, help=f"the audit's chunk (default: its own, {CHUNK_ITEMS})")
    ap.add_argument("--dir", default=None, help="where the CSV and the log go (default: a temporary folder)")
    args = ap.parse_args()
    if args.detector == "free":
        det: Free = Free()
    elif args.detector.startswith("paced:"):
        det = Paced(float(args.detector.partition(":")[2]))
    else:
        sys.exit("--detector: free or paced:RATE")
    n = args.rows
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "comments.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "text"])
            writer.writerows(distinct_comments(n))
        fifths: list[tuple[int, float, float]] = []  # rows, CPU s, wall s of each fifth
        c0, t0 = time.process_time(), time.perf_counter()
        mark = [0, c0, t0]

        def on_chunk(done: int) -> None:
            if done - mark[0] >= n / 5 or done == n:
                c, t = time.process_time(), time.perf_counter()
                fifths.append((done - mark[0], c - mark[1], t - mark[2]))
                mark[:] = [done, c, t]

        res = run_audit(str(path), db=Path(tmp) / "study.sqlite", detector_objects={"d": det}, progress=False,
                        reader_options={"id_col": "id", "text_col": "text"}, on_chunk=on_chunk,
                        chunk_size=args.chunk)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        size = os.path.getsize(Path(tmp) / "study.sqlite")
    if res.n_items != n:
        sys.exit(f"the audit logged {res.n_items:,} of {n:,} rows")
    print(f"\n{n:,} distinct comments, detector {args.detector}, chunk {args.chunk}, {os.cpu_count()} CPU cores, "
          f"load {os.getloadavg()[0]:.1f}; log {size / 2**20:,.0f} MiB at the end\n")
    print("| rows | rows per CPU s (µs per row) | wall rows/s |\n|---|---:|---:|")
    done = 0
    for rows, c, t in fifths:
        print(f"| {done:,}–{done + rows:,} | {rows / c:,.0f} ({c / rows * 1e6:.1f}) | {rows / t:,.0f} |")
        done += rows
    print(f"| all | {n / cpu:,.0f} ({cpu / n * 1e6:.1f}) | {n / wall:,.0f} |")
    last_rows, _, last_wall = fifths[-1]
    two_m = TWO_MILLION / (last_rows / last_wall)
    print(f"\n2 million at the last fifth's wall rate: {two_m:,.0f} s (goal <= {GOAL_S} s)")
    if isinstance(det, Paced):
        print(f"audit / the paced device's rate: whole run {n / wall / det.rate:.2f}, "
              f"last fifth {last_rows / last_wall / det.rate:.2f}")


if __name__ == "__main__":
    main()
