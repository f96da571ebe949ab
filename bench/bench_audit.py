"""Audit throughput against the detector alone: a local audit of the shipped Davidson file,
timed without start-up, beside the same detector scoring the same texts by itself.

Each round runs one child process per source tree (imports and detector loading are outside the
timers); trees alternate so a busy machine slows each alike. Every row names what it ran on
(device, dtype, rows per forward pass, texts per call, audit chunk), the load, the detector alone
(texts/s, calls of its own size), the audit (rows/s wall, and per CPU second of the process: the
figure a loaded machine disturbs least) and audit / alone; where the audit's wall went (`audit_s`:
the audit, `score_s`: inside the detector's calls, `record_s`: inside the chunks' records; chunks
that overlap make `audit_s` less than `score_s + record_s`); on CUDA, achieved TFLOP/s of each,
from the model's config and the texts' token counts (`runs_on.py`). Compare with an older tree:

    git worktree add --detach /tmp/before <commit>
    python bench/bench_audit.py --tree /tmp/before --tree . --rows 24783 --rounds 3 --detector free
    python bench/bench_audit.py --detector minilm-toxicity --rows 4000 [--device cuda]
    python bench/bench_audit.py --detector minilm-toxicity --rows 2000 --depth 1 --depth 2

`--depth` (repeatable) sets the local engine's chunks in flight (`LocalCompute.depth`: 1 computes
and records one chunk after the other, 2 records chunk n while chunk n+1 computes); each round runs
every tree at every depth, alternating.

`--detector free` costs nothing (a constant score; the pipeline's own cost shows); `--detector
paced:RATE` is free but waits as long as a device at RATE texts/s would take (the H200's warm MiniLM:
7551), with the GIL released, as it declares (`releases_gil`): the pipeline around a GPU, on a CPU (a
tree from before that declaration inferred it from a held model: pass `--depth` there);
`profanity-check` is the default; any registry key works.
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

from modlens.chunks.sinks import CHUNK_ITEMS

BENCH = Path(__file__).resolve().parent

CHILD = r"""
import json, os, sys, time
from itertools import islice
sys.path.insert(0, sys.argv[6])
from runs_on import count_tokens, flops_per_token, runs_on
from modlens.audit.run import run_audit
from free_detector import Free, Paced
from modlens.detectors import registry
from modlens.scale.sources import load_dataset

rows, detector, db, options, chunk = int(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
depth = int(sys.argv[7])
if depth:  # the local engine's chunks in flight, whatever the tree decides by itself
    from modlens.chunks.compute import LocalCompute
    LocalCompute.depth = property(lambda self: depth)
if detector == "free":
    det = Free()
elif detector.startswith("paced:"):
    det = Paced(float(detector.partition(":")[2]))
else:
    det = registry.create(detector, **options)
texts = list(dict.fromkeys(it.text for it in islice(load_dataset("davidson", None, "local").iter_items(), rows)))
det.score(texts[:8])  # warm-up: lazy init, CUDA kernels
info = runs_on(det)
cuda = info["device"].startswith("cuda")
def sync():
    if cuda:
        import torch
        torch.cuda.synchronize()
sync()
t0 = time.perf_counter()
for i in range(0, len(texts), det.max_batch):
    det.score(texts[i:i + det.max_batch])
sync()
alone_s = time.perf_counter() - t0
# before the audit: run_audit closes its detectors, and a closed detector has no model config left
tokens = count_tokens(det, texts) if cuda else None
per_token = flops_per_token(det, tokens / len(texts)) if tokens else None
# where the audit's wall went: the detector's calls (its worker thread) and the chunks' records (the
# event loop); with chunks overlapped the two run at once, so the audit takes less than their sum
from modlens.chunks.sinks import LogSink
spent = {"score": 0.0, "record": 0.0}
def timed(name, fn):
    def call(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t
    return call
det.score = timed("score", det.score)
LogSink.record = timed("record", LogSink.record)
t0, c0 = time.perf_counter(), time.process_time()
res = run_audit("davidson", db=db, limit=rows, detector_objects={detector: det}, progress=False, chunk_size=chunk)
sync()
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
out = {**info, "chunk": chunk, "depth": depth or "-", "items": res.n_items, "texts": len(texts), "alone_per_s": len(texts) / alone_s,
       "audit_per_s": res.n_items / seconds, "audit_per_cpu_s": res.n_items / cpu, "load": os.getloadavg()[0]}
out["ratio"] = out["audit_per_s"] / out["alone_per_s"]
out["audit_s"], out["score_s"], out["record_s"] = seconds, spent["score"], spent["record"]
if tokens and per_token:
    flops = per_token * tokens
    out["alone_tflops"], out["audit_tflops"] = flops / alone_s / 1e12, flops / seconds / 1e12
print(json.dumps(out))
"""

COLUMNS = ["device", "dtype", "batch", "call", "chunk", "depth", "load", "alone_per_s", "audit_per_s", "ratio",
           "audit_per_cpu_s", "audit_s", "score_s", "record_s", "alone_tflops", "audit_tflops"]


def one(tree: Path, depth: int, args: argparse.Namespace, workdir: Path) -> dict:
    db = Path(tempfile.mkdtemp(dir=workdir)) / "log.sqlite"
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "MODLENS_HOME": str(db.parent)}
    options = {"device": args.device} if args.device else {}
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.rows), args.detector, str(db), json.dumps(options),
                          str(args.chunk), str(BENCH), str(depth)], env=env, check=True, capture_output=True, text=True,
                         timeout=1800).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    return str(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", type=Path, help="a source tree (repeatable; default: this one)")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=CHUNK_ITEMS,
                    help=f"audit chunk (--chunk of modlens audit; default the product's, {CHUNK_ITEMS})")
    ap.add_argument("--detector", default="profanity-check",
                    help="registry key, `free` (costs nothing) or `paced:RATE` (waits as a device at RATE texts/s)")
    ap.add_argument("--device", help="the detector's device option (minilm-toxicity, hf-classifier): cpu | cuda | auto")
    ap.add_argument("--depth", action="append", type=int,
                    help="the local engine's chunks in flight (repeatable; default: what the tree decides)")
    ap.add_argument("--json", action="store_true", help="also print every run as a JSON line")
    args = ap.parse_args()
    trees = [t.resolve() for t in (args.tree or [BENCH.parent])]
    runs: dict[tuple[Path, int], list[dict]] = {(t, d): [] for t in trees for d in (args.depth or [0])}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for tree, depth in runs:
                got = one(tree, depth, args, Path(work))
                runs[tree, depth].append(got)
                print(f"round {r + 1}: {tree}{f' depth {depth}' if depth else ''}: audit {got['audit_per_s']:,.0f} "
                      f"rows/s, alone {got['alone_per_s']:,.0f} texts/s, load {got['load']:.1f}", flush=True)
                if args.json:
                    print(json.dumps({"tree": str(tree), **got}))
    print(f"\n{args.rows:,} Davidson rows, detector {args.detector}, {os.cpu_count()} CPU cores; medians over "
          f"{args.rounds} rounds (alone: texts/s; audit: rows/s)")
    cols = [c for c in COLUMNS if any(c in g for rs in runs.values() for g in rs)]
    print(f"{'tree':<28}" + "".join(f"{c:>16}" for c in cols) + f"{'vs first':>15}")
    first = next(iter(runs))
    base = statistics.median(g["audit_per_s"] for g in runs[first])
    for (tree, _), got in runs.items():
        med = {c: (statistics.median(g[c] for g in got) if isinstance(got[0].get(c), float)
                   else got[0].get(c, "-")) for c in cols}
        print(f"{str(tree)[-28:]:<28}" + "".join(f"{cell(med[c]):>16}" for c in cols)
              + f"{med['audit_per_s'] / base:>14.2f}x")

if __name__ == "__main__":
    main()
