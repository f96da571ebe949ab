"""minilm-toxicity-int8: the embedded MiniLM detector with its encoder's Linear layers quantized to int8 (torch dynamic quantization), for corpus audits on CPU.

A detector of its own, never a silent replacement: its own name and version (the fp32 version
plus `+int8dyn-…`, naming what is quantized and how), its scores recorded beside minilm-toxicity's.
Same tokenizer, pooling and head; only the encoder's matrix products run in int8 (weights
quantized once at load, activations per call). bench/bench_detectors.py prints its throughput and
agreement with fp32 on the shipped benchmarks; tests/test_detectors_int8.py checks the agreement on
a few texts.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeVar

from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import MiniLMToxicity, create as create_fp32

# the largest |int8 - fp32| toxicity difference the test accepts on its few texts; over whole benchmarks
# single texts differ by up to ~0.27 (mean 0.01-0.02) with 8-bit activations, ~0.45 with 7-bit: docs/PERFORMANCE.md
TOLERANCE = 0.25


def full_range_supported() -> bool:
    """8-bit activations need int32 accumulation of the u8*s8 products (AVX512-VNNI); without it the
    int8 kernels add pairs in int16, which 8-bit activations can overflow, so torch uses 7 bits."""
    import torch

    probe = getattr(torch.cpu, "_is_vnni_supported", None)  # private in torch 2.x: absent means unknown, so 7-bit
    return bool(probe and probe())


@lru_cache(maxsize=1)
def _full_range_linear() -> type:
    import torch
    from torch.ao.nn.quantized.dynamic import Linear

    class FullRangeDynamicLinear(Linear):
        """torch's dynamic int8 Linear with 8-bit activations: its own forward hard-codes
        reduce_range=True (7-bit), which doubled the disagreement with fp32 (docs/PERFORMANCE.md)."""

        def forward(self, x: Any) -> Any:
            return torch.ops.quantized.linear_dynamic(x, self._packed_params._packed_params,
                                                      reduce_range=False).to(x.dtype)

        def _get_name(self) -> str:
            return "FullRangeDynamicQuantizedLinear"

    return FullRangeDynamicLinear


class MiniLMToxicityInt8(MiniLMToxicity):
    name = "minilm-toxicity-int8"
    quantization = ""

    def config(self) -> dict[str, Any]:
        return {**super().config(), "quantization": self.quantization}


T = TypeVar("T", bound=MiniLMToxicity)


def as_twin(det: MiniLMToxicity, cls: type[T], quantization: str, version_suffix: str) -> T:
    """`det`, its encoder already swapped, made the twin `cls`: the same object, so nothing is loaded
    twice, under the twin's own name, with its quantization described and a version of its own
    (`<fp32 version>+<version_suffix>`): never mistaken for minilm-toxicity's scores."""
    det.__class__ = cls
    det.quantization = quantization  # type: ignore[attr-defined]
    det.version = f"{det.version}+{version_suffix}"
    det.quality = None  # measured on the fp32 encoder's scores, not on this twin's
    return det  # type: ignore[return-value]


def quantize(det: MiniLMToxicity, *, full_range: bool | None = None) -> MiniLMToxicityInt8:
    """Quantize `det`'s encoder in place. full_range (8-bit activations, oneDNN kernels) defaults to
    whether this CPU has AVX512-VNNI; else 7-bit activations on fbgemm, the earlier choice. The two
    score differently, so each has its own version."""
    import torch

    if det.encoder.device != "cpu":
        raise DetectorUnavailable("error", "int8 dynamic quantization runs on CPU only",
                                  'use device = "cpu", or minilm-toxicity on a GPU')
    engines = torch.backends.quantized.supported_engines
    if full_range is None:
        full_range = full_range_supported() and "onednn" in engines
    if full_range:
        # oneDNN measured ~1.2x faster than fbgemm here at the same agreement (docs/PERFORMANCE.md)
        engine, mapping, tag = "onednn", {torch.nn.Linear: _full_range_linear()}, "-a8-onednn"
        text = "torch dynamic int8 (nn.Linear), qint8 weights per output channel, 8-bit activations, oneDNN"
    else:
        engine, mapping, tag = ("x86" if "x86" in engines else "fbgemm"), None, ""
        text = "torch dynamic int8 (nn.Linear), qint8 weights per output channel, 7-bit activations, fbgemm"
    # the engine picks the kernels when weights are packed, here; the packed weights keep them afterwards
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine
    try:
        # per output channel: measured closer to fp32 than per tensor (HateCheck ROC-AUC diff 0.0058 vs
        # 0.0151 with 7-bit activations), at the same speed
        spec = {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
        det.encoder.model = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]  # unannotated in torch
            det.encoder.model, spec, dtype=torch.qint8, mapping=mapping)
    finally:
        torch.backends.quantized.engine = previous
    return as_twin(det, MiniLMToxicityInt8, text, f"int8dyn-pc{tag}.torch{torch.__version__.split('+')[0]}")


def create(*, head: str | None = None, model_dir: str | None = None, max_length: int = 128, batch_size: int = 64,
           num_threads: int | None = None, threshold: float | None = None) -> MiniLMToxicityInt8:
    det = create_fp32(head=head, model_dir=model_dir, device="cpu", max_length=max_length, batch_size=batch_size,
                      num_threads=num_threads, threshold=threshold)
    return quantize(det)
