"""A detector that fails mid-audit (a call that raises, a text it has no answer for) leaves error rows,
and the audit goes on (docs/SCALE.md). What the audit then says must be what the log holds: per
detector, how many of the scores it wrote are errors and the first error's text, in the summary and on
stderr, never an `n_scored` alone that reads as that many answers; and its exit status is 1 (failed),
after the summary, as `modlens score`'s is when a text got no score: 0 would say every score asked for
was made."""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Sequence

from modlens.audit import run_audit
from modlens.cli import main
from modlens.detectors.base import Detector


class CrashesOnInsults(Detector):
    """A model whose call raises when its batch holds 'idiot' (as a model that runs out of memory on
    one batch): every text of that call gets an error row."""
    name, version, labels, toxicity_label = "crashy", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        if any("idiot" in t for t in texts):
            raise RuntimeError("model crashed")
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


def _errors(db) -> dict[str, tuple[int, int]]:
    con = sqlite3.connect(db)
    try:
        return {name: (n, errors) for name, n, errors in con.execute(
            "SELECT d.name, count(*), count(s.error) FROM scores s JOIN detectors d USING (detector_id) GROUP BY d.name")}
    finally:
        con.close()


def test_the_summary_counts_the_error_rows_the_log_holds(tmp_path):
    path, db = tmp_path / "c.csv", tmp_path / "log.sqlite"
    path.write_text("text\n" + "".join(f"have a nice day {i}\n" for i in range(10))
                    + "".join(f"you idiot {i}\n" for i in range(10)), encoding="utf-8")
    result = run_audit(str(path), db=db, detector_objects={"c": CrashesOnInsults()}, chunk_size=10, progress=False)
    assert _errors(db) == {"crashy": (20, 10)}
    assert result.score_errors == {"c": {"scores": 20, "errors": 10, "first": "RuntimeError: model crashed"}}
    assert any("10 of the 20 texts it scored have an error as their score" in w and "RuntimeError: model crashed" in w for w in result.warnings)
    again = run_audit(str(path), db=db, detector_objects={"c": CrashesOnInsults()}, chunk_size=10, progress=False)
    assert again.score_errors == {"c": {"scores": 10, "errors": 10, "first": "RuntimeError: model crashed"}}


def test_a_detector_without_answers_is_said_on_stderr(tmp_path, capsys):
    data, table, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "log.sqlite"
    data.write_text("text\n" + "".join(f"comment {i}\n" for i in range(8)), encoding="utf-8")
    table.write_text("text,score\n" + "".join(f"comment {i},0.{i}\n" for i in range(3)), encoding="utf-8")
    assert main(["audit", str(data), "--db", str(db), "--detector", f"cached:{table}:text=score:mine", "--quiet"]) == 1
    out = capsys.readouterr()
    ((name, (n, errors)),) = _errors(db).items()
    assert (n, errors) == (8, 5)
    summary = json.loads(out.out)
    (key,) = summary["score_errors"]
    assert summary["score_errors"][key]["errors"] == 5 and summary["score_errors"][key]["scores"] == 8
    assert f"modlens audit: detector {key}: 5 of the 8 texts it scored have an error as their score" in out.err
    # the last line: the failure the exit status reports, naming the detector (as `modlens score`'s)
    assert out.err.splitlines()[-2] == f"modlens audit: detector {key} gave no score for 5 of the 8 texts it scored"


def test_an_audit_whose_every_score_was_made_exits_0(tmp_path, capsys):
    """The same data, the table holding every text: nothing failed, exit 0 and no failure line."""
    data, table, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "log.sqlite"
    data.write_text("text\n" + "".join(f"comment {i}\n" for i in range(8)), encoding="utf-8")
    table.write_text("text,score\n" + "".join(f"comment {i},0.{i}\n" for i in range(8)), encoding="utf-8")
    assert main(["audit", str(data), "--db", str(db), "--detector", f"cached:{table}:text=score:mine", "--quiet"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["score_errors"] == {} and "gave no score" not in out.err



def test_a_text_scored_again_in_the_run_is_one_row_not_two(tmp_path, capsys):
    """A text with an error row is scored again when the run meets it again (here repeated in a later
    chunk): the new answer replaces the row, so the summary counts one row, as the log holds it."""
    data, table, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "log.sqlite"
    data.write_text("text\nhello there friend\nnice one mate\nhello there friend\nsee you soon\n", encoding="utf-8")
    table.write_text("text,score\nnice one mate,0.1\n", encoding="utf-8")
    assert main(["audit", str(data), "--db", str(db), "--detector", f"cached:{table}:text=score:mine",
                 "--chunk", "2", "--quiet"]) == 1
    out = capsys.readouterr()
    assert _errors(db) == {"mine": (3, 2)}
    (tally,) = json.loads(out.out)["score_errors"].values()
    assert (tally["scores"], tally["errors"]) == (3, 2)
    assert ": 2 of the 3 texts it scored have an error as their score" in out.err

def test_an_attack_over_a_dataset_says_its_score_errors_on_stderr_too(tmp_path, capsys):
    """`modlens attack DATASET` is the audit's attack: a detector without answers for the attack's
    texts leaves error rows there too, and its stderr says so as the audit's does."""
    data, table, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "log.sqlite"
    data.write_text("text,toxic\nyou are a stupid idiot,1\nhave a nice day,0\nyou dumb moron go away,1\n",
                    encoding="utf-8")
    table.write_text("text,score\nhave a nice day,0.1\n", encoding="utf-8")
    assert main(["attack", str(data), "--recipe", "deepwordbug", "--target", "profanity-check", "--no-ensemble",
                 "--detector", f"cached:{table}:text=score:mine", "--db", str(db), "--quiet"]) == 1
    out = capsys.readouterr()
    logged = _errors(db)["mine"]
    summary = json.loads(out.out)
    (key,) = summary["score_errors"]
    tally = summary["score_errors"][key]
    assert (tally["scores"], tally["errors"]) == logged and logged[1] > 0
    assert f"modlens attack: detector {key}: {logged[1]} of the {logged[0]} texts it scored have an error as their score" in out.err
    assert f"modlens attack: detector {key} gave no score for {logged[1]} of the {logged[0]} texts it scored" in out.err
