"""Attack recipes on this CPU: attacks per minute, success rate and queries per success per
recipe, and the same attack with batched detector calls vs one call per query.

    python bench/bench_attacks.py [--data DIR] [--n 20] [--target profanity-check|minilm-toxicity]
                                  [--recipes a2t pwws ...]
    python bench/bench_attacks.py --versus-textattack [--n 100] [--k 1]   # docs/PERTURB.md's TextAttack table

`--versus-textattack` prints, for the recipes both tools share, modlens's success rate and texts
scored per attack (`queries`: every distinct text sent to the target, the seed included) on the
first N NoisyHate dev texts each target calls toxic, untargeted toxic -> non-toxic at 0.5, beside
TextAttack 0.3.11's figures from an earlier measurement on the same 100 texts and detector objects
(quoted here since 2026-11-25; TextAttack is not installed here: its numbers are quoted, not re-run). `--n 20` keeps it to a
minute or two on a laptop CPU; the quoted figures are for N = 100.

Seeds: the first N NoisyHate dev comments the target calls toxic (a seed it already calls
benign would be skipped, costing one query, and flatter the rate). Timings include the
constraints (WordNet, the sentence encoder) but not model loading (one warm-up attack first).
Batched vs one call per query: the same recipe and seeds with `batch=False`, so every text is
its own detector call; the adversarial texts should be identical, only the time differing: the bench
compares each attack's text, status and queries and says whether they were.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

from modlens.detectors import registry as detectors
from modlens.paths import shipped_data
from modlens.perturb import recipes


def seeds(data: str, target, n: int) -> list[str]:
    with open(Path(data) / "noisyhate" / "dev.csv", encoding="utf-8", newline="") as fh:
        texts = [row["clean"] for row in csv.DictReader(fh)]
    out = []
    for i in range(0, len(texts), 64):
        batch = texts[i:i + 64]
        for t, s in zip(batch, target.score(batch)):
            if target.toxicity(s) is not None and target.toxicity(s) >= target.threshold:
                out.append(t)
        if len(out) >= n:
            break
    return out[:n]


def run(recipe: str, target, texts: list[str], batch: bool = True) -> dict:
    attack = recipes.create(recipe).build(target, batch=batch)
    attack.run(texts[0])  # warm-up: load WordNet, vectors, the encoder
    t0 = time.perf_counter()
    variants = [attack.run(t) for t in texts]
    dt = time.perf_counter() - t0
    results = [v.attack for v in variants]
    ok = [a for a in results if a["status"] == "success"]
    return {"seconds": dt, "per_minute": 60 * len(texts) / dt, "success": len(ok) / len(texts),
            # what each attack ended with: batched and one call per query must agree for their times to compare
            "outcomes": [(v.text, a["status"], a["queries"]) for v, a in zip(variants, results)],
            "queries_per_success": statistics.mean(a["queries"] for a in ok) if ok else float("nan"),
            "calls": statistics.mean(a["calls"] for a in results),
            "share": statistics.mean(a["words_changed_share"] for a in ok) if ok else float("nan")}


# (recipe, target, recipe overrides, label) -> TextAttack 0.3.11 (success, texts scored per attack), quoted
CHAR_BUGS = [("char:space_insert", {}), ("char:char_delete", {}), ("char:char_swap", {}), ("char:homoglyph", {})]
PEER = [
    ("deepwordbug", "minilm-toxicity", {}, "DeepWordBug x minilm-toxicity", (0.87, 13.5)),
    ("deepwordbug", "profanity-check", {}, "DeepWordBug x profanity-check", (1.00, 9.1)),
    ("textbugger", "minilm-toxicity", {"transformations": CHAR_BUGS}, "TextBugger (char bugs) x minilm", (0.87, 21.7)),
    ("pwws", "minilm-toxicity", {}, "PWWS x minilm-toxicity", (0.93, 59.0)),
]


def versus_textattack(data: str, n: int, ks: list[int] | None = None) -> None:
    """The shared recipes beside the peer's figures; `ks`: the character recipes (DeepWordBug,
    TextBugger) again with each k (attempts per transformation per word) instead of their own."""
    targets: dict = {}
    print(f"{'recipe x target':38} {'modlens success':>15} {'texts/attack':>12}   {'TextAttack success':>18} "
          f"{'texts/attack':>12}   goal met")
    rows = [(recipe, key, overrides, label, peer, None) for recipe, key, overrides, label, peer in PEER]
    rows += [(recipe, key, {**overrides, "k": k}, f"{label} k={k}", peer, k)
             for k in ks or [] for recipe, key, overrides, label, peer in PEER if recipe in ("deepwordbug", "textbugger")]
    for recipe, target_key, overrides, label, (peer_ok, peer_q), _k in rows:
        if target_key not in targets:
            target = detectors.create(target_key)
            targets[target_key] = (target, seeds(data, target, n))
            print(f"  target {target_key} = {target.name}@{target.version}: {len(targets[target_key][1])} toxic seeds")
        target, texts = targets[target_key]
        attack = recipes.create(recipe, **overrides).build(target)
        results = [attack.run(t).attack for t in texts]
        ok = sum(a["status"] == "success" for a in results) / len(results)
        q = statistics.mean(a["queries"] for a in results)
        met = "yes" if ok >= peer_ok and q <= peer_q else "no"
        print(f"{label:38} {ok:14.0%} {q:12.1f}   {peer_ok:17.0%} {peer_q:12.1f}   {met}  (n={len(texts)}, "
              f"k={attack.k})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(shipped_data()), help="folder with noisyhate/dev.csv")
    ap.add_argument("--n", type=int, default=20, help="seeds per recipe")
    ap.add_argument("--target", default="profanity-check")
    ap.add_argument("--recipes", nargs="+", default=recipes.available())
    ap.add_argument("--unbatched", nargs="*", default=["toxictrap_combined_greedy"],
                    help="recipes also run with one detector call per query")
    ap.add_argument("--versus-textattack", action="store_true",
                    help="the shared recipes beside TextAttack 0.3.11's quoted figures; --n texts per target")
    ap.add_argument("--k", type=int, nargs="+", metavar="K",
                    help="with --versus-textattack: also the character recipes with each K attempts per "
                         "transformation per word")
    args = ap.parse_args()
    if args.versus_textattack:
        versus_textattack(args.data, args.n, args.k)
        return
    target = detectors.create(args.target)
    texts = seeds(args.data, target, args.n)
    print(f"target {target.name} {target.version}; {len(texts)} toxic seeds")
    print(f"{'recipe':28} {'attacks/min':>11} {'success':>8} {'queries/success':>16} {'calls/attack':>13} {'words changed':>14}")
    for key in args.recipes:
        r = run(key, target, texts)
        print(f"{key:28} {r['per_minute']:11.1f} {r['success']:8.2f} {r['queries_per_success']:16.1f} "
              f"{r['calls']:13.1f} {r['share']:14.2f}")
    for key in args.unbatched:
        b, u = run(key, target, texts), run(key, target, texts, batch=False)
        differ = sum(x != y for x, y in zip(b["outcomes"], u["outcomes"]))
        print(f"{key}: batched {b['seconds']:.2f}s ({b['calls']:.1f} calls/attack) vs one call per query "
              f"{u['seconds']:.2f}s: x{u['seconds'] / b['seconds']:.2f}; "
              + (f"same adversarial texts, statuses and queries in all {len(texts)} attacks" if not differ else
                 f"NOT the same work: {differ} of {len(texts)} attacks ended with another text, status or query count"))


if __name__ == "__main__":
    main()
