"""The quantized twin of minilm-toxicity: a detector of its own (name, version), loaded offline,
agreeing with fp32 within `minilm_int8.TOLERANCE` on a few texts (bench/bench_detectors.py --int8
measures the agreement on the shipped benchmarks)."""
from __future__ import annotations

import pytest

from modlens.detectors import minilm_int8, registry

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
    assert offline.version == int8.version and offline.version.startswith(fp32.version + "+int8dyn-pc.torch")
    assert "int8" in offline.config()["quantization"]


def test_the_twin_agrees_with_fp32_within_the_stated_tolerance(pair):
    fp32, int8 = pair
    a = [s["toxic"] for s in fp32.score(TEXTS)]
    b = [s["toxic"] for s in int8.score(TEXTS)]
    assert max(abs(x - y) for x, y in zip(a, b)) <= minilm_int8.TOLERANCE
    assert [x > 0.5 for x in a] == [y > 0.5 for y in b]  # the same decision on each
    assert a != b  # quantized for real: not the fp32 model under another name
