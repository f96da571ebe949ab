"""minilm-toxicity-int8: the embedded MiniLM detector with its encoder's Linear layers quantized to int8 (torch dynamic quantization), for corpus audits on CPU.

A detector of its own, never a silent replacement: its own name and version (the fp32 version
plus `+int8dyn`), its scores recorded beside minilm-toxicity's. Same tokenizer, pooling and head;
only the encoder's matrix products run in int8 (weights quantized once at load, activations per
call). bench/bench_detectors.py prints its throughput and agreement with fp32 on the shipped
benchmarks; tests/test_detectors_int8.py checks the agreement on a few texts.
"""
from __future__ import annotations

from typing import Any

from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import MiniLMToxicity, create as create_fp32

# the largest |int8 - fp32| toxicity difference the test accepts on its few texts; over whole benchmarks
# single texts differ by up to ~0.4 (mean ~0.04): docs/PERFORMANCE.md
TOLERANCE = 0.25


class MiniLMToxicityInt8(MiniLMToxicity):
    name = "minilm-toxicity-int8"

    def config(self) -> dict[str, Any]:
        return {**super().config(), "quantization": "torch dynamic int8 (nn.Linear), qint8 weights per output channel"}


def quantize(det: MiniLMToxicity) -> MiniLMToxicityInt8:
    import torch

    if det.encoder.device != "cpu":
        raise DetectorUnavailable("error", "int8 dynamic quantization runs on CPU only",
                                  'use device = "cpu", or minilm-toxicity on a GPU')
    engines = torch.backends.quantized.supported_engines
    if "fbgemm" in engines or "x86" in engines:
        torch.backends.quantized.engine = "x86" if "x86" in engines else "fbgemm"
    # per output channel: measured closer to fp32 than per tensor (HateCheck, 1,500 rows: mean |diff|
    # 0.035 vs 0.047, max 0.40 vs 0.51), at the same speed
    spec = {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
    det.encoder.model = torch.ao.quantization.quantize_dynamic(det.encoder.model, spec, dtype=torch.qint8)
    det.__class__ = MiniLMToxicityInt8  # the same object, quantized: its own name and version
    det.version = f"{det.version}+int8dyn-pc.torch{torch.__version__.split('+')[0]}"
    return det  # type: ignore[return-value]


def create(*, head: str | None = None, model_dir: str | None = None, max_length: int = 128, batch_size: int = 64,
           num_threads: int | None = None, threshold: float | None = None) -> MiniLMToxicityInt8:
    det = create_fp32(head=head, model_dir=model_dir, device="cpu", max_length=max_length, batch_size=batch_size,
                      num_threads=num_threads, threshold=threshold)
    return quantize(det)
