"""The GPU checks as one script: run it whenever a GPU machine is lent (about 7 minutes).

    python bench/gpu_check.py [--peak-tflops 989] [--rows 24783] [--scale-rows 200000]
    python bench/gpu_check.py --pace-only   # the minilm audit and the pace goals below (about 5 minutes)
    python bench/gpu_check.py --tiny        # the pace goals small, on the CPU too (the test suite's run)

In order, each in a child process with its own time limit, then one table naming the device:
  agreement   minilm-toxicity on CUDA vs CPU fp32, HateCheck texts: max |diff|, decisions flipped at 0.5
  detector    minilm-toxicity alone on CUDA, texts/s (bench_detectors.py)
  pipeline    a Davidson audit with a free detector: the pipeline's own ceiling, rows/s (bench_audit.py)
  audit       the full Davidson audit with minilm-toxicity on CUDA, rows/s and audit / alone (bench_audit.py)
  base-size   a roberta-base-shaped classifier, fp16, batch 256: texts/s, TFLOP/s, share of --peak-tflops
  variants    the live variant path (bench_variants.py --profile), comments/s
  cuda tests  the tests that need a GPU (pytest -k cuda)
then the audit-at-the-GPU's-pace goals, each against its target:
  first pass  minilm-toxicity's first pass over texts it never saw vs a warm pass (goal >= 70% of warm)
  audit/warm  the minilm audit's rows/s vs the warm detector alone (goal >= 60%; from `audit`)
  MFU         the base-size classifier's TFLOP/s as a share of --peak-tflops (goal >= 15%)
  2 million   an audit of --scale-rows distinct comments (Davidson's tweets, repeated ones marked
              with their copy number) with the base-size classifier into a fresh study log, and the
              time 2,000,000 would take at that rate (goal <= 5 minutes)

On a machine without CUDA it prints why and exits 0 without running anything, unless --tiny: then
the new checks run on the CPU with a small model and a few thousand rows (their figures mean nothing
there; the run shows the script works).
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


TWO_MILLION = 2_000_000
GOALS = {"first pass": 0.70, "audit/warm": 0.60, "MFU": 0.15, "2 million": 300.0}  # ratios; seconds


def random_classifier(out: Path, tiny: bool) -> int:
    """A roberta-base-shaped sequence classifier with random weights (no download) and MiniLM's
    tokenizer (its ids fit roberta's vocabulary), saved to `out`; its parameter count. `tiny`:
    two layers of width 128, for the CPU."""
    import torch
    from transformers import AutoTokenizer, RobertaConfig, RobertaForSequenceClassification

    from modlens.detectors.minilm import default_model_dir

    tok = AutoTokenizer.from_pretrained(str(default_model_dir()))
    shape = dict(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2) if tiny else {}
    config = RobertaConfig(num_labels=2, pad_token_id=tok.pad_token_id, id2label={0: "ok", 1: "toxic"},
                           label2id={"ok": 0, "toxic": 1}, **shape)
    torch.manual_seed(0)
    model = RobertaForSequenceClassification(config)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return sum(p.numel() for p in model.parameters())


def distinct_comments(n: int) -> list[tuple[str, str]]:
    """n (key, text) rows, every text distinct: Davidson's tweets, a repeat marked " (copy k)" so the
    log scores it again, as it would a new comment."""
    from modlens.datasets import registry as datasets

    base = [it.text for it in datasets.load("davidson").iter_items()]
    return [(f"c{i}", base[i % len(base)] + (f" (copy {i // len(base)})" if i >= len(base) else ""))
            for i in range(n)]


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()


def child_first_pass(device: str, n: int) -> dict[str, Any]:
    """minilm-toxicity at its defaults: a pass over texts it never saw (every shape new), then the
    same texts again (warm); texts/s of each."""
    from modlens.detectors import registry

    texts = [t for _, t in distinct_comments(n)]
    det = registry.create("minilm-toxicity", device=device)
    rates = []
    for _ in range(2):
        sync(device)
        t0 = time.perf_counter()
        for i in range(0, len(texts), det.max_batch):
            det.score(texts[i:i + det.max_batch])
        sync(device)
        rates.append(len(texts) / (time.perf_counter() - t0))
    return {"n": n, "first_per_s": rates[0], "warm_per_s": rates[1], "ratio": rates[0] / rates[1]}


def child_scale(device: str, rows: int, tiny: bool, peak_tflops: float) -> dict[str, Any]:
    """The base-size classifier: a warm pass (texts/s, TFLOP/s, share of the peak), then an audit of
    `rows` distinct comments from a CSV into a fresh study log, and 2 million at that rate."""
    import csv
    import tempfile

    from runs_on import count_tokens, flops_per_token

    from modlens.audit.run import run_audit
    from modlens.detectors import registry

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        params = random_classifier(work / "model", tiny)
        dtype = "float16" if device.startswith("cuda") else "float32"
        det = registry.create("hf-classifier", model=str(work / "model"), toxicity_label="toxic", device=device,
                              dtype=dtype, batch_size=256, max_length=256)
        data = distinct_comments(rows)
        warm = [t for _, t in data[:min(rows, 8192)]]
        det.score(warm[:256])  # loading, first kernels
        sync(device)
        t0 = time.perf_counter()
        for i in range(0, len(warm), det.max_batch):
            det.score(warm[i:i + det.max_batch])
        sync(device)
        alone = len(warm) / (time.perf_counter() - t0)
        tokens = count_tokens(det, warm) or 0
        per_token = flops_per_token(det, tokens / len(warm)) or 0.0
        tflops = per_token * tokens / len(warm) * alone / 1e12
        path = work / "comments.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "text"])
            w.writerows(data)
        t0 = time.perf_counter()
        res = run_audit(str(path), db=work / "study.sqlite", detector_objects={"base": det}, progress=False,
                        reader_options={"id_col": "id", "text_col": "text"})
        wall = time.perf_counter() - t0
    rate = res.n_items / wall
    return {"params": params, "device": device, "dtype": dtype, "alone_per_s": alone, "tflops": tflops,
            "mfu": tflops / peak_tflops, "rows": res.n_items, "audit_s": wall, "audit_per_s": rate,
            "two_million_s": TWO_MILLION / rate}


def goals_table(first: dict[str, Any] | None, audit_ratio: float | None, scale: dict[str, Any] | None,
                device: str, scale_rows: int) -> None:
    """The four goals, each with its measured figure and whether it is met."""
    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else "met" if ok else "NOT met"

    rows = [("first pass", f"{first['first_per_s']:,.0f} vs warm {first['warm_per_s']:,.0f} texts/s = "
             f"{100 * first['ratio']:.0f}% of warm" if first else "not measured", ">= 70% of warm",
             verdict(first["ratio"] >= GOALS["first pass"]) if first else "-"),
            ("audit/warm", f"minilm audit {100 * audit_ratio:.0f}% of the warm detector" if audit_ratio is not None
             else "minilm audit not measured", ">= 60%",
             verdict(audit_ratio >= GOALS["audit/warm"]) if audit_ratio is not None else "-")]
    if scale:
        rows.append(("audit/warm", f"base-size audit {scale['audit_per_s']:,.0f} rows/s = "
                     f"{100 * scale['audit_per_s'] / scale['alone_per_s']:.0f}% of the warm classifier", ">= 60%",
                     verdict(scale["audit_per_s"] / scale["alone_per_s"] >= GOALS["audit/warm"])))
        rows += [("MFU", f"{scale['tflops']:.1f} TFLOP/s = {100 * scale['mfu']:.1f}% of peak "
                  f"({scale['params'] / 1e6:.0f} M parameters, {scale['dtype']}, {scale['alone_per_s']:,.0f} texts/s)",
                  ">= 15% of fp16 peak", verdict(scale["mfu"] >= GOALS["MFU"])),
                 ("2 million", f"{scale['rows']:,} rows audited in {scale['audit_s']:.1f} s ({scale['audit_per_s']:,.0f} "
                  f"rows/s) -> 2,000,000 in {scale['two_million_s'] / 60:.1f} min", "<= 5 min, from >= 200,000 rows",
                  verdict(scale["two_million_s"] <= GOALS["2 million"] and scale["rows"] >= 200_000))]
    else:
        rows += [("MFU", "not measured", ">= 15% of fp16 peak", "-"),
                 ("2 million", "not measured", "<= 5 min, from >= 200,000 rows", "-")]
    print(f"\n| goal | on {device} | target | verdict |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def pace_checks(args: argparse.Namespace, device: str, where: str, audit_ratio: float | None) -> bool:
    """first pass, MFU and 2 million in children (their own time limits); the goals table. Whether all ran."""
    me = [PY, str(Path(__file__).resolve())]
    found: dict[str, dict[str, Any]] = {}

    def keep(name: str) -> Callable[[str], str]:
        def figure(out: str) -> str:
            found[name] = last_json(out)
            return "see the goals table"
        return figure

    first_n, limit = (128, 120) if args.tiny else (args.first_n, 180)
    rows = [step("first pass", [*me, "--child", "first-pass", "--device", device, "--first-n", str(first_n)], limit,
                 keep("first")),
            step("2 million", [*me, "--child", "scale", "--device", device, "--scale-rows", str(args.scale_rows),
                               "--peak-tflops", str(args.peak_tflops), *(["--tiny"] if args.tiny else [])],
                 180 if args.tiny else 420, keep("scale"))]
    for name, figure, _seconds, status in rows:
        if status != "ok":
            print(f"{name}: {status}: {figure}")
    goals_table(found.get("first"), audit_ratio, found.get("scale"), where, args.scale_rows)
    return all(r[3] == "ok" for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the card's dense fp16 peak (H100 SXM, H200: 989)")
    ap.add_argument("--rows", type=int, default=24783, help="Davidson rows audited (all: 24,783)")
    ap.add_argument("--scale-rows", type=int, default=200_000, help="rows of the audit the 2 million are extrapolated "
                                                                   "from (the goal asks for at least 200,000)")
    ap.add_argument("--first-n", type=int, default=24783, help="texts of the first-pass check")
    ap.add_argument("--tiny", action="store_true", help="only the pace checks, small, on whatever device there is")
    ap.add_argument("--pace-only", action="store_true",
                    help="on CUDA: the minilm audit and the pace checks only (about 5 minutes; a 10-minute device slot)")
    ap.add_argument("--child", choices=("first-pass", "scale"), help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(BENCH))
        if args.tiny:
            args.scale_rows = min(args.scale_rows, 2000)
        out = (child_first_pass(args.device, args.first_n) if args.child == "first-pass"
               else child_scale(args.device, args.scale_rows, args.tiny, args.peak_tflops))
        print(json.dumps(out))
        return 0
    import torch

    if args.tiny:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        args.scale_rows = min(args.scale_rows, 2000)
        where = f"{device} (--tiny: a small model, {args.scale_rows:,} rows; not the goals' figures)"
        print(f"gpu_check --tiny on {where}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}", flush=True)
        return 0 if pace_checks(args, device, where, None) else 1
    if not torch.cuda.is_available():
        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}, "
              f"torch.cuda.is_available() is False); nothing was run. Run it on a machine with an NVIDIA GPU.")
        return 0
    device = f"{torch.cuda.get_device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    print(f"gpu_check on {device}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}", flush=True)
    audit = [PY, str(BENCH / "bench_audit.py"), "--rounds", "1", "--json", "--rows", str(args.rows)]
    audit_ratio: list[float] = []  # the minilm audit's audit/alone, for the goals table

    def audit_figure(out: str) -> str:
        g = last_json(out)
        if g.get("device", "").startswith("cuda"):
            audit_ratio.append(float(g["ratio"]))
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

    if args.pace_only:
        rows = [step("audit", [*audit, "--detector", "minilm-toxicity", "--device", "cuda"], 75, audit_figure)]
        print(f"audit: {rows[0][1]} ({rows[0][3]})", flush=True)
        return 0 if pace_checks(args, "cuda", device, audit_ratio[-1] if audit_ratio else None) and rows[0][3] == "ok" else 1
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
    paced = pace_checks(args, "cuda", device, audit_ratio[-1] if audit_ratio else None)
    return 0 if paced and all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
