"""Before/after for the embedded detectors' heads on every shipped benchmark.

    python bench/bench_embedded.py [--davidson-sample 3000] [--cache /tmp/modlens-bench-emb] [--json out.json]
    python bench/bench_embedded.py --tiny      # every 60th row of each file: the test suite's run

Both heads (`minilm-toxicity`'s one-label head and `minilm-toxicity-6`'s six-label head, or any
given with --old/--new) sit on the same frozen MiniLM-L6 encoder, so each text is encoded once
(kept in --cache) and both heads read the same embedding: the same numbers the detectors' `score`
gives. Printed:
- HateCheck: ROC-AUC (hateful vs non-hateful), accuracy at 0.5 on non-hateful and hateful cases,
  accuracy per functionality;
- NoisyHate dev (the NoisyHate paper's Table 4 layout): accuracy at 0.5 clean and perturbed (every text is toxic),
  and Spearman with Perspective's recorded `perspective_clean` / `perspective_perturbed`;
- Davidson, its three classes (a seeded sample unless --davidson-sample 0): share scored >= 0.5 per
  class, ROC-AUC of hate vs neither and offensive vs neither, and rows among each head's fit texts;
- SASS when its files are here ($MODLENS_SASS, else `modlens data fetch sass`'s folder): mean score per category,
  Spearman with the human toxicity and with Perspective's recorded scores (toxicity, and for the new head
  identity, insult, threat from its labels).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modlens.detectors.exclusion import DATA, SASS_DIR  # noqa: E402
from modlens.datasets.hatecheck import read as read_hatecheck  # noqa: E402
from modlens.detectors.head import auc4, hatecheck_report  # noqa: E402
from modlens.detectors.head_multi import MultiHead, embed_cached  # noqa: E402
from modlens.detectors.minilm import DEFAULT_HEAD, Head, SentenceEncoder, head_training  # noqa: E402
from modlens.detectors.minilm6 import DEFAULT_HEAD6, head6_training  # noqa: E402
from modlens.trainingdata import contains  # noqa: E402


def _rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t" if path.suffix == ".tsv" else ","))


def _spearman(a: object, b: object) -> float:
    from scipy.stats import spearmanr
    return round(float(spearmanr(np.asarray(a, float), np.asarray(b, float)).statistic), 3)


def tiny_data(root: Path, every: int) -> Path:
    """Every `every`-th row of each shipped benchmark file (all classes kept), under `root`."""
    for rel in ("hatecheck/test_suite_cases.csv", "noisyhate/dev.csv", "davidson/labeled_data.csv"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        with (DATA / rel).open(newline="", encoding="utf-8") as fi, (root / rel).open("w", newline="", encoding="utf-8") as fo:
            rows = list(csv.reader(fi))
            csv.writer(fo).writerows([rows[0], *rows[1::every]])
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", default=str(DEFAULT_HEAD), help="one-label head file (minilm-toxicity's)")
    p.add_argument("--new", default=str(DEFAULT_HEAD6), help="six-label head file (minilm-toxicity-6's)")
    p.add_argument("--davidson-sample", type=int, default=3000, help="seeded Davidson rows (0: all 24,783)")
    p.add_argument("--sass", default=str(SASS_DIR), help="folder of the released SASS files")
    p.add_argument("--cache", default="/tmp/modlens-bench-emb", help="embedding cache folder ('' for none)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write every figure here too")
    p.add_argument("--tiny", action="store_true", help="every 60th HateCheck case, NoisyHate pair and Davidson row, "
                   "no SASS, no cache (the test suite's run: the figures mean nothing)")
    args = p.parse_args(argv)
    data = DATA
    if args.tiny:
        data, args.sass, args.cache, args.davidson_sample = tiny_data(Path(tempfile.mkdtemp()), 60), "", "", 0

    import torch
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    old, new = Head.load(args.old), MultiHead.load(args.new)
    heads = {"minilm-toxicity (old)": (lambda x: old.predict(x)), "minilm-toxicity-6 (new)": (lambda x: new.predict(x)[:, 0])}
    trainings = {"minilm-toxicity (old)": head_training(old, Path(args.old)),
                 "minilm-toxicity-6 (new)": head6_training(new, Path(args.new))}
    enc = SentenceEncoder(device="cpu", batch_size=32)
    cache = Path(args.cache) if args.cache else None

    def embed(texts: list[str]) -> np.ndarray:
        return embed_cached(enc.encode, texts, cache)

    out: dict[str, dict] = defaultdict(dict)
    # HateCheck
    hc_cases = read_hatecheck(data / "hatecheck").items  # the reader hatecheck_report uses
    hc_x = dict(zip([c.text for c in hc_cases], embed([c.text for c in hc_cases])))
    for name, score in heads.items():
        rep = hatecheck_report(lambda t, f=score: f(np.stack([hc_x[x] for x in t])), data / "hatecheck")
        s = score(np.stack([hc_x[c.text] for c in hc_cases]))
        y = np.asarray([c.labels["label_gold"] == "hateful" for c in hc_cases])
        out[name]["hatecheck"] = {"auc": rep["auc"], "acc_nonhateful": round(float(np.mean(s[~y] < 0.5)), 4),
                                  "acc_hateful": round(float(np.mean(s[y] >= 0.5)), 4),
                                  "by_functionality": {k: v["accuracy"] for k, v in rep["by_functionality"].items()}}
    # NoisyHate dev
    nh = _rows(data / "noisyhate" / "dev.csv")
    xc, xp = embed([r["clean"] for r in nh]), embed([r["perturbed"] for r in nh])
    for name, score in heads.items():
        sc, sp = score(xc), score(xp)
        out[name]["noisyhate"] = {"n": len(nh), "acc_clean": round(float(np.mean(sc >= 0.5)), 3),
                                  "acc_perturbed": round(float(np.mean(sp >= 0.5)), 3),
                                  "spearman_perspective": _spearman(np.r_[sc, sp], [float(r["perspective_clean"]) for r in nh]
                                                                    + [float(r["perspective_perturbed"]) for r in nh])}
    # Davidson
    dav = _rows(data / "davidson" / "labeled_data.csv")
    if args.davidson_sample:
        pick = np.sort(np.random.default_rng(0).choice(len(dav), min(args.davidson_sample, len(dav)), replace=False))
        dav = [dav[i] for i in pick]
    dx = embed([r["tweet"] for r in dav])
    cls = np.asarray([int(r["class"]) for r in dav])  # 0 hate, 1 offensive, 2 neither
    for name, score in heads.items():
        s = score(dx)
        hashes = trainings[name].hashes()
        in_sample = contains(hashes, [r["tweet"] for r in dav]).count(True) if hashes is not None else None
        out[name]["davidson"] = {"n": len(dav), "in_sample_rows": in_sample,
                                 **{f"flagged_{c}": round(float(np.mean(s[cls == k] >= 0.5)), 3)
                                    for k, c in enumerate(("hate", "offensive", "neither"))},
                                 "auc_hate_vs_neither": auc4(s[cls != 1], cls[cls != 1] == 0),
                                 "auc_offensive_vs_neither": auc4(s[cls != 0], cls[cls != 0] == 1)}
    # SASS
    sass = Path(args.sass)
    human, recorded = sass / "norm_human_toxicity_scores.csv", sass / "toxicity_benchmark_scores.csv"
    if human.is_file() and recorded.is_file():
        hr, rr = _rows(human), _rows(recorded)
        hx, rx = embed([r["text"] for r in hr]), embed([r["text"] for r in rr])
        for name, score in heads.items():
            sh, srec = score(hx), score(rx)
            by_cat: dict[str, list[float]] = defaultdict(list)
            for r, v in zip(hr, sh):
                by_cat[r["category"]].append(float(v))
            out[name]["sass"] = {"n": len(hr), "spearman_human": _spearman(sh, [float(r["toxicity"]) for r in hr]),
                                 "spearman_perspective_toxicity": _spearman(srec, [float(r["toxicity_score"]) for r in rr]),
                                 "mean_by_category": {k: round(float(np.mean(v)), 3) for k, v in sorted(by_cat.items())}}
        p6 = new.predict(rx)
        lab = list(new.labels)
        out["minilm-toxicity-6 (new)"]["sass"]["spearman_perspective_labels"] = {
            f"{a}~{b}": _spearman(p6[:, lab.index(a)], [float(r[b]) for r in rr])
            for a, b in (("identity_attack", "identity_score"), ("insult", "insult_score"), ("threat", "threat_score"))}
    _print(out)
    print(f"\n{time.perf_counter() - t0:.0f} s (embeddings cached in {cache})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


def _print(out: dict[str, dict]) -> None:
    names = list(out)
    rows = [("HateCheck ROC-AUC", "hatecheck", "auc"), ("HateCheck acc. non-hateful", "hatecheck", "acc_nonhateful"),
            ("HateCheck acc. hateful", "hatecheck", "acc_hateful"), ("NoisyHate acc@0.5 clean", "noisyhate", "acc_clean"),
            ("NoisyHate acc@0.5 perturbed", "noisyhate", "acc_perturbed"),
            ("NoisyHate Spearman vs Perspective", "noisyhate", "spearman_perspective"),
            ("Davidson flagged: hate", "davidson", "flagged_hate"), ("Davidson flagged: offensive", "davidson", "flagged_offensive"),
            ("Davidson flagged: neither", "davidson", "flagged_neither"), ("Davidson AUC hate vs neither", "davidson", "auc_hate_vs_neither"),
            ("Davidson AUC offensive vs neither", "davidson", "auc_offensive_vs_neither"),
            ("Davidson rows among fit texts", "davidson", "in_sample_rows"),
            ("SASS Spearman vs human", "sass", "spearman_human"), ("SASS Spearman vs Perspective", "sass", "spearman_perspective_toxicity")]
    print("| measure | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for label, section, key in rows:
        print(f"| {label} | " + " | ".join(str(out[n].get(section, {}).get(key, "n/a")) for n in names) + " |")
    funcs = out[names[0]]["hatecheck"]["by_functionality"]
    print("\n| HateCheck functionality (acc@0.5) | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for f in funcs:
        print(f"| {f} | " + " | ".join(str(out[n]["hatecheck"]["by_functionality"][f]) for n in names) + " |")
    if "sass" in out[names[0]]:
        print("\n| SASS category (mean score) | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
        for c in out[names[0]]["sass"]["mean_by_category"]:
            print(f"| {c} | " + " | ".join(str(out[n]["sass"]["mean_by_category"][c]) for n in names) + " |")
        print("\nminilm-toxicity-6 labels vs Perspective's recorded SASS scores (Spearman):",
              out[names[1]]["sass"].get("spearman_perspective_labels"))


if __name__ == "__main__":
    sys.exit(main())
