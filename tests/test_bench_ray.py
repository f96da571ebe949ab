"""`bench/bench_ray.py` ends by comparing the scores of the local engine's log with the Ray engine's:
its "same scores" line must say what the logs hold. Checked here on real logs of local audits (the
comparison reads logs, whichever engine wrote them), so no Ray is started."""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

import bench_ray as bench  # bench/ is on the tests' path (pyproject.toml)
from modlens.audit import run_audit
from modlens.detectors.base import Detector
from modlens.studylog.store import StudyLog

BENCH = Path(bench.__file__)


def test_two_logs_without_a_score_are_not_called_the_same(tmp_path):
    for name in ("local.sqlite", "ray.sqlite"):
        StudyLog(tmp_path / name).close()
    with pytest.raises(SystemExit, match="nothing compared"):
        bench.compare(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")


class AlwaysFails(Detector):
    """A model whose every call raises (out of memory, say): each text gets an error row."""
    name, version, labels, toxicity_label = "oom", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        raise RuntimeError("out of memory")


def test_two_logs_of_error_rows_only_are_not_called_the_same(tmp_path):
    """Both engines' logs hold a row per text, each an error: no toxicity was compared, so the
    bench cannot say the engines give the same scores (it said "same scores: yes")."""
    data = tmp_path / "c.csv"
    data.write_text("text\n" + "".join(f"nice post {i}\n" for i in range(5)))
    for name in ("local.sqlite", "ray.sqlite"):
        run_audit(str(data), db=tmp_path / name, detector_objects={"oom": AlwaysFails()}, progress=False)
    with pytest.raises(SystemExit, match="nothing compared"):
        bench.compare(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")



class Answers(AlwaysFails):
    """The same model and version when its calls succeed."""

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [{"toxicity": 0.1} for _ in texts]


@pytest.mark.parametrize("failed", ["local", "ray"])
def test_one_log_of_error_rows_against_one_of_scores_says_which_side_has_none(tmp_path, failed):
    """One engine's detector failed on every text, the other's scored them: the engines differ, and the
    line says which log has no toxicity, rather than refusing the pair as if neither had any."""
    data = tmp_path / "c.csv"
    data.write_text("text\n" + "".join(f"nice post {i}\n" for i in range(5)))
    for name in ("local", "ray"):
        det = AlwaysFails() if name == failed else Answers()
        run_audit(str(data), db=tmp_path / f"{name}.sqlite", detector_objects={"oom": det}, progress=False)
    same, how = bench.compare(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")
    assert not same and "5 with an error on one side" in how, how
    assert f"the {failed} log has no toxicity" in how, how

def test_the_same_scores_are_the_same_and_one_moved_score_is_not(tmp_path):
    data = tmp_path / "c.csv"
    data.write_text("text\n" + "".join(f"you are an idiot number {i}\nnice post {i}\n" for i in range(10)))
    run_audit(str(data), db=tmp_path / "local.sqlite", detectors=["profanity-check"], progress=False)
    shutil.copy(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")
    same, how = bench.compare(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")
    assert same and how.startswith("20 scores compared (0 only local, 0 only ray, 0 with an error on one side)")
    con = sqlite3.connect(tmp_path / "ray.sqlite")
    con.execute("UPDATE scores SET toxicity = toxicity + 0.01 WHERE rowid = (SELECT min(rowid) FROM scores)")
    con.commit()
    con.close()
    same, how = bench.compare(tmp_path / "local.sqlite", tmp_path / "ray.sqlite")
    assert not same and "toxicity differs in 1," in how


@pytest.mark.slow
def test_a_bench_of_one_chunk_per_audit_gives_no_steady_state_verdict():
    """40 comments in chunks of 1,024: each audit writes one chunk, so there is no steady state to time
    after the first, and no PASS or FAIL against the target (the real bench, on a real local Ray)."""
    proc = subprocess.run([sys.executable, str(BENCH), "--rows", "40", "--chunk", "1024", "--repeat", "1",
                           "--num-cpus", "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steady = next(line for line in proc.stdout.splitlines() if line.startswith("steady state"))
    assert "not measured" in steady and "PASS" not in steady and "FAIL" not in steady and "nan" not in proc.stdout
    assert "same scores: yes: 40 scores compared" in proc.stdout
