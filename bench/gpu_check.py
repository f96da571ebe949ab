"""The GPU checks of issue 41 as one script: run it whenever a GPU machine is lent (about 5 minutes).

    python bench/gpu_check.py [--peak-tflops 989] [--rows 24783]

In order, each in a child process with its own time limit, then one table naming the device:
  agreement   minilm-toxicity on CUDA vs CPU fp32, HateCheck texts: max |diff|, decisions flipped at 0.5
  detector    minilm-toxicity alone on CUDA, texts/s (bench_detectors.py)
  pipeline    a Davidson audit with a free detector: the pipeline's own ceiling, rows/s (bench_audit.py)
  audit       the full Davidson audit with minilm-toxicity on CUDA, rows/s and audit / alone (bench_audit.py)
  base-size   a roberta-base-shaped classifier, fp16, batch 256: texts/s, TFLOP/s, share of --peak-tflops
  variants    the live variant path (bench_variants.py --profile), comments/s
  cuda tests  the tests that need a GPU (pytest -k cuda)

On a machine without CUDA it prints why and exits 0 without running anything.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PY = sys.executable

AGREEMENT = r"""
import json, sys
import numpy as np
from modlens.detectors import registry
from modlens.datasets import registry as datasets
from scipy.stats import spearmanr
texts = [it.text for it in datasets.load("hatecheck").iter_items()][:int(sys.argv[1])]
cpu = np.array([s["toxic"] for s in registry.create("minilm-toxicity", device="cpu").score(texts)])
gpu = np.array([s["toxic"] for s in registry.create("minilm-toxicity", device="cuda").score(texts)])
print(json.dumps({"n": len(texts), "max_abs": float(np.abs(cpu - gpu).max()), "spearman": float(spearmanr(cpu, gpu)[0]),
                  "flipped": int(((cpu >= 0.5) != (gpu >= 0.5)).sum())}))
"""


def last_json(out: str) -> dict[str, Any]:
    """The last JSON object line of a child's output."""
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise ValueError("no JSON line in the output")


def step(name: str, cmd: list[str], timeout: int, figure: Callable[[str], str]) -> tuple[str, str, float, str]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{BENCH}"})
    except subprocess.TimeoutExpired:
        return name, f"stopped after {timeout} s", time.perf_counter() - t0, "TIMEOUT"
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["failed"]
        return name, tail[0][:100], seconds, f"FAIL ({proc.returncode})"
    try:
        return name, figure(proc.stdout), seconds, "ok"
    except (ValueError, KeyError) as err:
        return name, f"unreadable output: {err}", seconds, "FAIL"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the card's dense fp16 peak (H100 SXM, H200: 989)")
    ap.add_argument("--rows", type=int, default=24783, help="Davidson rows audited (all: 24,783)")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}, "
              f"torch.cuda.is_available() is False); nothing was run. Run it on a machine with an NVIDIA GPU.")
        return 0
    device = f"{torch.cuda.get_device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    print(f"gpu_check on {device}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}", flush=True)
    audit = [PY, str(BENCH / "bench_audit.py"), "--rounds", "1", "--json", "--rows", str(args.rows)]

    def audit_figure(out: str) -> str:
        g = last_json(out)
        text = (f"{g['audit_per_s']:,.0f} rows/s, alone {g['alone_per_s']:,.0f} texts/s, audit/alone {g['ratio']:.2f} "
                f"[{g['device']} {g['dtype']}, batch {g['batch']}, call {g['call']}, chunk {g['chunk']}]")
        if "audit_tflops" in g:
            text += f", {g['audit_tflops']:.1f} TFLOP/s"
        return text

    def rates(out: str) -> str:
        g = last_json(out)
        text = (f"{g['batched_per_s']:,.0f} texts/s batched, {g['single_per_s']:,.0f} one per call "
                f"[{g['device']} {g['dtype']}, batch {g['batch']}, call {g['call']}]")
        if "achieved_tflops" in g:
            text += f", {g['achieved_tflops']:.1f} TFLOP/s = {100 * g.get('share_of_peak', 0):.1f}% of peak"
        return text

    def agreement(out: str) -> str:
        g = last_json(out)
        return f"max |diff| {g['max_abs']:.4f}, Spearman {g['spearman']:.6f}, {g['flipped']} of {g['n']} flipped at 0.5"

    def variants(out: str) -> str:
        found = re.findall(r"([\d,.]+) comments/s", out)
        if not found:
            raise ValueError("no comments/s")
        return ", ".join(f"{x} comments/s" for x in found[-2:]) + " (leave-one-out, pooled)"

    def tests(out: str) -> str:
        return out.strip().splitlines()[-1]

    rows = [
        step("agreement", [PY, "-c", AGREEMENT, "2000"], 60, agreement),
        step("detector", [PY, str(BENCH / "bench_detectors.py"), "--detector", "minilm-toxicity", "--device", "cuda",
                          "--n", "4096", "--single", "64", "--repeat", "2", "--peak-tflops", str(args.peak_tflops)],
             60, rates),
        step("pipeline", [*audit, "--detector", "free"], 45, audit_figure),
        step("audit", [*audit, "--detector", "minilm-toxicity", "--device", "cuda"], 75, audit_figure),
        step("base-size", [PY, str(BENCH / "bench_detectors.py"), "--hf", "roberta-base-like", "--random-init",
                           "--device", "cuda", "--n", "8192", "--single", "32", "--repeat", "2", "--batch-size", "256",
                           "--peak-tflops", str(args.peak_tflops)], 60, rates),
        step("variants", [PY, str(BENCH / "bench_variants.py"), "--profile", "--n", "300"], 45, variants),
        step("cuda tests", [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cuda",
                            "tests/test_detectors_hf.py", "tests/test_detector_hf_image.py"], 45, tests),
    ]
    print(f"\n| check | on {device} | seconds | status |\n|---|---|---:|---|")
    for name, figure, seconds, status in rows:
        print(f"| {name} | {figure} | {seconds:.0f} | {status} |")
    return 0 if all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
