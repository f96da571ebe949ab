"""Where a live comment's variant time goes, and word importance in one forward pass vs leave-one-out.

    python bench/bench_variants.py --profile [--n 128] [--detectors minilm-toxicity profanity-check]
    python bench/bench_variants.py --compare [--n 256]

The live variant path (`Engine.variants_many` + `score_derived`), step by step, with the batchers
taken out so each step's model time is its own: word importance of the whole batch in one call to
the target (`leave_one_out`: the text and each word's removal re-scored; `pooled`: one forward
pass per comment, each word left out of the mean pooling), the generator over each comment, then every variant scored by each detector in one call.
Texts: NoisyHate's shipped dev split (clean and perturbed comments). Detector calls run in this
process on this machine's cores; the load average is printed, since the machine may be shared.

--profile prints the split per step (texts, seconds, ms per comment, share) for both importance
methods, and each method's whole-path comments/s.
--compare prints how `pooled` ranks words against leave-one-out (Spearman, top-1 match, top-3
overlap), and the downstream effect: comments with variants, variants made, and how many of them
fool the target (toxicity >= 0.5 on the source, < 0.5 on the variant) or lower its score.
--widths prints the target's batched comments/s with its fixed padded widths (`pad_widths`) and with
exact widths (every width from 1 to max_length allowed), alternating, best and median of --repeat.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from modlens.config import PerturbationConfig
from modlens.detectors import registry
from modlens.paths import shipped_data
from modlens.perturb.generate import VariantGenerator
from modlens.perturb.importance import importance_from_scores, importance_texts

DEFAULT_DATA = shipped_data() / "noisyhate" / "dev.csv"
METHODS = ("leave_one_out", "pooled", "pooled, kept")


def load_now() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def comments(path: Path, n: int) -> list[str]:
    texts: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for col in ("perturbed", "clean"):
                t = (row.get(col) or "").strip()
                if t and t not in texts:
                    texts.append(t)
    if not texts:
        raise SystemExit(f"{path}: no texts in its clean/perturbed columns")
    return texts[:n]


def toxicities(det: Any, texts: list[str]) -> list[float | None]:
    return [None if s is None else det.toxicity(s) for s in det.score(texts)]


def importance(det: Any, texts: list[str], method: str) -> tuple[list[list[float] | None], int]:
    """(importance per comment, texts the model saw)."""
    if method == "pooled, kept":  # the live pass kept it (`keep_word_importance`): no model call
        before = det.importance_reused
        got = list(det.word_importance_pooled(texts))
        return got, len(texts) - (det.importance_reused - before)
    if method == "pooled":
        return list(det.word_importance_pooled(texts)), len(texts)
    groups = [importance_texts(t) for t in texts]
    flat = [t for g in groups for t in g]
    scores = toxicities(det, flat)
    out, at = [], 0
    for g in groups:
        out.append(importance_from_scores(scores[at:at + len(g)]))
        at += len(g)
    return out, len(flat)


def profile(args: argparse.Namespace, texts: list[str], dets: dict[str, Any], gen: VariantGenerator) -> None:
    target = dets[args.target]
    toxicities(target, texts[:16])  # warm-up: first calls allocate
    n = len(texts)
    print(f"\n{n} NoisyHate comments, one batch; target {args.target}; load average {load_now()}")
    print(f"{'method':>14} {'step':>24} | {'texts':>6} {'s':>7} {'ms/comment':>10} {'share':>6}")
    keeps = hasattr(target, "keep_word_importance")
    if keeps:  # what keeping importance costs the live pass that scores the comments
        live: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(3):
            for keep in (False, True):
                target.keep_word_importance(4 * n if keep else 0)
                t0 = time.perf_counter()
                toxicities(target, texts)
                live[keep].append(time.perf_counter() - t0)
        off, on = min(live[False]), min(live[True])
        print(f"{'live scoring':>14} {'importance not kept':>24} | {n:>6} {off:>7.3f} {1000 * off / n:>10.2f}  (best of 3)")
        print(f"{'live scoring':>14} {'importance kept':>24} | {n:>6} {on:>7.3f} {1000 * on / n:>10.2f}  "
              f"(best of 3; {on / off - 1:+.0%}: the word arithmetic)")
    for method in METHODS:
        if method != "leave_one_out" and not hasattr(target, "word_importance_pooled"):
            continue
        if method == "pooled, kept" and not keeps:
            continue
        if keeps:  # kept from the live pass above only for "pooled, kept"
            target.keep_word_importance(4 * n if method == "pooled, kept" else 0)
            if method == "pooled, kept":
                toxicities(target, texts)
        rows: list[tuple[str, int, float]] = []
        t0 = time.perf_counter()
        imps, seen = importance(target, texts, method)
        rows.append(("word importance", seen, time.perf_counter() - t0))
        t0 = time.perf_counter()
        made = [gen.generate(t, importance=imp) for t, imp in zip(texts, imps)]
        rows.append(("generation", sum(map(len, made)), time.perf_counter() - t0))
        variants = list(dict.fromkeys(v.text for vs in made for v in vs))
        for key, det in dets.items():
            t0 = time.perf_counter()
            toxicities(det, variants)
            rows.append((f"scoring variants: {key}", len(variants), time.perf_counter() - t0))
        total = sum(r[2] for r in rows)
        for step, count, sec in rows:
            print(f"{method:>14} {step:>24} | {count:>6} {sec:>7.3f} {1000 * sec / n:>10.2f} {sec / total:>6.0%}")
        print(f"{method:>14} {'whole path':>24} | {'':>6} {total:>7.3f} {1000 * total / n:>10.2f} "
              f"{'':>6}  -> {n / total:.1f} comments/s")


def top(v: list[float], k: int) -> list[int]:
    return sorted(range(len(v)), key=lambda i: (-v[i], i))[:k]


def compare(args: argparse.Namespace, texts: list[str], dets: dict[str, Any], gen: VariantGenerator) -> None:
    from scipy.stats import spearmanr

    target = dets[args.target]
    loo, _ = importance(target, texts, "leave_one_out")
    sal, _ = importance(target, texts, "pooled")
    rho, top1, top3, cand = [], 0, [], 0
    for a, b in zip(loo, sal):
        if a is None or b is None or len(a) < 2:
            continue
        if len(set(a)) > 1 and len(set(b)) > 1:
            rho.append(float(spearmanr(a, b).statistic))
        top1 += top(a, 1) == top(b, 1)
        k = min(3, len(a))
        top3.append(len(set(top(a, k)) & set(top(b, k))) / k)
        cand += max(a) > gen.threshold
    m = len(top3)
    print(f"\nrank agreement, pooled vs leave-one-out, {m} comments of 2+ words (target {args.target}; "
          f"{cand} have a word over the {gen.threshold:g} threshold by leave-one-out)")
    print(f"  Spearman median {statistics.median(rho):.3f} (mean {statistics.fmean(rho):.3f}); "
          f"top-1 word the same {top1 / m:.1%}; top-3 overlap {statistics.fmean(top3):.1%}")
    base = dict(zip(texts, toxicities(target, texts)))
    print(f"\n{'method':>14} | {'with variants':>13} {'variants':>8} | {'fool (>=.5 -> <.5)':>18} "
          f"{'score lower':>11} {'mean drop':>9} | words over threshold")
    for method, imps in (("leave_one_out", loo), ("pooled", sal)):
        made = [gen.generate(t, importance=imp) for t, imp in zip(texts, imps)]
        vs = [(t, v.text) for t, got in zip(texts, made) for v in got]
        scored = dict(zip([v for _, v in vs], toxicities(target, [v for _, v in vs])))
        fool = sum(1 for t, v in vs if (base[t] or 0) >= 0.5 and (scored[v] or 0) < 0.5)
        toxic_src = sum(1 for t, _ in vs if (base[t] or 0) >= 0.5)
        lower = sum(1 for t, v in vs if (scored[v] or 0) < (base[t] or 0))
        drops = [(base[t] or 0) - (scored[v] or 0) for t, v in vs]
        over = sum(sum(x > gen.threshold for x in imp) for imp in imps if imp)
        print(f"{method:>14} | {sum(1 for g in made if g):>13} {len(vs):>8} | {fool:>8} of {toxic_src:<7} "
              f"{lower:>11} {statistics.fmean(drops) if drops else 0:>9.4f} | {over}")


def widths(args: argparse.Namespace, texts: list[str], dets: dict[str, Any]) -> None:
    enc = dets[args.target].encoder
    fixed, exact = enc.widths, tuple(range(1, enc.max_length + 1))
    toxicities(dets[args.target], texts[:64])  # warm-up
    got: dict[str, list[float]] = {"fixed": [], "exact": []}
    for _ in range(args.repeat):
        for name, ws in (("fixed", fixed), ("exact", exact)):
            enc.widths = ws
            t0 = time.perf_counter()
            toxicities(dets[args.target], texts)
            got[name].append(len(texts) / (time.perf_counter() - t0))
    enc.widths = fixed
    print(f"\n{len(texts)} comments in one call, {args.target}, alternating; load average {load_now()}")
    for name, v in got.items():
        print(f"  {name:>5} widths: best {max(v):.0f} c/s, median {statistics.median(v):.0f} c/s")
    print(f"  fixed / exact (median): {statistics.median(got['fixed']) / statistics.median(got['exact']):.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--widths", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n", type=int, default=128, help="NoisyHate comments")
    ap.add_argument("--target", default="minilm-toxicity")
    ap.add_argument("--detectors", nargs="+", default=["minilm-toxicity"], help="detectors that score the variants")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()
    if not (args.profile or args.compare or args.widths):
        ap.error("say --profile, --compare and/or --widths")
    if args.n < 1:
        ap.error("--n must be >= 1")
    keys = list(dict.fromkeys([args.target, *args.detectors]))
    dets = {k: registry.create(k) for k in keys}
    p = PerturbationConfig()
    gen = VariantGenerator(p.strategies, budget=p.budget, seed=p.seed, importance_threshold=p.importance_threshold,
                           strategy_options=p.strategy_options)
    texts = comments(args.data, args.n)
    print(f"{os.cpu_count()} cores, load average {load_now()}; default strategies, budget {p.budget}, "
          f"threshold {p.importance_threshold:g}")
    if args.profile:
        profile(args, texts, {k: dets[k] for k in args.detectors}, gen)
    if args.compare:
        compare(args, texts, dets, gen)
    if args.widths:
        widths(args, texts, dets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
