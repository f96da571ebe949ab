"""profanity-check: lexical baseline, alt-profanity-check's TF-IDF + linear SVM (calibrated probability)."""
from __future__ import annotations

from importlib import metadata
from typing import Any, Sequence

from modlens.detectors.base import Detector, check_texts, DetectorUnavailable, LabelScores
from modlens.trainingdata import Training

# alt-profanity-check's package metadata (its README, "alt-profanity-check is trained on a combined
# dataset from 2 sources"): t-davidson/hate-speech-and-offensive-language and the Kaggle Toxic
# Comment Classification Challenge, whole; the package ships no list of rows
TRAINING_SOURCE = ("alt-profanity-check {version} package metadata: trained on a combined dataset of "
                   "t-davidson/hate-speech-and-offensive-language and the Kaggle Toxic Comment Classification "
                   "Challenge")


class ProfanityCheck(Detector):
    name = "profanity-check"
    labels = ("offensive",)
    toxicity_label = "offensive"
    max_batch = 256  # vectorising is cheap; bigger batches amortise the per-call overhead

    def __init__(self, predict_prob, package_version: str):
        self._predict_prob = predict_prob
        self.version = f"alt-profanity-check-{package_version}"
        self.training = Training(("davidson", "jigsaw-toxic"), TRAINING_SOURCE.format(version=package_version),
                                 whole=True)

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
    det = ProfanityCheck(predict_prob, metadata.version("alt-profanity-check"))
    if threshold is not None:
        det.threshold = float(threshold)
    return det
