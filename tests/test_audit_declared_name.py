"""`modlens audit FILE --name NAME --id-col COLUMN`: a plain file the user names. Without --name a
plain file is named by its content (`generic.plain_name`), so an edited file is another data set;
with a declared name and an id column, an edited file is the same data set: the same command resumes
after a fix (rows already done are not logged anew), and a row whose text changed under a key the log
holds keeps the log's first text, counted and named in a warning (`audit.declared.KeptTexts`). A name
modlens gives itself (a catalog data set's, a reader's, `file-…`), an odd one, or one without
--id-col is a one-line usage error, on both engines."""
from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from modlens.cli import main
from modlens.datasets.base import DatasetError, file_digest
from modlens.scale.sources import load_dataset


def _write(path, rows, header=("cid", "text", "toxic")):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _log(db, sql, params=()):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


ROWS = [(f"c-{i:02d}", f"comment {i}", i % 2) for i in range(8)]


def _argv(tmp_path, path, *extra):
    scores = _write(tmp_path / "scores.csv", [(f"comment {i}", i / 10) for i in range(12)] + [("fixed 2", 0.9)],
                    ("text", "score"))
    return ["audit", str(path), "--id-col", "cid", "--detectors", f"cached:{scores}:text=score",
            "--db", str(tmp_path / "log.sqlite"), "--chunk", "2", "--quiet", *extra]


def test_an_edited_file_with_a_declared_name_resumes_its_audit(tmp_path, capsys):
    path, db = tmp_path / "comments.csv", tmp_path / "log.sqlite"
    argv = _argv(tmp_path, path, "--name", "forum-sample")
    # row 6 repeats the id of row 5: the audit stops there, the rows before it logged under their ids
    _write(path, [*ROWS[:5], ("c-04", "comment 5", 1), *ROWS[6:]])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "duplicate id 'c-04'" in err and "run the same command again to resume" in err
    assert "logged anew" not in err
    # the row is fixed (other bytes): the same data set, the same run, the four done rows skipped
    _write(path, ROWS)
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dataset"] == "forum-sample" and out["resumed"]
    assert (out["n_items"], out["n_skipped"], out["n_edited"]) == (8, 4, 0)
    assert _log(db, "SELECT platform, count(*) FROM comments GROUP BY 1") == [("dataset:forum-sample", 8)]
    # a row added at the top: only it is a new comment; the others keep their comments and scores
    _write(path, [("c-99", "comment 11", 0), *ROWS])
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_items"], out["n_scored"], out["n_edited"]) == (9, 1, 0)
    assert _log(db, "SELECT platform, count(*) FROM comments GROUP BY 1") == [("dataset:forum-sample", 9)]


def test_a_changed_text_under_a_logged_key_keeps_the_first_text_and_is_reported(tmp_path, capsys):
    path, db = tmp_path / "comments.csv", tmp_path / "log.sqlite"
    argv = _argv(tmp_path, path, "--name", "forum-sample")
    _write(path, ROWS)
    assert main(argv) == 0
    capsys.readouterr()
    _write(path, [*ROWS[:2], ("c-02", "fixed 2", 1), *ROWS[3:]])
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["n_edited"] == 1 and out["n_scored"] == 0  # the edited text is not scored: no comment has it
    warning = [line for line in captured.err.splitlines() if "another text than" in line]
    assert len(warning) == 1 and "c-02" in warning[0] and "keeps the first text" in warning[0]
    assert warning[0].removeprefix("modlens audit: ") in out["notes"]
    assert _log(db, "SELECT t.text FROM comments c JOIN texts t USING (text_id) WHERE comment_key = 'c-02'") == \
        [("comment 2",)]
    assert _log(db, "SELECT count(*) FROM texts WHERE text = 'fixed 2'") == [(0,)]
    # the gold label already in the label set stays (the edited row says 1)
    assert _log(db, "SELECT g.value FROM gold_labels g JOIN comments c USING (comment_id) "
                    "WHERE comment_key = 'c-02'") == [("0",)]
    assert _log(db, "SELECT count(*) FROM comments") == [(8,)]


def test_an_edited_row_already_done_in_a_resumed_run_is_counted_too(tmp_path, capsys):
    path = tmp_path / "comments.csv"
    argv = _argv(tmp_path, path, "--name", "forum-sample")
    _write(path, [*ROWS[:5], ("c-04", "comment 5", 1), *ROWS[6:]])
    assert main(argv) == 2
    capsys.readouterr()
    _write(path, [("c-00", "fixed 2", 0), *ROWS[1:]])  # row 0 was done before the stop; now edited
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["resumed"] and (out["n_skipped"], out["n_edited"]) == (4, 1)


def test_without_a_name_two_files_of_one_stem_and_an_edited_file_stay_apart(tmp_path):
    a = _write(tmp_path / "a" / "data.csv", ROWS)
    b = _write(tmp_path / "b" / "data.csv", ROWS[:7])
    names = {load_dataset(str(p), id_col="cid").name for p in (a, b)}
    assert names == {f"file-{file_digest(a)}", f"file-{file_digest(b)}"}
    # with a declared name, both are that data set (the name is the user's word that they are one)
    assert {load_dataset(str(p), id_col="cid", name="forum").name for p in (a, b)} == {"forum"}


@pytest.mark.parametrize("name, says", [
    ("", "empty"),
    ("  ", "empty"),
    ("davidson", "names a data set modlens identifies itself"),
    ("HateCheck", "names a data set modlens identifies itself"),
    ("csv", "names a data set modlens identifies itself"),
    ("tweeteval-hate", "names a data set modlens identifies itself"),
    ("file-0123456789abcdef", "file-"),
    ("my forum", "lower-case letters"),
    ("Forum", "lower-case letters"),
    ("../forum", "lower-case letters"),
    ("x" * 65, "at most 64"),
])
def test_names_modlens_gives_itself_or_odd_ones_are_refused(tmp_path, capsys, name, says):
    path = _write(tmp_path / "comments.csv", ROWS)
    assert main(_argv(tmp_path, path, "--name", name)) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("modlens audit: --name") and says in err[0]
    assert err[1].strip().startswith("fix:")
    assert not (tmp_path / "log.sqlite").exists() or _log(tmp_path / "log.sqlite", "SELECT count(*) FROM comments") == [(0,)]


def test_a_name_needs_an_id_column(tmp_path, capsys):
    path = _write(tmp_path / "comments.csv", ROWS)
    argv = [a for a in _argv(tmp_path, path, "--name", "forum") if a not in ("--id-col", "cid")]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "modlens audit: --name needs --id-col: without an id column an edited file's rows are keyed by " \
                     "its content hash, so they could never resume under the name"
    assert "--id-col COLUMN" in err[1]


def test_a_layout_that_names_its_own_data_set_refuses_a_name(tmp_path, capsys):
    assert main(["audit", "hatecheck", "--name", "mine", "--db", str(tmp_path / "l.sqlite"), "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("modlens audit: --name: the hatecheck reader names its data set itself (by its bytes: the "
                      "catalog's name for the released files, else file-DIGEST)")
    assert "--format csv --name NAME --id-col COLUMN" in err[1]
    # a layout of files of its own (HateXplain's JSON) cannot be read as a plain table: the fix says only that
    posts = {"p1": {"post_tokens": ["hello", "there"], "annotators": [{"label": "normal", "target": ["None"]}]}}
    (tmp_path / "dataset.json").write_text(json.dumps(posts), encoding="utf-8")
    assert main(["audit", str(tmp_path / "dataset.json"), "--name", "mine", "--db", str(tmp_path / "l.sqlite"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "the hatexplain reader names its data set itself" in err[0] and "--format csv" not in "\n".join(err)


def test_ray_data_names_a_declared_file_as_the_local_reader_does(tmp_path):
    """Ray Data's reader (`scale.ray_read.load`, no cluster needed to name the data set) gives a
    declared file the local reader's name, notes and keys, and refuses the same names the same way."""
    path = _write(tmp_path / "comments.csv", ROWS)
    local = load_dataset(str(path), id_col="cid", name="forum")
    ray = load_dataset(path.as_uri(), engine="ray", id_col="cid", name="forum")
    assert ray.name == local.name == "forum" and ray.source_id is local.source_id is None
    declared = [n for n in local.notes if "declared" in n]
    assert declared and declared == [n for n in ray.notes if "declared" in n]
    for bad in ("davidson", "file-x"):
        errors = []
        for engine, where in (("local", str(path)), ("ray", path.as_uri())):
            with pytest.raises(DatasetError) as err:
                load_dataset(where, engine=engine, id_col="cid", name=bad)
            errors.append((err.value.message, err.value.fix))
        assert errors[0] == errors[1]
    with pytest.raises(DatasetError, match="--name needs --id-col"):
        load_dataset(path.as_uri(), engine="ray", name="forum")


def test_out_parquet_refuses_a_name(tmp_path, capsys):
    """Edited rows are checked against the study log's texts; --out-parquet writes no log to check."""
    path = _write(tmp_path / "comments.csv", ROWS)
    assert main(_argv(tmp_path, path, "--name", "forum", "--engine", "ray", "--out-parquet", str(tmp_path / "out"))) == 2
    err = capsys.readouterr().err
    assert "modlens audit: --name and --out-parquet exclude each other" in err
    assert not (tmp_path / "out").exists()


def test_the_id_col_help_says_an_edited_file_is_a_new_data_set_without_a_name():
    from modlens.cli import build_parser

    sub = build_parser("audit")._subparsers._group_actions[0].choices["audit"]  # type: ignore[union-attr]
    helps = {flag: a.help for a in sub._actions for flag in a.option_strings}
    assert "an edited file is a new data set" in helps["--id-col"] and "--name" in helps["--id-col"]
    assert "resumes" not in helps["--id-col"]


def test_a_limit_stops_before_a_bad_row_the_check_has_read_ahead(tmp_path, capsys):
    """The check reads rows ahead in blocks: a bad row past `--limit` stops nothing, and the rows past
    the limit are not counted as edited."""
    path = _write(tmp_path / "comments.csv", ROWS)
    assert main(_argv(tmp_path, path, "--name", "forum")) == 0
    _write(path, [("c-00", "fixed 2", 0), *ROWS[1:5], ("c-04", "comment 5", 1), ("c-06", "fixed 2", 0)])
    capsys.readouterr()
    assert main(_argv(tmp_path, path, "--name", "forum", "--limit", "3")) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert (out["n_items"], out["n_edited"]) == (3, 1) and "(c-00)" in captured.err
