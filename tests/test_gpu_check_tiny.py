"""bench/gpu_check.py's pace checks (first pass vs warm with and without the shape warm-up, audit vs
warm, fp16/bf16 against fp32, MFU of the base-size classifier, 2 million comments extrapolated from a
measured audit) run end to end with --tiny, on the CPU here: small models and 2,000 rows, so a session
lent a GPU finds the script working. The figures are not judged (benches print comparisons; tests do
not time), only that each is measured."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gpu_check

BENCH = Path(__file__).resolve().parents[1] / "bench"



@pytest.mark.slow
@pytest.mark.model
def test_gpu_check_tiny_measures_every_pace_goal():
    proc = subprocess.run([sys.executable, str(BENCH / "gpu_check.py"), "--tiny"], capture_output=True, text=True,
                          timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| goal"):
            table.setdefault(line.split(" | ")[0].lstrip("| "), []).append(line)
    warmed, cold = table["first pass"]
    for row in (warmed, cold):
        assert "% of warm" in row and "texts/s" in row and "attention sdpa" in row
    # the shape warm-up ran at load in one fresh process and not in the other (forced on the CPU)
    assert "shapes warmed at load" in warmed and "warm-up 0.0 s, 0 passes" not in warmed
    assert "no warm-up" in cold and "warm-up 0.0 s, 0 passes" in cold
    (overlap,) = table["overlap"]  # tokenization overlapped (pieces, the producer thread) or not
    assert "first pass off" in overlap and "warm off" in overlap and "alternated" in overlap
    minilm, base = table["audit/warm"]
    assert "minilm audit" in minilm and "of the warm detector" in minilm and "audit/that" in minilm
    assert "base-size audit" in base and "of the warm classifier" in base
    (mfu,) = table["MFU"]
    assert "TFLOP/s" in mfu and "M parameters" in mfu and "batch 8:" in mfu and "batch 16:" in mfu
    assert "attention sdpa" in mfu
    (dtypes,) = table["dtypes"]
    assert "float16 max |diff|" in dtypes and "bfloat16 max |diff|" in dtypes
    (two_million,) = table["2 million"]
    assert "2,000 rows audited in" in two_million and "-> 2,000,000 in" in two_million
    # 2,000 rows is not the goal's measured run: never called met
    assert two_million.rstrip(" |").endswith("NOT met")


def test_a_step_stopped_by_its_time_limit_keeps_what_it_printed(capsys):
    """A device slot is one try: the 2-million audit stopped by the budget still gives the rate of the
    rows it did (its progress line), marked cut short, and is never called met."""
    partial = {"params": 125e6, "dtype": "float16", "attention": "sdpa", "mean_tokens": 33.0, "by_batch": [],
               "batch": 256, "alone_per_s": 9000.0, "tflops": 40.0, "mfu": 0.04, "partial": True, "rows": 50_000,
               "audit_s": 10.0, "audit_per_s": 5000.0, "two_million_s": 400.0}
    found = {}

    def keep(out):
        found["scale"] = gpu_check.last_json(out)
        return "kept"

    child = f"import json, time; print(json.dumps({partial!r}), flush=True); time.sleep(30)"
    name, figure, seconds, status = gpu_check.step("2 million", [sys.executable, "-c", child], 3, keep)
    assert status == "TIMEOUT" and figure == "stopped after 3 s: kept" and seconds < 20
    assert found["scale"] == partial
    _, figure, _, status = gpu_check.step("silent", [sys.executable, "-c", "import time; time.sleep(30)"], 2, keep)
    assert status == "TIMEOUT" and figure == "stopped after 2 s: no figures"
    gpu_check.goals_table(None, None, None, None, found["scale"], "test")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ")}
    assert "cut short by the time limit" in rows["2 million"] and rows["2 million"].rstrip(" |").endswith("NOT met")
    assert rows["first pass"].rstrip(" |").endswith("-")  # not measured: no verdict



@pytest.mark.slow
@pytest.mark.model
def test_the_variants_figure_names_each_rate_by_the_method_that_made_it():
    # a real profile with MiniLM as target prints three whole paths; the figure once took the last two
    # (pooled; pooled, kept) and called them leave-one-out and pooled
    proc = subprocess.run([sys.executable, str(BENCH / "bench_variants.py"), "--profile", "--n", "4", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rates = [line.rsplit("-> ", 1)[1] for line in proc.stdout.splitlines() if " whole path " in line]
    assert len(rates) == 3, proc.stdout
    assert gpu_check.variant_rates(proc.stdout) == ", ".join(
        f"{method} {rate}" for method, rate in zip(("leave_one_out", "pooled", "pooled, kept"), rates))
