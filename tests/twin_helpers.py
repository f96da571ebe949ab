"""Checks shared by the tests of minilm-toxicity's quantized twins (torch int8, ONNX Runtime int8)."""
from __future__ import annotations


def assert_agrees_with_fp32(fp32, twin, texts: list[str], tolerance: float) -> None:
    """Within `tolerance` on each text, the same decision at 0.5, and not equal: quantized for real."""
    a = [s["toxic"] for s in fp32.score(texts)]
    b = [s["toxic"] for s in twin.score(texts)]
    assert max(abs(x - y) for x, y in zip(a, b)) <= tolerance
    assert [x > 0.5 for x in a] == [y > 0.5 for y in b]  # the same decision on each
    assert a != b  # quantized for real: not the fp32 model under another name
