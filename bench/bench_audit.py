"""Audit throughput: one local audit of the shipped Davidson file, timed without start-up.

Each round runs one audit per source tree in a fresh process (imports and detector loading are
outside the timer, so only the chunk pipeline, the detector and the study log are measured) and
prints rows/s; trees alternate so a busy machine slows each alike. Compare this tree with an
older checkout:

    git worktree add /tmp/before <commit>
    python bench/bench_audit.py --tree /tmp/before --tree . --rows 20000 --rounds 3

The detector defaults to profanity-check (fast: the pipeline's own cost shows); pass
`--detector minilm-toxicity` for a model-bound audit.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from modlens.audit.run import run_audit
from modlens.detectors import registry
rows, detector, db = int(sys.argv[1]), sys.argv[2], sys.argv[3]
det = registry.create(detector)
t0 = time.perf_counter()
res = run_audit("davidson", db=db, limit=rows, detector_objects={detector: det}, progress=False)
print(json.dumps({"seconds": time.perf_counter() - t0, "items": res.n_items}))
"""


def one(tree: Path, rows: int, detector: str, workdir: Path) -> float:
    db = Path(tempfile.mkdtemp(dir=workdir)) / "log.sqlite"
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "MODLENS_HOME": str(db.parent)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(rows), detector, str(db)], env=env, check=True,
                         capture_output=True, text=True, timeout=1800).stdout
    got = json.loads(out.strip().splitlines()[-1])
    return float(got["items"]) / float(got["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", type=Path, help="a source tree (repeatable; default: this one)")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--detector", default="profanity-check")
    args = ap.parse_args()
    trees = [t.resolve() for t in (args.tree or [Path(__file__).resolve().parents[1]])]
    rates: dict[Path, list[float]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for tree in trees:
                rates[tree].append(one(tree, args.rows, args.detector, Path(work)))
                print(f"round {r + 1}: {tree}: {rates[tree][-1]:,.0f} rows/s", flush=True)
    print(f"\n{args.rows:,} Davidson rows, {args.detector}, load {os.getloadavg()[0]:.1f}")
    base = statistics.median(rates[trees[0]])
    for tree in trees:
        med = statistics.median(rates[tree])
        print(f"{str(tree):<40} median {med:>9,.0f} rows/s  ({med / base:.2f}x the first tree)")


if __name__ == "__main__":
    main()
