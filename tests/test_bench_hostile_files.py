"""bench/bench_hostile_files.py runs every hostile shard folder and bundle against copies of real
logs; on this modlens it must count 0 tracebacks and 0 changed logs, each file refused in one line."""
from __future__ import annotations

import bench_hostile_files


def test_the_hostile_files_bench_counts_no_traceback_and_no_changed_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    code = bench_hostile_files.main(["--keep", str(tmp_path / "work")])
    out = capsys.readouterr().out
    last = out.splitlines()[-1]
    cases = len(bench_hostile_files.SHARD_CASES) + 1 + len(bench_hostile_files.UNDECLARED)
    assert last == (f"{cases} hostile files: {cases} refused in one line, 0 tracebacks, 0 target logs changed"), out
    assert code == 0
