"""A resumed audit's summary and exit code describe its run, not only this attempt: a step that failed for
some texts in an attempt the audit resumes after (its items are skipped, so this attempt never meets
them) is still in the run's `step_errors` rows, and the audit says so and exits 1, as the audit that
ran in one go would."""
from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from modlens.audit import run_audit
from modlens.cli import main as cli_main
from modlens.config import parse_study
from modlens.normalize.steps import REGISTRY
from test_audit_step_errors_exit import BREAKS, BrittleStep, plug_in

# the one text the brittle step fails on is in the first chunk (2 items), which the interrupted attempt records
ROWS = [f"what a {BREAKS} you are", "thanks for the nice post", "great point well made", "see you soon"]


def _interrupt(n_done):
    raise KeyboardInterrupt


def test_a_resumed_audit_says_the_step_errors_of_the_attempt_it_resumed_after_and_exits_1(tmp_path, monkeypatch,
                                                                                          capsys):
    plug_in(monkeypatch, REGISTRY, "brittle", BrittleStep)
    data, study, db = tmp_path / "c.csv", tmp_path / "study.toml", tmp_path / "log.sqlite"
    with open(data, "w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *[[r] for r in ROWS]])
    study.write_text('[normalizer]\nsteps = ["brittle", "leet"]\n')
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C once the first chunk is in the log
        run_audit(str(data), db=db, study=parse_study({"normalizer": {"steps": ["brittle", "leet"]}}),
                  detectors=["profanity-check"], normalize=True, chunk_size=2, progress=False, on_chunk=_interrupt)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT run_id, step FROM step_errors").fetchall() == [(1, "normalize")]
    code = cli_main(["audit", str(data), "--db", str(db), "--detectors", "profanity-check", "--study", str(study),
                     "--normalize", "--chunk", "2", "--quiet"])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["resumed"] and summary["run_id"] == 1 and summary["n_skipped"] == 2
    got = summary["step_errors"]["normalize"]
    assert got["errors"] == 1 and got["earlier"] == 1 and "cannot fold 'moron'" in got["first"]
    assert code == 1
    assert "step normalize (" in err and ") failed for 1 text (of which 1 in an earlier attempt" in err


def test_a_resumed_audit_says_the_score_errors_of_the_attempt_it_resumed_after_and_exits_1(tmp_path, capsys):
    """A detector that gave no score for a text of the first chunk (a cached table without it: an error
    row), the audit interrupted after that chunk, then resumed: the error is still the text's score in
    the log, so the summary says it of the run and the audit exits 1."""
    data, table, db = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "log.sqlite"
    data.write_text("text\nwho knows\nnice one mate\nsee you soon\ngreat point\n", encoding="utf-8")
    table.write_text("text,score\nnice one mate,0.1\nsee you soon,0.2\ngreat point,0.3\n", encoding="utf-8")
    spec = f"cached:{table}:text=score:mine"
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(data), db=db, detectors=[spec], chunk_size=2, progress=False, on_chunk=_interrupt)
    code = cli_main(["audit", str(data), "--db", str(db), "--detector", spec, "--chunk", "2", "--quiet"])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["resumed"] and summary["n_skipped"] == 2
    got = summary["score_errors"]["mine"]
    assert (got["scores"], got["errors"], got["earlier"]) == (2, 0, 1)  # this attempt's two texts scored well
    with sqlite3.connect(db) as con:  # the event: the error row "who knows" still has as its score
        assert con.execute("SELECT s.error FROM scores s JOIN texts t USING (text_id) WHERE s.error IS NOT NULL"
                           ).fetchall() == [(got["earlier_first"],)]
    assert code == 1
    assert "1 text an earlier attempt of the run scored has an error" in err
    assert "detector mine: 1 of the texts an earlier attempt of the run scored has no score" in err


def test_a_resumed_audit_into_a_parquet_folder_says_the_errors_of_its_earlier_chunks(tmp_path, monkeypatch):
    """The same into an --out-parquet folder: its earlier chunks' step_errors and score shards are the
    run's, so the resumed audit's summary counts them (and the CLI exits 1 on them)."""
    plug_in(monkeypatch, REGISTRY, "brittle", BrittleStep)
    data, table, out = tmp_path / "c.csv", tmp_path / "scores.csv", tmp_path / "out"
    data.write_text(f"text\nwho knows\nwhat a {BREAKS} you are\nsee you soon\ngreat point\n", encoding="utf-8")
    table.write_text(f"text,score\nwhat a {BREAKS} you are,0.9\nsee you soon,0.2\ngreat point,0.3\n", encoding="utf-8")
    args = dict(db=tmp_path / "unused.sqlite", study=parse_study({"normalizer": {"steps": ["brittle"]}}),
                detectors=[f"cached:{table}:text=score:mine"], normalize=True, chunk_size=2, progress=False,
                out_parquet=out)
    with pytest.raises(KeyboardInterrupt):
        run_audit(str(data), on_chunk=_interrupt, **args)
    again = run_audit(str(data), **args)
    assert again.resumed and again.n_skipped == 2
    step = again.step_errors["normalize"]
    assert (step["errors"], step["earlier"]) == (1, 1) and "cannot fold 'moron'" in step["first"]
    got = again.score_errors["mine"]
    assert (got["errors"], got["earlier"]) == (0, 1) and got["earlier_first"].startswith("missing: ")
