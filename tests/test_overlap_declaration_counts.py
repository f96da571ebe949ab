"""What `modlens detectors` says a detector was fit on counts fit texts, not hashes: a hash set holds one
hash per distinct key (19,140 for the 19,200 texts minilm-toxicity's head was fit on; 182,860 for
profanity-check's 184,350 rows), so its length is no count of training texts. Shipped heads, pool and
installed detector."""
import pytest

from modlens.detectors.head import Head
from modlens.detectors.minilm import DEFAULT_HEAD, head_training
from modlens.trainingdata import Training, write_hashes


def test_minilm_head_summary_counts_its_fit_texts_and_its_distinct_keys():
    t = head_training(Head.load(DEFAULT_HEAD), DEFAULT_HEAD)
    line = t.summary()
    assert "a sample, fit on 19,200 rows" in line
    assert "19,140 training texts" not in line and "19,140 distinct keys" in line


def test_profanity_check_summary_says_whole_with_its_rows():
    pytest.importorskip("profanity_check")
    from modlens.detectors.profanity import create

    line = create().training.summary()
    assert "whole, fit on 184,350 rows" in line and "182,860 distinct keys" in line
    assert "182,860 training texts" not in line
    # the pool named as the known pool's description says it: not a second bare row count beside the first
    assert "(184,347 rows with a non-blank text)" in line and "(184,347 rows)" not in line


def test_built_hash_set_of_repeated_texts(tmp_path):
    hashes = write_hashes(tmp_path / "h.train-hashes.bin", ["You fool", "you FOOL!", "a kind word", ""])
    line = Training(("mine",), "a test", rows=4, hashes_path=hashes).summary()
    assert line.startswith("mine (a sample, fit on 4 rows; its fit texts are listed by hash: 2 distinct keys)")
