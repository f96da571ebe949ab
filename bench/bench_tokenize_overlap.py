"""Tokenization overlapped with the forward passes (`overlap_tokenize`), before and after.

    python bench/bench_tokenize_overlap.py [--n 512] [--rounds 3] [--device cpu]
    python bench/bench_tokenize_overlap.py --tiny          # 64 tweets, one round: the test suite's run

minilm-toxicity alone over Davidson's tweets, in calls of its own size (`max_batch`), three ways,
alternated round by round (a shared machine's noise then falls on all three alike):
  whole       each call tokenized and bucketed by length whole (the default on every device)
  pieces      each call split into pieces of two forward passes, tokenized on the caller's thread (no
              option gives this way: it isolates the split's cost from the thread's)
  overlapped  the same pieces, the next one tokenized on the producer thread while this one's passes
              run (`overlap_tokenize` true)
and the tokenizer alone over the same calls, as a share of the whole way's time. pieces vs overlapped is
the thread alone (the same forward passes: their scores are checked equal to the bit every round);
whole vs pieces is what the split's extra padding costs. Texts/s, best and median of the rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modlens.detectors import registry  # noqa: E402
from modlens.scale.sources import load_dataset  # noqa: E402

WAYS = {"whole": (False, False), "pieces": (True, False), "overlapped": (True, True)}  # (split_calls, overlap)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512, help="Davidson tweets per pass")
    ap.add_argument("--rounds", type=int, default=3, help="passes per way, alternated")
    ap.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    ap.add_argument("--tiny", action="store_true", help="64 tweets, one round")
    args = ap.parse_args()
    if args.tiny:
        args.n, args.rounds = 64, 1
    texts = [it.text for it in load_dataset("davidson", None, "local").items[:args.n]]
    det = registry.create("minilm-toxicity", device=args.device)
    enc, call = det.encoder, det.max_batch
    calls = [texts[i:i + call] for i in range(0, len(texts), call)]
    det.score(calls[0])  # the first call's one-time costs fall on no way
    rates: dict[str, list[float]] = {way: [] for way in WAYS}
    tokenize_s: list[float] = []
    for _ in range(args.rounds):
        scores = {}
        for way, (split, overlap) in WAYS.items():
            enc.split_calls, enc.overlap = split, overlap
            t0 = time.perf_counter()
            scores[way] = [s for part in calls for s in det.score(part)]
            if enc.device.startswith("cuda"):
                import torch
                torch.cuda.synchronize()
            rates[way].append(len(texts) / (time.perf_counter() - t0))
        if scores["pieces"] != scores["overlapped"]:
            raise SystemExit("the producer thread changed a score: pieces and overlapped differ")
        t0 = time.perf_counter()
        for part in calls:
            enc.tokenizer(part, truncation=True, max_length=enc.max_length, return_attention_mask=False,
                          return_token_type_ids=False)
        tokenize_s.append(time.perf_counter() - t0)
    det.close()
    whole_s = len(texts) / statistics.median(rates["whole"])
    print(f"minilm-toxicity on {enc.device}: {len(texts)} Davidson tweets in calls of {call} ({enc.batch_size} rows a "
          f"pass, pieces of {2 * enc.batch_size}), {args.rounds} rounds alternated; tokenizing alone "
          f"{1000 * statistics.median(tokenize_s):.0f} ms a pass = {100 * statistics.median(tokenize_s) / whole_s:.1f}% "
          f"of the whole way's time")
    print("| way | best texts/s | median texts/s | median vs whole |\n|---|---:|---:|---:|")
    base = statistics.median(rates["whole"])
    for way, got in rates.items():
        print(f"| {way} | {max(got):,.1f} | {statistics.median(got):,.1f} | {statistics.median(got) / base:.3f} |")
    print("pieces and overlapped gave the same scores to the bit in every round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
