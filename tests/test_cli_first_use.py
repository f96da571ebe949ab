"""What a new user meets first: a whole-file audit's progress bar has a total, an
interrupted audit prints the command that resumes it (and that command does), a mistyped flag or
dataset shorthand gets its close match, and `perturb` with its defaults makes variants of the
obvious insult."""
from __future__ import annotations

import json
import shlex
import sqlite3


from modlens.audit import run_audit
from modlens.audit.auditor import Auditor
from modlens.audit.run import estimated_total
from modlens.cli import main
from modlens.datasets import registry
from modlens.detectors import registry as detectors
from modlens.detectors.base import Detector


class LengthDetector(Detector):
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


def _csv(tmp_path, n: int):
    f = tmp_path / "comments.csv"
    f.write_text("text,label\n" + "".join(f"comment number {i},{i % 2}\n" for i in range(n)), encoding="utf-8")
    return f


def test_a_whole_file_audit_has_a_total(tmp_path, capsys):
    f = _csv(tmp_path, 37)
    data = registry.load(str(f))
    assert data.size is None  # a streamed CSV: the reader does not know its size, the line count does
    assert estimated_total(data, None) == 37
    assert estimated_total(data, 10) == 10 and estimated_total(data, 100) == 37
    run_audit(str(f), db=tmp_path / "l.sqlite", detector_objects={"len": LengthDetector()}, progress=True,
              chunk_size=8)
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert any("37/37" in line for line in bar), bar  # the bar shows done/total (and so an ETA), not a bare count


def test_the_total_counts_records_not_lines(tmp_path, capsys):
    # quoted fields with line breaks (as in Davidson's tweets), a blank line and a TSV: 5 records
    f = tmp_path / "multiline.csv"
    f.write_text('text,label\n"first line\nsecond line",1\nplain,0\n\n"a ""quoted""\n\nthree-line one",1\n'
                 '"x",0\nlast without newline,1', encoding="utf-8")
    data = registry.load(str(f))
    assert estimated_total(data, None) == 5 == len(list(data.iter_items()))
    run_audit(str(f), db=tmp_path / "l.sqlite", detector_objects={"len": LengthDetector()}, progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert any("5/5" in line for line in bar), bar
    tsv = tmp_path / "rows.tsv"
    tsv.write_text('category\ttext\nA\t"one\ttab\nand a break"\nB\tsays 5" tall\n', encoding="utf-8")
    assert estimated_total(registry.load(str(tsv)), None) == 2 == len(list(registry.load(str(tsv)).iter_items()))


def test_davidsons_total_is_its_24783_tweets():
    # Davidson et al. 2017 report 24,783 tweets; the shipped CSV spreads them over 26,953 lines
    data = registry.load("davidson")
    assert estimated_total(data, None) == 24783


def _profanity():
    assert detectors.status("profanity-check").status == "loaded"  # installed with modlens


def test_an_interrupted_audit_prints_the_command_that_resumes_it(tmp_path, capsys, monkeypatch):
    _profanity()
    f = _csv(tmp_path, 30)
    db = tmp_path / "log.sqlite"
    argv = ["audit", str(f), "--db", str(db), "--detectors", "profanity-check", "--chunk", "10", "--quiet"]
    real = Auditor.progress

    def ctrl_c_after_the_first_chunk(self, n_done):
        real(self, n_done)
        raise KeyboardInterrupt

    monkeypatch.setattr(Auditor, "progress", ctrl_c_after_the_first_chunk)
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "modlens audit: interrupted: 10 items are in the log (run 1, interrupted)" in err
    resume = [line.strip() for line in err.splitlines() if line.strip().startswith("resume:")]
    assert len(resume) == 1
    command = shlex.split(resume[0].removeprefix("resume:"))
    assert command == ["modlens", *argv]
    monkeypatch.setattr(Auditor, "progress", real)
    assert main(command[1:]) == 0  # the printed command, run as printed, resumes the same run
    result = json.loads(capsys.readouterr().out)
    assert result["resumed"] is True and result["run_id"] == 1
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM comments").fetchone()[0] == 30


def test_a_mistyped_flag_gets_its_close_match(capsys):
    assert main(["audit", "hatecheck", "--limt", "5"]) == 2
    err = capsys.readouterr().err
    assert "modlens audit: unrecognized argument(s): --limt 5" in err and "did you mean --limit?" in err


def test_a_mistyped_dataset_shorthand_gets_its_close_match(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file of that name here
    assert main(["audit", "hatechek", "--db", str(tmp_path / "l.sqlite"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "hatechek: no such file, and not one of the shorthands" in err and "did you mean hatecheck?" in err


def test_perturb_with_its_defaults_makes_variants_of_an_obvious_insult(capsys):
    assert main(["perturb", "you are a stupid idiot"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert lines[0]["kind"] == "source" and lines[0]["target"]
    variants = [line for line in lines if line["kind"] == "variant"]
    assert variants and all(v["text"] != "you are a stupid idiot" for v in variants)
    assert all(set(v["scores"]) == set(lines[0]["scores"]) for v in variants)  # every variant scored, by name+version
    assert all(s["name"] and s["version"] for v in variants for s in v["scores"].values())
