"""`bench/bench_audit_floor.py` measures what caps an audit's rows/s. Its log floor
replays the rows an audit wrote into a fresh log of the product's schema; the figure means
something only if the replay holds exactly those rows, so the bench checks that and stops
otherwise. Run here on a few hundred rows: the report prints every stage and each table."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bench_audit_floor as bench  # bench/ is on the tests' path (pyproject.toml)
from modlens.studylog.store import StudyLog

BENCH = Path(bench.__file__)


def test_tables_come_after_the_tables_their_foreign_keys_name(tmp_path):
    log = StudyLog(tmp_path / "log.db")
    order = bench.tables_in_order(log.conn)
    for table in order:
        for fk in log.conn.execute(f"PRAGMA foreign_key_list([{table}])"):
            if fk[2] != table:
                assert order.index(fk[2]) < order.index(table), (table, fk[2])
    # audit_runs.label_set_id was added by a later migration than label_sets' creation order implies
    assert order.index("label_sets") < order.index("audit_runs")
    log.close()


def test_the_bench_replays_the_audited_rows_and_reports_each_stage(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--rows", "300", "--rounds", "1", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "300 Davidson rows, detector free" in out
    for stage in ("audit into the log", "read the file alone", "log floor", "read + log floor",
                  "log floor, 32 rows per INSERT", "read + log floor, 32 rows per INSERT",
                  "what-if: labels as one JSON row per comment", "what-if: read + one row per item"):
        assert f"| {stage}" in out, stage
    # Davidson's five label rows per tweet (class, raters and three vote counts), one comment each
    assert any(line.split()[:3] == ["labels", "1,500", "rows"] for line in out.splitlines()), out
    assert any(line.split()[:3] == ["comments", "300", "rows"] for line in out.splitlines()), out


def test_logs_that_differ_in_one_row_are_not_the_same(tmp_path):
    for name in ("a.db", "b.db"):
        StudyLog(tmp_path / name).close()
    assert bench.same_rows(tmp_path / "a.db", tmp_path / "b.db")
    log = StudyLog(tmp_path / "b.db")
    log.conn.execute("INSERT INTO texts (text_hash, text) VALUES ('h', 'one more text')")
    log.close()
    assert not bench.same_rows(tmp_path / "a.db", tmp_path / "b.db")
