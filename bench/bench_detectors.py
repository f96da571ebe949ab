"""Detector throughput, load time and memory: batched vs one call per comment.

Each detector runs in a fresh subprocess so load time and peak memory are its own. The speed-up
compares the two ways on the same comments: all --n of them, or with --single K the first K, which
are then also timed batched for it (batched_per_s stays the rate over all --n).

  python bench/bench_detectors.py                       # minilm-toxicity + profanity-check on this CPU
  python bench/bench_detectors.py --n 512 --single 64      # the speed-up on the first 64, both ways
  python bench/bench_detectors.py --detector minilm-toxicity --omp-wait both   # sleeping vs spinning OpenMP workers
  python bench/bench_detectors.py --hf roberta-base-like --random-init --n 4096 --single 64   # base-size model, GPU fp16
  python bench/bench_detectors.py --int8              # minilm-toxicity vs its int8 twin: speed and agreement
  python bench/bench_detectors.py --onnx              # the same, the torch twin and the ONNX Runtime twin side by side
  python bench/bench_detectors.py --detector minilm-toxicity --device cuda --audit-rows 24783   # + audit vs alone

Every row names what it ran on (device and dtype read from the model's weights, rows per forward
pass, texts per call: `runs_on.py`); with --audit-rows, a Davidson audit with the same detector
beside the detector alone on the same texts (`bench_audit.py`), and their ratio.

The --hf mode builds a randomly initialised roberta-base-sized classifier (no download),
saves it with MiniLM's offline tokenizer and loads it through hf-classifier's normal code
path. On CUDA every transformer row also prints achieved TFLOP/s (from the model's config and the
texts' token counts) against --peak-tflops (the card's dense fp16 tensor-core peak; 989 for an
H100 SXM, 756 for H100 PCIe, 989 for an H200).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from modlens.paths import shipped_data
from runs_on import count_tokens, flops_per_token, runs_on

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = shipped_data() / "noisyhate" / "dev.csv"


def load_texts(path: Path, column: str, n: int) -> list[str]:
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as fh:
            texts = [row[column] for row in csv.DictReader(fh) if row.get(column)]
    else:  # no data here: synthetic comments of mixed length, still deterministic
        words = "you are such a stupid idiot have a nice day the policy is wrong and I disagree".split()
        texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(5 + (i * 13) % 40)) for i in range(n)]
    return (texts * (n // max(len(texts), 1) + 1))[:n]


def load_now() -> str:
    """1/5/15-minute load averages: other processes competing for the CPU during the run."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_random_roberta(out: Path) -> dict:
    """roberta-base geometry, random weights, MiniLM's WordPiece tokenizer (ids < roberta's vocab)."""
    import torch
    from transformers import AutoTokenizer, RobertaConfig, RobertaForSequenceClassification
    from modlens.detectors.minilm import default_model_dir

    tok = AutoTokenizer.from_pretrained(str(default_model_dir()))
    config = RobertaConfig(num_labels=2, pad_token_id=tok.pad_token_id, id2label={0: "ok", 1: "toxic"},
                           label2id={"ok": 0, "toxic": 1})
    torch.manual_seed(0)
    model = RobertaForSequenceClassification(config)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return {"params": sum(p.numel() for p in model.parameters())}


def measure(name: str, options: dict, texts: list[str], n_single: int | None, repeat: int = 3) -> dict:
    from modlens.detectors import registry

    rss0 = rss_mib()
    t0 = time.perf_counter()
    det = registry.create(name, **options)
    load_s = time.perf_counter() - t0
    det.score(texts[:8])  # warm-up: lazy init, CUDA kernels
    info = runs_on(det)  # the weights' device, not `det.device` (MiniLM's encoder holds it)
    cuda = info["device"].startswith("cuda")
    if cuda:
        import torch
        torch.cuda.reset_peak_memory_stats()
    # Batched and one-at-a-time runs alternate, so load from other processes hits both alike;
    # each path reports its best run (least disturbed) and its median. The speed-up is taken on the
    # same comments both ways (`compared`): comments differ in length, so a rate over other ones
    # (the first few are shorter than the rest) would not compare the calls alone.
    compared = texts[:n_single] if n_single else texts
    subset = len(compared) < len(texts)

    def batched(items: list[str]) -> float:
        t0 = time.perf_counter()
        for i in range(0, len(items), det.max_batch):
            det.score(items[i:i + det.max_batch])
        return time.perf_counter() - t0

    batched_runs, compared_runs, single_runs = [], [], []
    for _ in range(repeat):
        batched_runs.append(batched(texts))
        if subset:
            compared_runs.append(batched(compared))
        t0 = time.perf_counter()
        for text in compared:
            det.score([text])  # the same detector, one call per comment (batch size 1)
        single_runs.append(time.perf_counter() - t0)
    compared_runs = compared_runs or batched_runs
    batched_s, single_s = min(batched_runs), min(single_runs)
    result = {
        "detector": name, "version": det.version, **info, "load_s": round(load_s, 2), "compared": len(compared),
        "batched_per_s": round(len(texts) / batched_s, 1), "single_per_s": round(len(compared) / single_s, 1),
        "batched_median_per_s": round(len(texts) / statistics.median(batched_runs), 1),
        "single_median_per_s": round(len(compared) / statistics.median(single_runs), 1),
        "rss_after_load_mib": round(rss_mib() - rss0, 1), "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    if subset:
        result["compared_batched_per_s"] = round(len(compared) / min(compared_runs), 1)
    # best against best, on the same comments
    result["batch_speedup"] = round(single_s / min(compared_runs), 2)
    if cuda:
        import torch
        result["gpu_peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        result["gpu"] = torch.cuda.get_device_name()
    tokens = count_tokens(det, texts)  # tokens actually run through the model (padding excluded)
    if tokens:
        result["tokens_per_s"] = round(tokens / batched_s, 1)
        per_token = flops_per_token(det, tokens / len(texts))
        if per_token and cuda:
            result["achieved_tflops"] = round(per_token * tokens / batched_s / 1e12, 3)
    det.close()
    return result


def child(args) -> None:
    texts = load_texts(Path(args.data), args.column, args.n)
    options = json.loads(args.options)
    result = measure(args.child, options, texts, args.single, args.repeat)
    if "achieved_tflops" in result:
        result["share_of_peak"] = round(result["achieved_tflops"] / args.peak_tflops, 3)
    print(json.dumps(result))


def run_child(name: str, options: dict, args, params: int = 0, omp_wait: str | None = None) -> dict:
    env = dict(os.environ)
    if omp_wait:  # the child imports torch fresh, so this decides how its OpenMP workers wait
        env["OMP_WAIT_POLICY"] = omp_wait.upper()
    cmd = [sys.executable, __file__, "--child", name, "--options", json.dumps(options), "--n", str(args.n),
           *(["--single", str(args.single)] if args.single else []), "--data", str(args.data), "--column", args.column,
           "--params", str(params), "--peak-tflops", str(args.peak_tflops), "--repeat", str(args.repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"detector": name, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if omp_wait:
        result["omp_wait"] = omp_wait
    return result


def print_table(rows: list[dict]) -> None:
    cols = ["detector", "device", "dtype", "batch", "call", "omp_wait", "load_s", "batched_per_s", "compared",
            "compared_batched_per_s", "single_per_s", "batch_speedup", "audit_chunk", "audit_alone_per_s", "audit_per_s", "audit_ratio",
            "batched_median_per_s", "single_median_per_s",
            "rss_after_load_mib", "peak_rss_mib", "gpu_peak_mib", "tokens_per_s", "achieved_tflops", "share_of_peak"]
    cols = [c for c in cols if any(c in r for r in rows)]
    print("  ".join(f"{c:>14}" for c in cols))
    for r in rows:
        print("  ".join(f"{str(r.get(c, r.get('error', '-') if c == 'device' else '-')):>14}" for c in cols))


def add_audit(rows: list[dict], args: argparse.Namespace) -> None:
    """Each row's detector through a Davidson audit beside itself alone on the same texts (bench_audit.py)."""
    from bench_audit import one

    from modlens.chunks.sinks import CHUNK_ITEMS

    for r in rows:
        if "error" in r:
            continue
        # the audit's own chunk (as `bench_audit.py` and `modlens audit` use), its chunks in flight as it decides
        ns = argparse.Namespace(rows=args.audit_rows, detector=r["detector"], chunk=CHUNK_ITEMS,
                                device=args.device if r["detector"].startswith("minilm") else None)
        with tempfile.TemporaryDirectory() as work:
            got = one(REPO, 0, ns, Path(work))
        r.update(audit_alone_per_s=round(got["alone_per_s"], 1), audit_per_s=round(got["audit_per_s"], 1),
                 audit_ratio=round(got["ratio"], 3), audit_chunk=got["chunk"])


def benchmark_rows(name: str, n: int | None = None) -> tuple[list[str], list[int]]:
    """(texts, gold 0/1) of a shipped benchmark (its own gold definition), at most n."""
    from modlens.datasets import registry as datasets

    texts, gold = [], []
    for item in datasets.load(name).iter_items():
        value = item.labels.get("toxic")
        if value is None:
            continue
        texts.append(item.text)
        gold.append(int(str(value).lower() in {"1", "true", "toxic", "hateful", "yes"}))
        if n and len(texts) >= n:
            break
    return texts, gold


def noisyhate_pairs(fp32, int8, n: int | None, label: str = "int8") -> None:
    """NoisyHate labels every item toxic, so ROC-AUC is undefined there: instead both models score
    each restored (clean) text and its human perturbation; printed are the score differences over
    all of them and each model's mean drop clean -> perturbed (the effect an audit measures)."""
    import numpy as np

    from modlens.datasets import registry as datasets

    clean, perturbed = [], []
    for item in datasets.load("noisyhate").iter_items():
        if item.variants:
            clean.append(item.text)
            perturbed.append(item.variants[0].text)
            if n and len(clean) >= n:
                break
    texts = clean + perturbed
    a = np.array([s["toxic"] for s in fp32.score(texts)])
    b = np.array([s["toxic"] for s in int8.score(texts)])
    k = len(clean)
    print(f"{'noisyhate':>10} {label:>6} {len(texts):>6} {'n/a':>9} {'n/a':>9} {'n/a':>9} {np.abs(a - b).max():>8.4f} "
          f"{np.abs(a - b).mean():>9.4f}   (all toxic: no AUC; {k} restored + {k} perturbed texts)")
    drop_a, drop_b = a[:k] - a[k:], b[:k] - b[k:]
    print(f"{'':>10} mean drop restored -> perturbed: fp32 {drop_a.mean():.4f}, {label} {drop_b.mean():.4f}; "
          f"texts whose 0.5 decision differs between models: {int(((a > 0.5) != (b > 0.5)).sum())} of {len(texts)} texts")


def compare_int8(args: argparse.Namespace, twins: tuple[str, ...] = ("minilm-toxicity-int8",)) -> None:
    """fp32 minilm-toxicity and its quantized twins side by side, in this process, alternating runs."""
    import numpy as np

    from modlens.detectors import registry
    from modlens.metrics import roc_auc

    fp32 = registry.create("minilm-toxicity")
    # short labels for the columns: int8 (torch), onnx (ONNX Runtime)
    quantized = {("onnx" if "onnx" in name else "int8"): registry.create(name) for name in twins}
    dets = {"fp32": fp32, **quantized}
    texts = load_texts(Path(args.data), args.column, args.n)
    for det in dets.values():
        det.score(texts[:64])  # warm-up: first-call allocations, ONNX Runtime's kernel choice
    best = dict.fromkeys(dets, 0.0)
    load_before = load_now()
    for _ in range(args.repeat):
        for label, det in dets.items():
            t0 = time.perf_counter()
            det.score(texts)
            best[label] = max(best[label], len(texts) / (time.perf_counter() - t0))
    print(f"# throughput, {len(texts)} comments batched (best of {args.repeat}); {os.cpu_count()} cores, "
          f"load {load_before} -> {load_now()}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '-')}")
    print(f"fp32 {best['fp32']:.0f} c/s   " + "   ".join(
        f"{label} {best[label]:.0f} c/s (ratio {best[label] / best['fp32']:.2f}x)" for label in quantized))
    for label, det in quantized.items():
        print(f"# agreement {label}: {fp32.version} vs {det.version}")
    print(f"{'benchmark':>10} {'twin':>6} {'n':>6} {'auc_fp32':>9} {'auc_twin':>9} {'auc_diff':>9} {'max_abs':>8} "
          f"{'mean_abs':>9}")
    for label, det in quantized.items():
        noisyhate_pairs(fp32, det, args.agreement_n, label)
    for name in ("hatecheck", "davidson"):
        bench_texts, gold = benchmark_rows(name, args.agreement_n)
        a = np.array([s["toxic"] for s in fp32.score(bench_texts)])
        auc_a = roc_auc(list(a), gold)
        for label, det in quantized.items():
            b = np.array([s["toxic"] for s in det.score(bench_texts)])
            auc_b = roc_auc(list(b), gold)
            diff = abs(auc_a - auc_b) if auc_a is not None and auc_b is not None else float("nan")
            print(f"{name:>10} {label:>6} {len(gold):>6} {auc_a or float('nan'):>9.4f} {auc_b or float('nan'):>9.4f} "
                  f"{diff:>9.4f} {np.abs(a - b).max():>8.4f} {np.abs(a - b).mean():>9.4f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--detector", action="append", help="registry key (default: minilm-toxicity, profanity-check)")
    p.add_argument("--n", type=int, default=256, help="comments scored in batches")
    p.add_argument("--single", type=int, help="score only the first K comments one call each; the speed-up then "
                   "compares those K, timed batched too (default: all --n, both ways)")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="CSV of comments (default: NoisyHate dev)")
    p.add_argument("--column", default="clean")
    p.add_argument("--repeat", type=int, default=3, help="alternating batched/single runs; best and median reported")
    p.add_argument("--omp-wait", choices=["passive", "active", "both"], default="passive",
                   help="OpenMP idle policy for torch detectors: passive (modlens' default), active (spin), both")
    p.add_argument("--threads", type=int, help="torch threads for minilm-toxicity (default: torch's, = cores)")
    p.add_argument("--hf", choices=["roberta-base-like"], help="benchmark a base-size HF classifier instead")
    p.add_argument("--random-init", action="store_true", help="--hf: random weights, no download (required)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda, for minilm-toxicity and --hf")
    p.add_argument("--batch-size", type=int, help="rows per forward pass (--hf: default 64; minilm-toxicity: its own)")
    p.add_argument("--audit-rows", type=int, default=0, help="also audit this many Davidson rows with each detector "
                   "and print audit rows/s beside the detector alone on the same texts (bench_audit.py)")
    p.add_argument("--peak-tflops", type=float, default=989.0, help="card's dense fp16 peak for the share column")
    p.add_argument("--int8", action="store_true", help="minilm-toxicity vs minilm-toxicity-int8: throughput ratio and "
                   "agreement (ROC-AUC on NoisyHate, HateCheck, Davidson; max and mean abs score difference)")
    p.add_argument("--onnx", action="store_true", help="as --int8, with minilm-toxicity-onnx-int8 (ONNX Runtime, "
                   "the `onnx` extra) beside the torch twin")
    p.add_argument("--agreement-n", type=int, default=0, help="--int8/--onnx: rows per benchmark (default: all)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    p.add_argument("--params", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    if args.onnx:
        return compare_int8(args, ("minilm-toxicity-int8", "minilm-toxicity-onnx-int8"))
    if args.int8:
        return compare_int8(args)
    load_before = load_now()
    rows = []
    if args.hf:
        if not args.random_init:
            p.error("--hf needs --random-init (the bench never downloads weights)")
        with tempfile.TemporaryDirectory() as tmp:
            info = build_random_roberta(Path(tmp))
            options = {"model": tmp, "toxicity_label": "toxic", "device": args.device,
                       "batch_size": args.batch_size or 64, "max_length": 256}
            rows.append(run_child("hf-classifier", options, args, params=info["params"]))
    else:
        for name in args.detector or ["minilm-toxicity", "profanity-check"]:
            options = {}
            if name.startswith("minilm-toxicity"):  # the embedded detector takes the same device option
                options = {"device": args.device, **({"num_threads": args.threads} if args.threads else {}),
                           **({"batch_size": args.batch_size} if args.batch_size else {})}
            waits = ["passive", "active"] if args.omp_wait == "both" else [args.omp_wait]
            for wait in waits if name == "minilm-toxicity" else [None]:
                rows.append(run_child(name, options, args, omp_wait=wait))
    compared = min(args.single or args.n, args.n)
    print(f"# batched_per_s: {args.n} comments batched; batch_speedup: the same {compared} comments"
          f"{f' (the first {compared})' if compared < args.n else ''} batched against one call each, best against "
          f"best of {args.repeat} (single_per_s{', compared_batched_per_s' if compared < args.n else ''}); from "
          f"{args.data}; {os.cpu_count()} CPU cores; load average before {load_before}, after {load_now()}")
    if args.audit_rows:
        add_audit(rows, args)
    print_table(rows)
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
