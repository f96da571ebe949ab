"""`modlens sample --label toxic` stratifies by the gold label, which the log keeps in versioned label
sets (`gold_labels`), not among the other labels (`labels`): read from the set per source the report
reads (the newest that holds labels, or `--label-set`), and the item set names it. Against a real
log: the shipped Davidson file audited twice, under two definitions of its gold label."""
from __future__ import annotations

import json
from collections import Counter
import sqlite3

import pytest

from modlens.cli import main

LIMIT = 300


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """Davidson's first rows audited with its own gold definition (hate speech or offensive), then
    with `--label class=0` (hate speech only): label sets 1 and 2."""
    db = tmp_path_factory.mktemp("sample") / "log.sqlite"
    base = ["audit", "davidson", "--limit", str(LIMIT), "--detector", "profanity-check", "--db", str(db), "--quiet"]
    assert main(base) == 0
    assert main([*base, "--label", "class=0"]) == 0
    return db


def _gold(db, set_id: int) -> dict[str, str]:
    """comment_key -> its gold value in the set."""
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT c.comment_key, g.value FROM gold_labels g JOIN comments c USING (comment_id) "
                                "WHERE g.label_set_id = ?", (set_id,)).fetchall())
    finally:
        con.close()


def _sets(db) -> dict[int, str]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT label_set_id, definition FROM label_sets").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("asked,used", [([], 2), (["--label-set", "1"], 1)], ids=["newest", "asked"])
def test_the_strata_are_the_gold_values_of_the_set_it_names(log, tmp_path, capsys, asked, used):
    sets = _sets(log)
    assert len(sets) == 2
    capsys.readouterr()
    out = tmp_path / "itemset.json"
    assert main(["sample", "--db", str(log), "--out", str(out), "--label", "toxic", "--per-platform", "20", *asked]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["params"]["label_sets"] == {"dataset:davidson": {"label_set_id": used, "definition": sets[used]}}
    assert f"label set {used} ({sets[used]})" in printed
    gold = _gold(log, used)
    assert len(data["items"]) == 20
    assert all(it["stratum"] == gold[it["comment_key"]] for it in data["items"])
    assert data["params"]["counts"]["dataset:davidson"] == dict(Counter(it["stratum"] for it in data["items"]))
    assert set(data["params"]["counts"]["dataset:davidson"]) == {"0", "1"}


def test_the_two_sets_disagree_so_the_choice_matters(log):
    one, two = _gold(log, 1), _gold(log, 2)
    assert one.keys() == two.keys() and len(one) == LIMIT
    assert any(one[k] != two[k] for k in one)


def test_a_label_the_log_lacks_names_the_labels_it_has(log, tmp_path, capsys):
    code = main(["sample", "--db", str(log), "--out", str(tmp_path / "s.json"), "--label", "nosuch"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no comment of the log has that label" in err and "class" in err and "toxic (the gold label)" in err
    assert not (tmp_path / "s.json").exists()


def test_a_label_set_needs_the_gold_label(log, tmp_path, capsys):
    code = main(["sample", "--db", str(log), "--out", str(tmp_path / "s.json"), "--label", "class",
                 "--label-set", "1"])
    assert code == 2 and "it needs --label toxic" in capsys.readouterr().err


def test_an_out_folder_that_is_not_there_is_said_before_the_draw(log, tmp_path, capsys, monkeypatch):
    """`--out missing/dir/x.json` ended in a traceback after the whole draw: the path is checked first
    (exit 2, naming the folder), so nothing is drawn for a file that cannot be written."""
    from modlens.study import itemset

    drawn: list[object] = []
    real_draw = itemset.draw
    monkeypatch.setattr(itemset, "draw", lambda *a, **k: drawn.append(a) or real_draw(*a, **k))
    out = tmp_path / "missing" / "dir" / "x.json"
    code = main(["sample", "--db", str(log), "--out", str(out), "--label", "toxic", "--per-platform", "20"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and str(out.parent) in err and "does not exist" in err, err
    assert drawn == [] and not (tmp_path / "missing").exists()


def test_a_write_that_fails_leaves_the_item_set_there_whole(log, tmp_path):
    """The item set is written atomically: a write that fails (here the file-size limit a process can
    be given, hit part way) leaves the item set that was there whole, and no half file beside it."""
    import resource
    import signal
    import subprocess
    import sys

    (tmp_path / "study").mkdir()
    out = tmp_path / "study" / "itemset.json"
    argv = [sys.executable, "-m", "modlens", "sample", "--db", str(log), "--out", str(out), "--label", "toxic",
            "--per-platform", "150"]
    assert subprocess.run(argv, capture_output=True).returncode == 0
    before = out.read_bytes()
    limit = 33 * 1024  # above the log's 32 KiB shared-memory file (SQLite's WAL), below the item set
    assert len(before) > limit

    def small_files() -> None:  # a write past the limit fails with EFBIG instead of killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    failed = subprocess.run([*argv, "--force", "--seed", "1"], capture_output=True, text=True, preexec_fn=small_files)
    assert failed.returncode == 1, failed.stderr
    assert "Traceback" not in failed.stderr and str(out) in failed.stderr, failed.stderr
    assert out.read_bytes() == before and [p.name for p in out.parent.iterdir()] == ["itemset.json"]
