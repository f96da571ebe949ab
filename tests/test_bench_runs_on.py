"""Benchmarks name what they ran on. The device is read from the model's weights,
wherever the detector keeps them (MiniLM: on its encoder, so `det.device` printed `cpu` for a
model on CUDA); `bench/gpu_check.py` says so and runs nothing on a machine without CUDA."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from runs_on import flops_per_token, runs_on
from realtools import requires

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_the_device_is_the_weights_one_on_the_encoder_not_the_detectors_attribute():
    model = torch.nn.Linear(4, 2).to(device="meta", dtype=torch.float16)  # stands in for a GPU: not `cpu`
    model.config = SimpleNamespace(hidden_size=384, intermediate_size=1536, num_hidden_layers=6)
    det = SimpleNamespace(device="cpu", max_batch=256,  # what the detector claimed
                          encoder=SimpleNamespace(model=model, device="cpu", batch_size=64))
    assert runs_on(det) == {"device": "meta", "dtype": "float16", "batch": 64, "call": 256}
    # MiniLM-L6 at 10 tokens a text: about 21 MFLOP per token (docs/PERFORMANCE.md)
    assert flops_per_token(det, 10) == pytest.approx(2 * 6 * (4 * 384**2 + 2 * 384 * 1536 + 2 * 384 * 10))


def test_a_detector_without_a_model_runs_on_the_cpu():
    assert runs_on(SimpleNamespace(max_batch=1024)) == {"device": "cpu", "dtype": "-", "batch": "-", "call": 1024}


@requires("no-gpu")
def test_gpu_check_without_cuda_says_so_and_exits_cleanly():
    proc = subprocess.run([sys.executable, str(BENCH / "gpu_check.py")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "no CUDA device on this machine" in proc.stdout and "nothing was run" in proc.stdout
