"""Every benchmark in bench/ runs here on a tiny input, so none can rot unnoticed: bench_merge.py
once inserted 8 values into the 9-column `sessions` table a migration had grown, and nothing ran
it. Each runs as a person would run it, `python bench/NAME.py ARGS` (`--tiny`, or its own size
flags set small), and must exit 0 and print what its table starts with; the figures themselves are
not judged here (benches print comparisons; tests do not time).

A new bench is listed in TINY (a test checks that every script in bench/ is), or in COVERED when
a test of its own already runs it small. Benches that load a neural model, start a daemon or Ray,
or need a minute even when tiny are marked slow (and model): `make test-fast` leaves them out,
the full suite runs them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
# modules the benches share, not benchmarks
HELPERS = {"baselines", "free_detector", "runs_on", "normalize_eval"}
# benches a test of their own runs small
COVERED = {
    "bench_hostile_inputs": "tests/test_bench_hostile_inputs.py",
    "bench_hostile_files": "tests/test_bench_hostile_files.py",
    "bench_audit_floor": "tests/test_bench_audit_floor.py",
    "gpu_check": "tests/test_gpu_check_tiny.py",  # --tiny: the pace checks on the CPU (without CUDA and --tiny it runs nothing)
}
# every run is a child process that imports modlens: above the fast loop's 2 s even when tiny
SLOW, MODEL = (pytest.mark.slow,), (pytest.mark.slow, pytest.mark.model)

# name -> (arguments, what its output holds, marks). Seconds measured on this 2-core machine under a
# load average of 12-20 (other work running).
TINY: dict[str, tuple[list[str], str, tuple[pytest.MarkDecorator, ...]]] = {
    # the study log, the readers, the audit pipeline with a detector that costs nothing: 3-15 s
    "bench_studylog": (["--rows", "200", "--chunk", "100", "--detectors", "2", "--sync", "NORMAL"], "rows/s", SLOW),
    "bench_dataset_stream": (["--rows", "300"], "rows/s", SLOW),
    "bench_audit_memory": (["--tiny"], "x field", SLOW),
    "bench_audit": (["--rows", "200", "--rounds", "1", "--detector", "free"], "rows/s", SLOW),
    "bench_audit_chunk": (["--rows", "300", "--chunks", "64", "--rounds", "1"], "rows a crash recomputes", SLOW),
    "bench_audit_scale": (["--rows", "300", "--chunk", "50", "--detector", "paced:100000"], "audit / the paced", SLOW),
    # three `modlens` children: merge, merge again (its "nothing added" counted from the log), report
    "bench_merge": (["--tiny"], "nothing added)", SLOW),
    # a detector, the variant generator or WordNet loaded: 10-60 s
    # batched against one call per query, which the bench compares only when both ended the same
    "bench_attacks": (["--n", "1", "--recipes", "deepwordbug", "--unbatched", "deepwordbug"],
                      "same adversarial texts, statuses and queries", SLOW),
    "bench_perturb": (["--n", "5"], "variants/s", SLOW),
    "bench_variants": (["--profile", "--n", "4", "--repeat", "1", "--target", "profanity-check", "--detectors",
                        "profanity-check"], "whole path", SLOW),
    # --audit-rows: the audit beside the detector alone (bench_audit.py's child), which once called it with
    # arguments it no longer took
    "bench_detectors": (["--detector", "profanity-check", "--n", "16", "--single", "4", "--repeat", "1",
                         "--audit-rows", "20"], '"audit_ratio"', SLOW),
    "bench_normalize": (["--tiny"], "NoisyHate dev", SLOW),
    "bench_word_vectors": (["--n", "10"], "neighbours", SLOW),
    "bench_fusion": (["--pairs", "1", "--fusion", "T+E", "--fusion", "I", "--ocr-pages", "0", "--asr-texts", "0",
                      "--score-pairs", "0"], "cases/s", SLOW),
    # a real `modlens serve` or Ray: 10-80 s
    # --oversize-every 7: frames past the hard limit, which must close their sockets (exit 1 otherwise)
    "bench_fuzz": (["--messages", "50", "--sockets", "5", "--seconds", "20", "--oversize-every", "7"],
                   "verdict", SLOW),
    "bench_soak": (["--clients", "2", "--minutes", "0.1", "--no-off", "--detector", "profanity-check"], "variants", SLOW),
    "bench_feed_variants": (["--tiny"], "on/off:", SLOW),  # a feed of 20 with variants off and on
    "bench_ray": (["--rows", "200", "--chunk", "50", "--repeat", "1"], "same scores: yes", SLOW),
    # root mounts a small tmpfs; elsewhere it says why not and exits 0
    "probe_full_disk": (["--size-mib", "8", "--sockets", "1", "--after-s", "2"], "", SLOW),
    # MiniLM
    "bench_daemon": (["--pages", "2", "--clients", "1", "--ingest", "50"], "speed-up", MODEL),
    "bench_daemon_gap": (["--pages", "2", "--clients", "1", "--rounds", "1", "--normalize", "off"], "clients", MODEL),
    "bench_perspective": (["--requests", "5", "--rounds", "1", "--clients", "1"], "req/s", MODEL),
    "bench_perspective_window": (["--requests", "8", "--clients", "1", "2", "--rounds", "1"], "clients", MODEL),
    "bench_embedded": (["--tiny"], "HateCheck", MODEL),
    "bench_tokenize_overlap": (["--tiny"], "| overlapped |", MODEL),
    "gpu_cold_warm": (["--device", "cpu", "--n", "16"], "texts_per_s_cold_warm", MODEL),
    "bench_finetune_probe": (["--tiny"], "trained 1 steps", MODEL),
}


def _run(name: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=BENCH.parent)


def test_every_bench_is_run_by_the_suite():
    scripts = {p.stem for p in BENCH.glob("*.py")} - HELPERS
    assert scripts == set(TINY) | set(COVERED), "list the bench in TINY (tests/test_bench_tiny.py) with a tiny run"
    assert all((BENCH.parent / test).is_file() for test in COVERED.values())


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [pytest.param(n, marks=marks) for n, (_, _, marks) in TINY.items()])
def test_the_bench_runs_on_a_tiny_input(name):
    args, shows, _ = TINY[name]
    proc = _run(name, args, timeout=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert shows in proc.stdout, proc.stdout[-3000:]
