"""jigsaw-bilstm's version is what decides its scores: the package's weights, tokenizer and the
module that rebuilds the architecture, by their bytes. It read `toxic-comment-classifier-<package
version>`, so a reinstalled or edited package scoring otherwise kept the version. Tested on package
folders built here (TensorFlow, which loading the detector needs, is optional)."""
from __future__ import annotations

import shutil

from modlens.detectors.keras_jigsaw import package_files_version


def _package(root, weights: bytes = b"weights", tokenizer: bytes = b"tokenizer", code: str = "LSTM(50)"):
    (root / "model").mkdir(parents=True)
    (root / "model" / "model.weights.h5").write_bytes(weights)
    (root / "model" / "tokenizer.pickle").write_bytes(tokenizer)
    (root / "model.py").write_text(code, encoding="utf-8")
    (root / "utils.py").write_text("# helpers the detector does not use", encoding="utf-8")
    return root


def test_the_version_follows_the_bytes_that_decide_the_scores(tmp_path):
    base = package_files_version(_package(tmp_path / "a" / "toxic_classifier"))
    assert base.startswith("toxic-comment-classifier.")
    assert package_files_version(_package(tmp_path / "w" / "toxic_classifier", weights=b"weightz")) != base
    assert package_files_version(_package(tmp_path / "t" / "toxic_classifier", tokenizer=b"tokenizer2")) != base
    assert package_files_version(_package(tmp_path / "c" / "toxic_classifier", code="LSTM(64)")) != base


def test_the_version_does_not_follow_where_the_package_lies_or_what_it_does_not_use(tmp_path):
    first = _package(tmp_path / "site-a" / "toxic_classifier")
    base = package_files_version(first)
    moved = tmp_path / "site-b" / "elsewhere"
    shutil.copytree(first, moved)
    (moved / "utils.py").write_text("# edited", encoding="utf-8")
    assert package_files_version(moved) == base
