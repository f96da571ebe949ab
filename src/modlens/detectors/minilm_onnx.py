"""minilm-toxicity-onnx-int8: the embedded MiniLM detector with its encoder run by ONNX Runtime, weights int8 (dynamic quantization), for corpus audits on CPU.

A detector of its own, never a silent replacement: its own name and version (the fp32 version plus
`+ort<version>-int8dyn-….<graph>`, naming the engine, how it quantizes and the quantized graph's
bytes, which another torch or onnx may export differently), scores recorded beside
minilm-toxicity's. Same tokenizer, padded widths, pooling and head: only the encoder's forward pass
runs in ONNX Runtime. The encoder is exported to ONNX and quantized once, into modlens' home
(`models/`), and read from there afterwards. Needs the `onnx` extra (`pip install 'modlens[onnx]'`).
bench/bench_detectors.py --onnx prints its throughput and agreement with fp32 beside the torch twin;
docs/PERFORMANCE.md records why it exists (faster than the torch twin with passive OpenMP).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from modlens import paths
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import MiniLMToxicity, create as create_fp32
from modlens.paths import file_sha256, portable

NAME = "minilm-toxicity-onnx-int8"
HINT = "pip install 'modlens[onnx]'  (onnxruntime and onnx)"
# the largest |int8 - fp32| toxicity difference the test accepts on its few texts; over whole benchmarks
# single texts differ by up to ~0.23 (mean 0.01-0.02): docs/PERFORMANCE.md
TOLERANCE = 0.25
OPSET = 17


def _require() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"{NAME} needs {err.name}", HINT) from err
    return onnx, onnxruntime


def default_cache_dir() -> Path:
    return paths.home() / "models"


class OrtEncoder:
    """Stands in for the torch encoder inside `SentenceEncoder`: the same call, `last_hidden_state` out."""

    def __init__(self, session: Any):
        self.session = session

    def __call__(self, *, input_ids: Any, attention_mask: Any = None) -> SimpleNamespace:
        import torch

        ids = input_ids.numpy()
        # the fp32 path leaves the mask out when no row is padded; the exported graph always takes one
        mask = np.ones_like(ids) if attention_mask is None else attention_mask.numpy()
        (hidden,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
        return SimpleNamespace(last_hidden_state=torch.from_numpy(hidden))


class MiniLMToxicityOnnxInt8(MiniLMToxicity):
    name = NAME
    quantization = ""
    onnx_path: Path
    onnx_sha256: str  # the graph's bytes when the session read it: what the version names, hashed once

    def config(self) -> dict[str, Any]:
        return {**super().config(), "quantization": self.quantization, "onnx_model": portable(self.onnx_path),
                "onnx_model_sha256": self.onnx_sha256}


def settings(reduce_range: bool) -> tuple[str, str]:
    """(version tag, description). 7-bit weights (`reduce_range`) only where int8 products would
    saturate: x86 without AVX512-VNNI adds u8*s8 pairs in int16 (onnxruntime's own advice)."""
    if reduce_range:
        return "int8dyn-pc-s8w7", "onnxruntime dynamic int8 (MatMul), s8 weights per output channel in 7 bits, u8 activations"
    return "int8dyn-pc-s8", "onnxruntime dynamic int8 (MatMul), s8 weights per output channel, u8 activations"


def build(det: MiniLMToxicity, out: Path, reduce_range: bool) -> None:
    """Export `det`'s torch encoder to ONNX (dynamic batch and length) and quantize it into `out`."""
    import torch

    _require()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = det.encoder.model
    # eager attention exports to plain MatMul/Softmax: measured ~4% faster in onnxruntime than the
    # exported SDPA graph, at the same agreement (docs/PERFORMANCE.md)
    model.set_attn_implementation("eager")

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        ids = torch.full((2, 8), det.encoder.pad_id + 1000, dtype=torch.int64)
        axes = {0: "batch", 1: "tokens"}
        with torch.inference_mode(), warnings.catch_warnings():
            # tracer warnings about shape checks in transformers' Python; the graph's agreement is measured instead
            warnings.simplefilter("ignore")
            # the TorchScript exporter: the default (dynamo) one needs onnxscript, not in the extra
            torch.onnx.export(Hidden().eval(), (ids, torch.ones_like(ids)), str(fp32), dynamo=False,
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              opset_version=OPSET, dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                                                 "last_hidden_state": axes})
        # per output channel, s8 weights: measured closest to fp32 and fastest (u8 weights ran at onnxruntime fp32 speed here)
        quantize_dynamic(str(fp32), str(int8), per_channel=True, reduce_range=reduce_range, weight_type=QuantType.QInt8)
        os.replace(int8, out)  # atomic: a concurrent loader sees no file or a whole one


def session(path: Path, threads: int) -> Any:
    _, ort = _require()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # idle workers sleep, like modlens' passive OpenMP for torch (minilm.prefer_passive_openmp). Always: spinning
    # ones fight torch's OpenMP workers (the pooling runs in torch) for the cores, measured 1.66x -> 1.23x of fp32
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def convert(det: MiniLMToxicity, *, cache_dir: Path | None = None,
            reduce_range: bool | None = None) -> MiniLMToxicityOnnxInt8:
    """Swap `det`'s torch encoder for the quantized ONNX one (built into `cache_dir` on first use)."""
    import torch

    onnx, ort = _require()
    from modlens.detectors.minilm_int8 import as_twin, full_range_supported

    if det.encoder.device != "cpu":
        raise DetectorUnavailable("error", f"{NAME} runs on CPU only", 'use minilm-toxicity on a GPU')
    if reduce_range is None:
        reduce_range = not full_range_supported()
    tag, text = settings(reduce_range)
    engines = f"ort{ort.__version__}.onnx{onnx.__version__}.torch{torch.__version__.split('+')[0]}"
    key = hashlib.sha256(f"{det.model_hash}|{tag}|{engines}|opset{OPSET}".encode()).hexdigest()[:16]
    path = (cache_dir or default_cache_dir()) / f"minilm-l6.{det.model_hash}.{tag}.{key}.onnx"
    if not path.is_file():
        build(det, path, reduce_range)
    try:
        sess = session(path, torch.get_num_threads())
    except Exception as err:  # a truncated or foreign file under the cached name
        raise DetectorUnavailable("error", f"cannot load {path}: {err}", "delete the file; it is rebuilt on next load") from err
    det.encoder.model = OrtEncoder(sess)  # the torch weights go: the session holds its own
    # the graph by its bytes: the cache key names the torch and onnx that built it, but another torch may
    # export another graph under the same settings, and scores must name the one that produced them
    graph = file_sha256(path)
    if graph is None:  # removed since the session read it
        raise DetectorUnavailable("error", f"cannot read {path}", "load it again; it is rebuilt if missing")
    twin = as_twin(det, MiniLMToxicityOnnxInt8, text, f"ort{ort.__version__}-{tag}.{graph[:12]}")
    twin.onnx_path, twin.onnx_sha256 = path, graph
    return twin


def create(*, head: str | None = None, model_dir: str | None = None, max_length: int = 128, batch_size: int = 64,
           num_threads: int | None = None, threshold: float | None = None,
           cache_dir: str | None = None) -> MiniLMToxicityOnnxInt8:
    _require()  # before loading torch weights only to find the engine missing
    det = create_fp32(head=head, model_dir=model_dir, device="cpu", max_length=max_length, batch_size=batch_size,
                      num_threads=num_threads, threshold=threshold)
    return convert(det, cache_dir=Path(os.path.expanduser(cache_dir)) if cache_dir else None)
