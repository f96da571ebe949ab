"""bench/bench_hostile_inputs.py with a tiny count, so it cannot rot: a real `modlens serve` answers
every malformed request and frame without a 500, a traceback or a lost socket, and closes a
slow-header socket within the header timeout."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modlens.daemon.app import HEADER_TIMEOUT_S

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_hostile_inputs.py"


@pytest.mark.timeout(180)
def test_hostile_inputs_bench_tiny_run():
    out = subprocess.run([sys.executable, str(BENCH), "--requests", "300", "--frames", "60", "--ws-sockets", "2",
                          "--slow-sockets", "2", "--slow-limit", "20", "--seconds", "60", "--json"],
                         capture_output=True, text=True, timeout=170)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.returncode == 0, (result, out.stderr[-2000:])
    assert result["requests"] == 300 and result["answers_500"] == 0
    assert result["tracebacks_in_log"] == 0 and result["internal_errors_in_log"] == 0
    assert result["frames"] == result["frames_then_pong"] == 60 and result["sockets_closed_unexpectedly"] == 0
    assert result["daemon_malformed_count"] > 0 and result["daemon_alive_at_end"]
    assert result["slow_closed"] == 2 and result["slow_closed_after_s"][1] <= HEADER_TIMEOUT_S + 2.5
