"""Memory of an audit against its largest text field: a CSV of a few short comments and one long one
(default 50 MB), audited with a detector that costs nothing (bench/free_detector.py), in a fresh
child process per source tree, so what is measured is the audit's own copies of the text.

    python bench/bench_audit_memory.py [--mb 50] [--tree OLD_CHECKOUT --tree .] [--normalize]
    python bench/bench_audit_memory.py --tiny          # a 2 MB field: the test suite's run

Per tree it prints the peak of Python's allocations during the audit (tracemalloc: every copy of
the text the audit makes, whoever makes it) and, from a second child without tracemalloc (whose
bookkeeping per allocated block would swell it), the growth of the process's resident memory
(Linux's VmHWM during the audit, reset when it starts, less the RSS then; a first audit of a small
file has loaded what the audit imports on first use), each also as a multiple of the field's size.
Compare trees with `git worktree add /tmp/before HEAD~1` and `--tree /tmp/before --tree .`.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = "you are such a stupid idiot and nice day hello world the of".split()

CHILD = r"""
import json, sys, tracemalloc
sys.path[:0] = [sys.argv[1], sys.argv[2]]          # the tree's src/, then bench/ (free_detector)
from free_detector import Free
from modlens.audit import run_audit
path, db, normalize, warm, trace = sys.argv[3], sys.argv[4], sys.argv[5] == "1", sys.argv[6], sys.argv[7] == "1"
# a first audit of a small file: the modules the audit loads on first use are not the text's cost
run_audit(warm, db=db + ".warm", detector_objects={"free": Free()}, progress=False, normalize=normalize)

def status(key):  # kB, from Linux's /proc/self/status
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:  # resets VmHWM (the peak) to the current RSS
    fh.write("5")
if trace:  # Python's allocations; tracemalloc's own bookkeeping (per block) would swell the RSS: a run of its own
    tracemalloc.start(1)
run_audit(path, db=db, detector_objects={"free": Free()}, progress=False, normalize=normalize)
peak = tracemalloc.get_traced_memory()[1] if trace else None
after = status("VmHWM")
print(json.dumps({"peak": peak, "rss_growth": (after - before) * 1024, "rss_peak": after * 1024}))
"""


def make_file(path: Path, mb: float) -> int:
    """A CSV of five short comments and one of `mb` megabytes of words; returns the long one's bytes."""
    rnd = random.Random(0)
    target = max(1, int(mb * 1_000_000))
    parts, size = [], 0
    while size < target:
        w = rnd.choice(WORDS)
        parts.append(w)
        size += len(w) + 1
    big = " ".join(parts)[:target]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("id,text\n")
        for n in range(5):
            fh.write(f"s{n},short comment number {n}\n")
        fh.write(f"big,{big}\n")
    return len(big.encode())


def run_tree(tree: Path, data: Path, db: Path, normalize: bool, warm: Path) -> dict:
    """Two children: the Python peak under tracemalloc, the RSS growth without it."""
    out = {}
    for trace in ("1", "0"):
        for f in db.parent.glob(db.name + "*"):
            f.unlink()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tree / "src"), str(HERE), str(data), str(db),
                               "1" if normalize else "0", str(warm), trace], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"audit in {tree} failed:\n{proc.stderr[-3000:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        out.update({"peak": got["peak"]} if trace == "1" else {"rss_growth": got["rss_growth"], "rss_peak": got["rss_peak"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50.0, help="size of the long text field in MB")
    ap.add_argument("--tree", action="append", type=Path, help="a source tree (repeatable; default: this one)")
    ap.add_argument("--normalize", action="store_true", help="also normalize (the default normalizer)")
    ap.add_argument("--tiny", action="store_true", help="a 2 MB field (the test suite's run)")
    ap.add_argument("--json", action="store_true", help="also print every tree's figures as one JSON line")
    args = ap.parse_args()
    mb = 2.0 if args.tiny else args.mb
    trees = args.tree or [HERE.parent]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "long-field.csv"
        field = make_file(data, mb)
        warm = Path(tmp) / "warm-up.csv"
        make_file(warm, 0.0)
        print(f"one text field of {field / 1e6:.1f} MB among 5 short comments; detector: free (costs nothing)"
              + ("; normalizer on" if args.normalize else ""))
        print(f"{'tree':<40} {'Python peak':>14} {'x field':>8} {'peak RSS growth':>15} {'x field':>8}")
        for n, tree in enumerate(trees):
            r = run_tree(tree.resolve(), data, Path(tmp) / f"log-{n}.sqlite", args.normalize, warm)
            print(f"{str(tree)[-40:]:<40} {r['peak'] / 2**20:>11.0f} MiB {r['peak'] / field:>8.1f} "
                  f"{r['rss_growth'] / 2**20:>12.0f} MiB {r['rss_growth'] / field:>8.1f}")
            if args.json:
                print(json.dumps({"tree": str(tree), "field_bytes": field, **r}))


if __name__ == "__main__":
    main()
