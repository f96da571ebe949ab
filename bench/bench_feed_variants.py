"""A feed with variants on against the same feed with them off: what live variants cost the pages.

`modlens feed FILE` as a participant's extension runs it: one connection, pages of 20, each page
waiting for its scores and, with variants on, for every comment's `variants` answer (made live, or
deferred at once with its reason) before the next page goes. The real `modlens serve` with the
study's detector (`minilm-toxicity` by default), normalizer off, the default strategies, live_rate
"auto". One daemon, a warm-up page first, then the feed with variants off, then on (other keys, so
nothing is reused from the off run). Prints each feed's wall seconds, the on/off ratio, and how
many comments got variants live and how many were deferred (with the daemon's reasons).

    python bench/bench_feed_variants.py [--comments 150] [--detector minilm-toxicity] [--cold-variants] [--tiny]

Daemon and client share this machine's CPU; the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_soak import DEFAULT_DATA, base_texts, daemon_status, start_daemon, stop_daemon, token_of, write_study  # noqa: E402

from modlens.protocol.client import make_pages, send_pages  # noqa: E402


def load_now() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


async def feed(url: str, token: str, texts: list[str], tag: str, variants: bool) -> tuple[float, int, int]:
    """(wall seconds, comments with variants made live, comments deferred)."""
    pages = make_pages([(f"{tag}-{i}", t) for i, t in enumerate(texts)], 20, "feed", f"https://bench/{tag}", tag)
    t0 = time.perf_counter()
    stats = await send_pages(url, token, pages, variants=variants, rater=f"bench-{tag}")
    wall = time.perf_counter() - t0
    answers = [c.variants for p in stats.pages for c in p.items if c.variants is not None]
    deferred = sum(1 for v in answers if v.error and v.error.startswith("deferred:"))
    live = sum(1 for v in answers if v.items)
    return wall, live, deferred


async def main_async(args: argparse.Namespace) -> None:
    texts = list(dict.fromkeys(base_texts(args.data)))
    if len(texts) < 2 * args.comments + 20:
        raise SystemExit(f"{args.data}: {len(texts)} distinct texts, {2 * args.comments + 20} needed")
    home = Path(tempfile.mkdtemp(prefix="modlens-feed-"))
    study = home / "study.toml"
    write_study(study, "auto", 256, True, detector=args.detector)
    print(f"load before {load_now()}; {args.comments} comments, detector {args.detector}, live_rate auto", flush=True)
    proc, info = start_daemon(home, study)
    try:
        token = token_of(home)
        # first model calls and the generator's loading; --cold-variants: the warm-up asks for no variants, so
        # the on feed's first page meets a variant budget that has measured nothing yet
        await feed(info["url"], token, texts[:20], "warm", not args.cold_variants)
        off, _, _ = await feed(info["url"], token, texts[20:20 + args.comments], "off", False)
        on, live, deferred = await feed(info["url"], token, texts[20 + args.comments:20 + 2 * args.comments], "on", True)
        status = await asyncio.to_thread(daemon_status, token, info)
    finally:
        stop_daemon(proc)
    reasons = status.get("queue", {}).get("variants", {}).get("deferred_by_reason", {})
    print("\n| feed | wall s | comments/s | variants live | deferred |\n|---|---:|---:|---:|---:|")
    print(f"| variants off | {off:.1f} | {args.comments / off:.1f} | - | - |")
    print(f"| variants on | {on:.1f} | {args.comments / on:.1f} | {live} | {deferred} |")
    print(f"\non/off: {on / off:.2f}x (goal <= 2.5x); deferred by reason (whole run, warm-up included): {reasons}")
    print(f"load after {load_now()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--comments", type=int, default=150)
    ap.add_argument("--detector", default="minilm-toxicity")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cold-variants", action="store_true", help="warm up the model only, not the variant worker")
    ap.add_argument("--tiny", action="store_true", help="20 comments with profanity-check (for the test suite's run)")
    args = ap.parse_args()
    if args.tiny:
        args.comments, args.detector = 20, "profanity-check"
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
