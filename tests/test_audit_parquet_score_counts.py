"""`modlens audit --out-parquet DIR` counts scores per text, as the log the folder is imported into
holds them (one row per text and detector) and as the audit into a log counts them: a text repeated
in a later chunk is one score, whether its score is good or an error."""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from modlens.cli import main
from modlens.datasets.base import DIGEST_CHARS


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_CHARS]


def _params(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))["params"]


def _log_rows(db: Path) -> tuple[int, int]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*), count(error) FROM scores").fetchone()
    finally:
        con.close()


@pytest.mark.parametrize("engine", ["ray"])
def test_a_repeated_text_is_one_score_good_or_error(tmp_path, capsys, engine):
    data, table, out, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "out", tmp_path / "log.sqlite"
    # chunks of 2: "nice one mate" (answered) and "who knows" (no answer: an error) each come again in the second chunk
    data.write_text("text\nnice one mate\nwho knows\nnice one mate\nwho knows\nsee you soon\n", encoding="utf-8")
    table.write_text("text,score\nnice one mate,0.1\n", encoding="utf-8")
    assert main(["audit", str(data), "--detector", f"cached:{table}:text=score:mine", "--chunk", "2", "--quiet",
                 "--engine", engine, "--out-parquet", str(out)]) == 1  # two texts got no score
    said = capsys.readouterr()
    summary = json.loads(said.out)
    (key,) = summary["score_errors"]
    tally = summary["score_errors"][key]
    assert main(["import", str(out), "--db", str(db)]) == 0
    capsys.readouterr()
    assert _log_rows(db) == (3, 2)  # three texts, two without an answer
    assert (tally["scores"], tally["errors"]) == (3, 2)
    assert f"detector {key}: 2 of the 3 texts it scored have an error as their score" in said.err


def test_a_rerun_into_the_folder_scores_no_text_an_earlier_run_answered(tmp_path, capsys):
    """Rows keyed by --id-col: the file grew, and the same command resumes into the same folder. A text
    an earlier run wrote a good score for is not scored or written again (one good row per text and
    detector, as the log sink asks the log); one it wrote an error for is scored again, a second row.
    The digest of the bytes a run read is no part of the audit's identity, and the folder records the
    digest of each version its runs read (the imported run says so)."""
    data, table, out, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "out", tmp_path / "log.sqlite"
    data.write_text("id,text\n1,nice one mate\n2,who knows\n", encoding="utf-8")
    table.write_text("text,score\nnice one mate,0.1\n", encoding="utf-8")
    args = ["audit", str(data), "--detector", f"cached:{table}:text=score:mine", "--chunk", "2", "--quiet",
            "--engine", "ray", "--id-col", "id", "--out-parquet", str(out)]
    assert main(args) == 1  # "who knows" got no score
    capsys.readouterr()
    first = _digest(data)
    assert _params(out)["file_digest"] == first
    with data.open("a", encoding="utf-8") as f:
        f.write("3,nice one mate\n4,who knows\n5,see you soon\n")
    assert main(args) == 1
    read = _params(out)
    assert read["file_digests"] == [first, _digest(data)] and "file_digest" not in read
    tally = json.loads(capsys.readouterr().out)["score_errors"]["mine"]
    assert (tally["scores"], tally["errors"]) == (2, 2)  # "who knows" again and "see you soon", both errors
    rows = [r for p in sorted(out.glob("scores-*.parquet")) for r in pq.read_table(p).to_pylist()]
    good = [(r["text"], r["detector"]) for r in rows if r["error"] is None]
    assert good == [("nice one mate", "mine")]
    assert main(["import", str(out), "--db", str(db)]) == 0
    said = json.loads(capsys.readouterr().out)
    assert _log_rows(db) == (3, 2)
    with sqlite3.connect(db) as con:
        assert [json.loads(p) for (p,) in con.execute("SELECT params_json FROM audit_runs")] == [read]
    # 4 rows read: the folder has two for "who knows" (the first run's error, the rerun's error again),
    # and the log keeps the first: scores_already_in_log counts the row an earlier chunk of this same
    # folder wrote, not one from another audit or import
    assert (said["items"], said["scores_read"], said["scores_added"], said["scores_already_in_log"]) == (5, 4, 3, 1)
    assert said["scores_read"] == len(rows)


def test_a_rerun_over_another_version_of_a_file_keyed_by_its_content_is_another_audit(tmp_path, capsys):
    """Rows keyed by the file's content: another version is another audit (its `source` differs), so
    the folder refuses it and its manifest is left as it was; only the digest of the bytes read is
    left out of the folder's identity."""
    data, table, out = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "out"
    data.write_text("text\nnice one mate\n", encoding="utf-8")
    table.write_text("text,score\nnice one mate,0.1\n", encoding="utf-8")
    args = ["audit", str(data), "--detector", f"cached:{table}:text=score:mine", "--quiet",
            "--engine", "ray", "--out-parquet", str(out)]
    assert main(args) == 0
    before = (out / "manifest.json").read_bytes()
    with data.open("a", encoding="utf-8") as f:
        f.write("see you soon\n")
    capsys.readouterr()
    assert main(args) == 2
    assert "holds the results of another audit" in capsys.readouterr().err
    assert (out / "manifest.json").read_bytes() == before
