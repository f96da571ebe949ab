"""minilm-toxicity's first (cold) and second (warm) pass over the same texts, per batch and call size.

    python bench/gpu_cold_warm.py [--device cuda] [--n 6144] [--no-warm]

Davidson tweets (about 33 tokens) and NoisyHate comments (about 11), calls of `call` texts, forward
passes of at most `batch` rows. On a GPU the cold pass pays for every new (rows, width) shape; on the
CPU both passes cost about the same. On CUDA the detector warms its shapes at load and again for each
setting's batch size (`warm_shapes`, the default; the seconds are printed); `--no-warm` leaves them
cold, as before that existed. Prints one JSON line per setting.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modlens.datasets import registry as datasets  # noqa: E402
from modlens.detectors import registry  # noqa: E402

SETTINGS = ((64, 256), (256, 1024), (256, 4096), (512, 8192))  # (rows per forward pass, texts per call)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=6144, help="texts per pass")
    ap.add_argument("--no-warm", action="store_true", help="no shape warm-up at load or per setting")
    args = ap.parse_args()
    import torch

    def sync() -> None:
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    davidson = [it.text for it in datasets.load("davidson").iter_items()][:args.n]
    noisy = [it.text for it in datasets.load("noisyhate").iter_items()]
    noisy = (noisy * (args.n // len(noisy) + 1))[:args.n]
    det = registry.create("minilm-toxicity", device=args.device, warm_shapes=False if args.no_warm else "auto")
    lengths = {name: sum(map(len, det.encoder.tokenizer(texts[:2000], truncation=True, max_length=128)["input_ids"]))
               / min(2000, len(texts)) for name, texts in (("davidson", davidson), ("noisyhate", noisy))}
    print(json.dumps({"device": det.encoder.device, "n": args.n, "pad_rows": det.encoder.pad_rows,
                      "mean_tokens": lengths, "warm_up_s": det.encoder.warmed.seconds}), flush=True)
    for batch, call in SETTINGS:
        det.encoder.batch_size, det.max_batch = batch, call
        if det.encoder.warmed.passes:  # the new batch size's row counts
            print(json.dumps({"batch": batch, "warm_up_s": det.encoder.warm_up().seconds}), flush=True)
        for name, texts in (("davidson", davidson), ("noisyhate", noisy)):
            rates = []
            for _ in range(2):
                sync()
                t0 = time.perf_counter()
                for i in range(0, len(texts), call):
                    det.score(texts[i:i + call])
                sync()
                rates.append(round(len(texts) / (time.perf_counter() - t0)))
            print(json.dumps({"batch": batch, "call": call, "data": name, "texts_per_s_cold_warm": rates}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
