"""How fast DUO fused cases are generated, per fusion type, and how fast Tesseract reads them.

    python bench/bench_fusion.py [--pairs 5] [--fusion T+E --fusion I ...] [--ocr-pages 20] [--asr-texts 20] [--voice en-us+klatt4:130 ...] [--ocr-grey]

Keyword pairs are extracted from the shipped data (WordNet needed) without the oracle, so every
seed is fused; one run, printed as a table: cases/s and ms per case for each fusion (skipped
seeds count as attempts, not cases), then OCR pages/s with `modlens.media.ocr.read_text` on the
rendered text cards of the "I" fusion (psm 11, as the ocr detector reads them), then speech
recognition: pocketsphinx words/s and word error rate on the seed sentences spoken by espeak-ng
under each voice setting of `VOICES` (how the fusion's default voice was chosen), and scoring:
fused cases/s per content type through the `asr` detector (speech, OCR of pictures and frames,
then MiniLM).
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


# espeak-ng settings tried for the speech fusions: (voice, words per minute)
# (the klatt variants use espeak-ng's Klatt formant synthesiser, which pocketsphinx hears far better)
VOICES = [("en-us", 110), ("en-us", 130), ("en-us", 150), ("en-us", 175), ("en-us+m3", 120), ("en-us+f3", 130),
          ("en-gb", 130), ("en-us+m1", 140), ("en-us+klatt", 110), ("en-us+klatt", 130), ("en-us+klatt", 150),
          ("en-us+klatt2", 130), ("en-us+klatt3", 130), ("en-us+klatt4", 130)]


def words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() or c == "'" else " " for c in text).split()


def word_errors(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions, deletions)."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def bench_asr(seeds: list, voices: list[tuple[str, int]]) -> None:
    """Per voice setting: WER over every seed sentence, WER without the spam seeds (espeak-ng
    reads "555-0142" as number words, which no reference spelling matches), how many of the
    keywords (A and B of each sentence) the transcript holds (`analysis.fusion.contains`, what
    the report's recognition counts), words/s."""
    from modlens.analysis.fusion import contains
    from modlens.fusion.render.speech import synthesize
    from modlens.media.asr import PocketSphinx
    from modlens.media.av import pcm16k

    engine = PocketSphinx()
    plain = [s for s in seeds if s.content_type != "spam"]
    print(f"\nASR (pocketsphinx {engine.version}) on {len(seeds)} seed sentences spoken by espeak-ng "
          f"({len(plain)} not spam)")
    print(f"{'voice':<14}{'wpm':>5}{'WER':>7}{'WER no spam':>13}{'keywords heard':>16}{'audio s':>9}{'words/s':>9}"
          f"{'x realtime':>11}")
    for voice, wpm in voices:
        errors = ref_words = plain_errors = plain_words = heard = 0
        audio_s = secs = 0.0
        for seed in seeds:
            pcm = pcm16k(synthesize(seed.text, voice=voice, speed_wpm=wpm))
            t0 = time.perf_counter()
            got = engine.transcribe(pcm)
            secs += time.perf_counter() - t0
            audio_s += len(pcm) / 32000
            ref = words(seed.text)
            wrong = word_errors(ref, words(got.text))
            errors += wrong
            ref_words += len(ref)
            if seed.content_type != "spam":
                plain_errors += wrong
                plain_words += len(ref)
            heard += contains(got.text, seed.a) + contains(got.text, seed.b)
        print(f"{voice:<14}{wpm:>5}{errors / ref_words:>7.2f}{plain_errors / max(plain_words, 1):>13.2f}"
              f"{heard:>11}/{2 * len(seeds):<4}{audio_s:>9.1f}{ref_words / secs:>9.1f}{audio_s / secs:>11.2f}")


def bench_scoring(seeds: list, ctx: FusionContext, names: list[str]) -> None:
    from modlens.detectors import registry

    det = registry.create("asr")
    print(f"\nscoring with {det.name} ({', '.join(det.modalities)}): fused cases/s per content type")
    print(f"{'content type':<14}{'cases':>7}{'seconds':>9}{'cases/s':>9}")
    for ct in CONTENT_TYPES:
        cases = generate([s for s in seeds if s.content_type == ct], names, ctx).cases
        if not cases:
            continue
        t0 = time.perf_counter()
        det.score_media([c.inputs()["case"] for c in cases])
        secs = time.perf_counter() - t0
        print(f"{ct:<14}{len(cases):>7}{secs:>9.2f}{len(cases) / secs:>9.2f}")
    det.close()


def bench_ocr_grey(seeds: list, ctx: FusionContext) -> None:
    """Keyword hits of Tesseract (psm 11, as the ocr and asr detectors read) on the fused pictures
    with and without greyscale first (`read_text(grey=)`): per fusion, the images whose words
    hold keywords (I+T: the words drawn into the picture; I: the seed's card; T+I: B's text card,
    an emoji picture has no words), and how many of those keywords each setting read."""
    from modlens.analysis.fusion import contains
    from modlens.media.ocr import OcrUnavailable, read_text, tesseract_version

    pages: dict[str, list[tuple[object, list[str]]]] = {}
    for name in ("I+T", "I", "T+I"):
        for c in generate(seeds, [name], ctx).cases:
            written = {"I+T": c.params.get("text", ""), "I": c.seed_text,
                       "T+I": c.params.get("image_b", {}).get("text", "")}[name]
            keys = [k for k in (c.keyword_a, c.keyword_b) if written and contains(written, k)]
            if keys:
                pages.setdefault(name, []).append((c.media[0], keys))
    try:
        read_text(next(iter(pages.values()))[0][0])
    except OcrUnavailable as err:
        print(f"\nOCR: unavailable ({err}; fix: {err.fix})")
        return
    print(f"\nOCR keyword hits (tesseract {tesseract_version()}, psm 11), colour vs greyscale first")
    print(f"{'fusion':<8}{'images':>8}{'keywords':>10}{'colour':>8}{'grey':>8}{'colour s':>10}{'grey s':>8}")
    for name, items in pages.items():
        row = []
        for grey in (False, True):
            t0 = time.perf_counter()
            hits = sum(contains(read_text(blob, grey=grey).text, k) for blob, keys in items for k in keys)
            row += [hits, time.perf_counter() - t0]
        n_keys = sum(len(keys) for _, keys in items)
        print(f"{name:<8}{len(items):>8}{n_keys:>10}{row[0]:>8}{row[2]:>8}{row[1]:>10.1f}{row[3]:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5, help="keyword pairs per content type (default 5)")
    ap.add_argument("--fusion", action="append", help="fusion types (default: all that can run here)")
    ap.add_argument("--ocr-pages", type=int, default=20, help="text cards read back with Tesseract (0: skip)")
    ap.add_argument("--asr-texts", type=int, default=20, help="seed sentences spoken and recognised per voice (0: skip)")
    ap.add_argument("--voice", action="append", metavar="VOICE:WPM",
                    help="espeak-ng settings for the ASR table (default: every one of VOICES)")
    ap.add_argument("--ocr-grey", action="store_true", help="OCR keyword hits on the I+T, I and T+I pictures, "
                    "colour vs greyscale first")
    ap.add_argument("--score-pairs", type=int, default=1, help="pairs per content type scored with asr (0: skip)")
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

    if args.asr_texts > 0:
        voices = [(v.rsplit(":", 1)[0], int(v.rsplit(":", 1)[1])) for v in args.voice] if args.voice else VOICES
        bench_asr(seeds[:args.asr_texts], voices)
    if args.ocr_grey:
        bench_ocr_grey(seeds, ctx)
    if args.score_pairs > 0:
        per_type = [s for ct in CONTENT_TYPES for s in [x for x in seeds if x.content_type == ct][:args.score_pairs]]
        bench_scoring(per_type, ctx, names)
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
