"""Normalizer benchmark: accuracy on NoisyHate dev (paper's rule) overall and per type for
modlens, pyspellchecker and the recorded Google / Bing results; HateCheck spell_* cases;
tokens per second of modlens vs pyspellchecker in the same run. Prints one markdown table.

    python bench/bench_normalize.py [--data ../shared/data] [--steps a,b,c] [--spell-sample 150]
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from modlens.normalize.baselines import PySpellBaseline
from modlens.normalize.evaluate import (TYPES, accuracy_by_type, hatecheck_accuracy, load_hatecheck_spell,
                                        load_noisyhate, restored, restored_aligned)
from modlens.normalize.pipeline import build_normalizer

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--steps", help="comma-separated normalizer steps (default pipeline if omitted)")
    ap.add_argument("--spell-sample", type=int, default=150,
                    help="sentences pyspellchecker is timed on (it is slow); 0 = all")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    pairs = load_noisyhate(args.data / "noisyhate" / "dev.csv")
    cases = load_hatecheck_spell(args.data / "hatecheck" / "test_suite_cases.csv")
    normalizer = build_normalizer(args.steps.split(",") if args.steps else None)
    spell = PySpellBaseline(distance=2)

    # modlens on whole sentences, cold cache: this is the tokens/s a live stream sees at first
    n_tokens = sum(len(p.perturbed.split()) for p in pairs)
    t0 = time.perf_counter()
    results = [normalizer.normalize(p.perturbed) for p in pairs]
    modlens_secs = time.perf_counter() - t0
    # split/merged tokens shift later positions: follow the edits back (see evaluate.py)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
