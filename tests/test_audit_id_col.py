"""`modlens audit --id-col COLUMN`: items are keyed by that column's values, within the data set
the file's content names (`generic.plain_name`): the same file audited again resumes, an edited file
is another data set (two different files with ids 1..N are never one data set's comments); a
missing column, and a layout whose reader keys its rows itself, are one-line usage errors."""
from __future__ import annotations

import csv
import json
import sqlite3

from modlens.cli import main


def _write(path, rows, header=("cid", "text", "toxic")):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _keys(db):
    with sqlite3.connect(db) as conn:
        return {k for (k,) in conn.execute("SELECT comment_key FROM comments")}


def test_items_are_keyed_by_the_id_column_and_an_edited_file_is_another_data_set(tmp_path, capsys):
    rows = [(f"c-{i:02d}", f"comment {i}", i % 2) for i in range(8)]
    scores = _write(tmp_path / "scores.csv", [(t, i / 10) for i, (_, t, _) in enumerate(rows)], ("text", "score"))
    db = tmp_path / "log.sqlite"
    argv = ["audit", str(tmp_path / "comments.csv"), "--id-col", "cid", "--detectors", f"cached:{scores}:text=score",
            "--db", str(db), "--chunk", "2", "--quiet"]
    # row 6 repeats the id of row 5: the audit stops there, the rows before it logged under their ids
    _write(tmp_path / "comments.csv", [*rows[:5], ("c-04", "comment 5", 1), *rows[6:]])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "duplicate id 'c-04'" in err and "the edited file is a new source, named by its content" in err
    assert _keys(db) == {"c-00", "c-01", "c-02", "c-03"}  # chunks of 2: the one holding the bad row is not written
    # the file is fixed and a row added at the top: other bytes, another data set, its rows logged as its own
    _write(tmp_path / "comments.csv", [("c-99", "comment 0", 0), *rows])
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert not out["resumed"] and (out["n_items"], out["n_skipped"]) == (9, 0)
    assert _keys(db) == {f"c-{i:02d}" for i in (*range(8), 99)}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(DISTINCT platform), count(*) FROM comments").fetchone() == (2, 4 + 9)
    # the same bytes again: the same data set, its comments and scores already in the log
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_items"] == 9 and out["n_scored"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(DISTINCT platform), count(*) FROM comments").fetchone() == (2, 4 + 9)


def test_a_missing_id_column_is_a_usage_error(tmp_path, capsys):
    f = _write(tmp_path / "comments.csv", [("a", "one", 0)])
    assert main(["audit", str(f), "--id-col", "comment_id", "--detectors", "cached:x.csv",
                 "--db", str(tmp_path / "l.sqlite"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "comment_id" in err and "cid" in err  # names the column asked for and the ones the file has


def test_a_layout_that_keys_its_own_rows_refuses_id_col(tmp_path, capsys):
    assert main(["audit", "hatecheck", "--id-col", "case_id", "--db", str(tmp_path / "l.sqlite"), "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("modlens audit: --id-col: the hatecheck reader keys its rows itself and takes no id column")
    assert err[1].strip().startswith("fix: drop --id-col")
