"""The quantized twin of minilm-toxicity: a detector of its own (name, version), loaded offline,
agreeing with fp32 within `minilm_int8.TOLERANCE` on a few texts (bench/bench_detectors.py --int8
measures the agreement on the shipped benchmarks)."""
from __future__ import annotations

import pytest

from modlens.detectors import minilm_int8, registry

from twin_helpers import assert_agrees_with_fp32

TEXTS = ["you are a stupid idiot", "have a nice day", "I hate all of you people", "what a lovely video, thanks!",
         "go away, nobody wants your worthless opinion", "the policy is wrong and I disagree"]


@pytest.fixture(scope="module")
def pair():
    return registry.create("minilm-toxicity", device="cpu"), registry.create("minilm-toxicity-int8")


def test_the_twin_loads_offline_under_its_own_name_and_version(pair, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    offline = registry.create("minilm-toxicity-int8")
    fp32, int8 = pair
    assert offline.name == "minilm-toxicity-int8" != fp32.name
    assert offline.version == int8.version
    if minilm_int8.full_range_supported():  # this CPU: 8-bit activations on oneDNN
        assert offline.version.startswith(fp32.version + "+int8dyn-pc-a8-onednn.torch")
        assert "8-bit activations, oneDNN" in offline.config()["quantization"]
    else:
        assert offline.version.startswith(fp32.version + "+int8dyn-pc.torch")
        assert "7-bit activations, fbgemm" in offline.config()["quantization"]


def test_seven_bit_activations_are_a_different_version_and_score_differently(pair):
    """The earlier choice (7-bit activations, fbgemm), used where the CPU lacks VNNI: other scores, so
    another version; and further from fp32 than the default on a VNNI CPU."""
    fp32, int8 = pair
    a7 = minilm_int8.quantize(registry.create("minilm-toxicity", device="cpu"), full_range=False)
    assert a7.version == fp32.version + "+int8dyn-pc.torch" + a7.version.rsplit(".torch", 1)[1]
    assert "7-bit" in a7.config()["quantization"]
    ref = [s["toxic"] for s in fp32.score(TEXTS)]
    b7 = [s["toxic"] for s in a7.score(TEXTS)]
    assert b7 != ref
    if minilm_int8.full_range_supported():
        assert a7.version != int8.version
        b8 = [s["toxic"] for s in int8.score(TEXTS)]
        assert sum(abs(x - y) for x, y in zip(b8, ref)) < sum(abs(x - y) for x, y in zip(b7, ref))


def test_the_twin_agrees_with_fp32_within_the_stated_tolerance(pair):
    fp32, int8 = pair
    assert_agrees_with_fp32(fp32, int8, TEXTS, minilm_int8.TOLERANCE)
