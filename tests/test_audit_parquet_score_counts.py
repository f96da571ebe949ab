"""`modlens audit --out-parquet DIR` counts scores per text, as the log the folder is imported into
holds them (one row per text and detector) and as the audit into a log counts them: a text repeated
in a later chunk is one score, whether its score is good or an error."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from modlens.cli import main


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
                 "--engine", engine, "--out-parquet", str(out)]) == 0
    said = capsys.readouterr()
    summary = json.loads(said.out)
    (key,) = summary["score_errors"]
    tally = summary["score_errors"][key]
    assert main(["import", str(out), "--db", str(db)]) == 0
    capsys.readouterr()
    assert _log_rows(db) == (3, 2)  # three texts, two without an answer
    assert (tally["scores"], tally["errors"]) == (3, 2)
    assert f"detector {key}: 2 of the 3 texts it scored have an error as their score" in said.err
