"""Normalizer benchmark: accuracy on NoisyHate dev (paper's rule) overall and per type for
modlens, pyspellchecker and the recorded Google / Bing results; HateCheck spell_* cases;
tokens per second of modlens vs pyspellchecker in the same run. Prints one markdown table,
then the live-stream figure: the first N Davidson tweets, cold cache, tokens/s and per-comment
latency (p50/p99/max), best of `--repeat` runs with a fresh normalizer each time.

    python bench/bench_normalize.py [--data DIR] [--steps a,b,c] [--spell-sample 150]
    python bench/bench_normalize.py --stream-only --tweets 2000   # just the tweet stream
"""
from __future__ import annotations

import argparse
import csv
import random
import statistics
import time
from pathlib import Path

from baselines import PySpellBaseline  # bench/baselines.py, beside this script
from modlens.paths import shipped_data
from modlens.datasets.noisyhate import read_pairs as load_noisyhate
from normalize_eval import (TYPES, accuracy_by_type, hatecheck_accuracy, load_hatecheck_spell,  # bench/normalize_eval.py
                                        restored, restored_aligned)
from modlens.normalize.pipeline import build_normalizer

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=shipped_data(), help="folder with noisyhate/, hatecheck/, davidson/ (default: the shipped copies)")
    ap.add_argument("--steps", help="comma-separated normalizer steps (default pipeline if omitted)")
    ap.add_argument("--spell-sample", type=int, default=150,
                    help="sentences pyspellchecker is timed on (it is slow); 0 = all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tweets", type=int, default=2000, help="Davidson tweets in the stream figure")
    ap.add_argument("--repeat", type=int, default=3, help="cold-cache stream runs; the best is shown")
    ap.add_argument("--stream-only", action="store_true", help="only the Davidson tweet stream")
    ap.add_argument("--tiny", action="store_true", help="40 NoisyHate pairs, 20 HateCheck cases, 20 tweets, one run "
                                                      "(the test suite's run: the figures mean nothing)")
    args = ap.parse_args()
    if args.tiny:
        args.spell_sample, args.tweets, args.repeat = 5, 20, 1
    steps = args.steps.split(",") if args.steps else None
    if args.stream_only:
        print_stream(args.data, args.tweets, args.repeat, steps)
        return 0

    pairs = load_noisyhate(args.data / "noisyhate" / "dev.csv")
    cases = load_hatecheck_spell(args.data / "hatecheck" / "test_suite_cases.csv")
    if args.tiny:
        pairs, cases = pairs[:40], cases[:20]
    normalizer = build_normalizer(steps)
    spell = PySpellBaseline(distance=2)

    # modlens on whole sentences, cold cache: this is the tokens/s a live stream sees at first
    n_tokens = sum(len(p.perturbed.split()) for p in pairs)
    t0 = time.perf_counter()
    results = [normalizer.normalize(p.perturbed) for p in pairs]
    modlens_secs = time.perf_counter() - t0
    # split/merged tokens shift later positions: follow the edits back (see normalize_eval.py)
    modlens_acc = accuracy_by_type([restored_aligned(p.perturbed, r, p) for r, p in zip(results, pairs)], pairs)
    literal_acc = accuracy_by_type([restored(r.text, p) for r, p in zip(results, pairs)], pairs)
    recounted = sum(len(r.text.split()) != len(p.perturbed.split()) for r, p in zip(results, pairs))

    # pyspellchecker as the paper ran it: the perturbed word alone, lowercased
    spell_acc = accuracy_by_type([spell.correct_word(p.perturbed_word) == p.clean_word.lower() for p in pairs], pairs)
    google_acc = accuracy_by_type([p.google for p in pairs], pairs)
    bing_acc = accuracy_by_type([p.bing for p in pairs], pairs)

    # pyspellchecker speed on whole sentences (every token), on a sample
    sample = pairs if args.spell_sample <= 0 else random.Random(args.seed).sample(pairs, min(args.spell_sample, len(pairs)))
    fresh = PySpellBaseline(distance=2)
    s_tokens = sum(len(p.perturbed.split()) for p in sample)
    t0 = time.perf_counter()
    for p in sample:
        fresh.normalize_text(p.perturbed)
    spell_secs = time.perf_counter() - t0

    hc_modlens = hatecheck_accuracy(lambda t: normalizer.normalize(t).text, cases)
    hc_none = hatecheck_accuracy(lambda t: t, cases)
    hc_spell = hatecheck_accuracy(spell.normalize_text, cases)

    def row(label, key, n=None):
        cells = [modlens_acc, spell_acc, google_acc, bing_acc]
        vals = " | ".join(f"{c[key]:.3f}" if key in c else "–" for c in cells)
        return f"| {label}{f' (n={n})' if n else ''} | {vals} |"

    print(f"normalizer {normalizer.name} {normalizer.version}, steps: {','.join(normalizer.step_names)}\n")
    print("| NoisyHate dev (token at position restored) | modlens | pyspellchecker (d=2, word alone) | Google | Bing |")
    print("|---|---|---|---|---|")
    print(row("overall", "overall", len(pairs)))
    for t in TYPES:
        print(row(t, t, sum(t in p.types for p in pairs)))
    print(f"| overall, output token at `position` without alignment ({recounted} sentences changed "
          f"token count) | {literal_acc['overall']:.3f} | – | – | – |")
    print(f"| speed, tokens/s (whole sentences) | {n_tokens / modlens_secs:,.0f} | "
          f"{s_tokens / spell_secs:,.0f} (sample of {len(sample)} sentences) | – | – |")
    print(f"| HateCheck spell_* restored (n={len(cases)}; no normalization: {hc_none['overall']:.3f}) | "
          f"{hc_modlens['overall']:.3f} | {hc_spell['overall']:.3f} (every token) | – | – |")
    for f in sorted(k for k in hc_modlens if k != "overall"):
        print(f"| HateCheck {f} (none: {hc_none[f]:.3f}) | {hc_modlens[f]:.3f} | {hc_spell[f]:.3f} | – | – |")
    print()
    print_stream(args.data, args.tweets, args.repeat, steps)
    return 0


def load_tweets(path: Path, limit: int) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [row["tweet"] for _, row in zip(range(limit), csv.DictReader(f))]


def time_stream(texts: list[str], steps: list[str] | None) -> tuple[float, list[float]]:
    """Seconds for the whole stream and per comment, with a fresh (cold) token cache; the
    lexicon itself stays loaded, as in a running daemon."""
    normalizer = build_normalizer(steps)
    per_comment = []
    for text in texts:
        t0 = time.perf_counter()
        normalizer.normalize(text)
        per_comment.append(time.perf_counter() - t0)
    return sum(per_comment), per_comment


def print_stream(data: Path, limit: int, repeat: int, steps: list[str] | None) -> None:
    tweets = load_tweets(data / "davidson" / "labeled_data.csv", limit)
    n_tokens = sum(len(t.split()) for t in tweets)
    runs = [time_stream(tweets, steps) for _ in range(max(1, repeat))]
    first_secs = runs[0][0]  # also builds the lexicon's lazy indexes, as a fresh daemon does
    secs, per_comment = min(runs, key=lambda r: r[0])
    ms = sorted(x * 1000 for x in per_comment)
    p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
    print(f"| Davidson tweet stream, cold cache (first {len(tweets)} tweets, {n_tokens:,} tokens, "
          f"best of {max(1, repeat)}) | value |")
    print("|---|---|")
    print(f"| tokens/s | {n_tokens / secs:,.0f} |")
    print(f"| tokens/s, first run in this process | {n_tokens / first_secs:,.0f} |")
    print(f"| comments/s | {len(tweets) / secs:,.0f} |")
    print(f"| per-comment latency p50 / p99 / max, ms | {statistics.median(ms):.2f} / {p99:.2f} / {ms[-1]:.1f} |")


if __name__ == "__main__":
    raise SystemExit(main())
