"""How fast DUO fused cases are generated, per fusion type, and how fast Tesseract reads them.

    python bench/bench_fusion.py [--pairs 5] [--fusion T+E --fusion I ...] [--ocr-pages 20]

Keyword pairs are extracted from the shipped data (WordNet needed) without the oracle, so every
seed is fused; one run, printed as a table: cases/s and ms per case for each fusion (skipped
seeds count as attempts, not cases), then OCR pages/s with `modlens.media.ocr.read_text` on the
rendered text cards of the "I" fusion (psm 11, as the ocr detector reads them).
"""
from __future__ import annotations

import argparse
import random
import time

from modlens.fusion import fusions
from modlens.fusion.emoji import load_emoji_table
from modlens.fusion.fusions.base import FusionContext, card, png
from modlens.fusion.generate import generate, runnable
from modlens.fusion.keywords import Lexica, extract_pairs
from modlens.fusion.seeds import make_seeds
from modlens.fusion.templates import load_templates
from modlens.fusion.case import CONTENT_TYPES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5, help="keyword pairs per content type (default 5)")
    ap.add_argument("--fusion", action="append", help="fusion types (default: all that can run here)")
    ap.add_argument("--ocr-pages", type=int, default=20, help="text cards read back with Tesseract (0: skip)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    lexica = Lexica()
    pairs = [p for ct in CONTENT_TYPES for p in extract_pairs(ct, args.pairs, random.Random(f"0|pairs|{ct}"), lexica)]
    seeds = make_seeds(pairs, load_templates(), 0)
    print(f"{len(seeds)} seeds from {len(pairs)} keyword pairs in {time.perf_counter() - t0:.1f}s "
          "(WordNet load, TF-IDF over Davidson + HateCheck)")
    ctx = FusionContext(load_emoji_table(), run_seed=0)
    names, missing = runnable(args.fusion or fusions.available())
    for name, why in missing.items():
        print(f"{name}: unavailable ({why['reason']}; fix: {why['fix']})")
    generate(seeds[:1], names, ctx)  # fonts, emoji glyphs and program versions load outside the timing

    print(f"\n{'fusion':<8}{'cases':>7}{'skipped':>9}{'seconds':>9}{'cases/s':>9}{'ms/case':>9}")
    for name in names:
        start = time.perf_counter()
        result = generate(seeds, [name], ctx)
        secs = time.perf_counter() - start
        n = len(result.cases)
        rate = n / secs if secs else float("nan")
        per = 1000 * secs / n if n else float("nan")
        print(f"{name:<8}{n:>7}{len(result.skipped):>9}{secs:>9.3f}{rate:>9.1f}{per:>9.2f}")

    if args.ocr_pages > 0:
        from modlens.media.ocr import OcrUnavailable, read_text, tesseract_version
        pages = [png(card(s.text, ctx)) for s in (seeds * args.ocr_pages)[:args.ocr_pages]]
        try:
            read_text(pages[0])
        except OcrUnavailable as err:
            print(f"\nOCR: unavailable ({err}; fix: {err.fix})")
            return
        t0 = time.perf_counter()
        hits = sum(1 for page, seed in zip(pages, seeds * args.ocr_pages)
                   if read_text(page).text.split() == seed.text.split())
        secs = time.perf_counter() - t0
        print(f"\nOCR (tesseract {tesseract_version()}, psm 11): {len(pages)} 480x360 cards in {secs:.2f}s = "
              f"{len(pages) / secs:.2f} pages/s; {hits}/{len(pages)} read back word for word")


if __name__ == "__main__":
    main()
