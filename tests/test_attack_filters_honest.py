"""Quality filters are reported as run: `modlens attack` judges with the study's
detectors by default, as its help says, and the TaeBench export states per filter how many
successes were checked, passed and not checked; it never says a success passed every filter
when one of them was not run."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.detectors import registry
from log_helpers import sql

TOXIC = "you are an idiot"
# the target and a second copy of it: the copy is fooled by the very same edits, so as a judge it
# rejects every flip (TaeBench's AND rule), and as a scorer it says every success lost its label
TWO_COPIES = '[[detectors]]\nname = "profanity-check"\n\n[[detectors]]\nname = "profanity-check"\nid = "copy"\n'
ONE = '[[detectors]]\nname = "profanity-check"\n'


@pytest.fixture(autouse=True)
def _profanity_check():
    assert registry.status("profanity-check").status == "loaded"  # installed with modlens


def _study(tmp_path, text: str):
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _variant(capsys) -> dict:
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return next(r for r in rows if r["kind"] == "variant")


def test_attack_judges_with_the_study_detectors_by_default(tmp_path, capsys):
    args = ["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--text", TOXIC,
            "--config", _study(tmp_path, TWO_COPIES)]
    assert main(args) == 0
    v = _variant(capsys)
    assert v["params"]["judges"] == ["profanity-check"]  # the copy, by its model name
    assert v["attack"]["status"] == "failed" and v["attack"]["reason"] == "every flipping candidate was rejected by the judges"
    assert set(v["scores"]) == {"profanity-check", "copy"}
    assert main([*args, "--no-ensemble"]) == 0  # no judges: the copy only scores the result
    v = _variant(capsys)
    assert v["params"]["judges"] == [] and v["attack"]["status"] == "success"
    assert v["scores"]["copy"]["above_threshold"] is False


def test_attack_on_a_dataset_records_the_judges_verdicts(tmp_path, capsys):
    seeds = tmp_path / "seeds.csv"
    seeds.write_text(f"text,toxic\n{TOXIC},1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    assert main(["attack", str(seeds), "--recipe", "deepwordbug", "--target", "profanity-check", "--db", str(db),
                 "--quiet", "--config", _study(tmp_path, TWO_COPIES)]) == 0
    (row,) = sql(db, "SELECT attack_json FROM variants WHERE attack_json IS NOT NULL")
    a = json.loads(row["attack_json"])
    assert a["judge_queries"] > 0 and a["rejected_by_ensemble"] > 0 and a["status"] == "failed"


@pytest.fixture
def unjudged_log(tmp_path):
    """Successes no other detector saw: the label filter cannot be checked for any of them."""
    seeds = tmp_path / "seeds.csv"
    seeds.write_text(f"text,toxic\n{TOXIC},1\nshut up you stupid moron,1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    assert main(["attack", str(seeds), "--recipe", "deepwordbug", "--target", "profanity-check", "--db", str(db),
                 "--quiet", "--no-ensemble", "--config", _study(tmp_path, ONE)]) == 0
    return db


def test_export_counts_per_filter_what_was_checked_passed_and_not_checked(unjudged_log, tmp_path, capsys):
    out = tmp_path / "tb"
    assert main(["export", "--db", str(unjudged_log), "--taebench", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "taebench.jsonl").read_text(encoding="utf-8").splitlines()]
    wins = [r for r in rows if r["success"]]
    assert wins
    for r in wins:  # the label filter did not run: no success passed every filter
        assert r["filters"]["label"]["ok"] is None and r["label_ok"] is None
        failed_one = any(f["ok"] is False for f in r["filters"].values())
        assert r["passed_filters"] is (False if failed_one else None) and "label" in r["filters_not_checked"]
    summary = json.loads((out / "manifest.json").read_text())["quality"]["summary"]
    for name in ("dedup", "label", "meaning", "fluency"):  # recounted from the rows' own verdicts
        verdicts = [r["filters"][name]["ok"] for r in wins]
        assert summary["per_filter"][name] == {"checked": sum(v is not None for v in verdicts),
                                               "passed": sum(v is True for v in verdicts),
                                               "failed": sum(v is False for v in verdicts),
                                               "not_checked": sum(v is None for v in verdicts)}
    assert summary["per_filter"]["label"]["not_checked"] == len(wins) and summary["passed_every_filter"] == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "passing every quality filter" not in readme
    assert f"| `label` | 0 | 0 | 0 | {len(wins)} |" in readme
    assert "0 passed every filter" in readme and "wrote" in capsys.readouterr().out


def test_add_attacks_takes_only_successes_every_filter_checked_and_passed(unjudged_log, tmp_path, capsys):
    from modlens.study import folder

    root = tmp_path / "study"
    folder.init_folder(root)
    wins = len(sql(unjudged_log, "SELECT 1 FROM variants WHERE json_extract(attack_json, '$.status') = 'success'"))
    assert wins
    capsys.readouterr()
    assert main(["study", "add-attacks", str(root), "--from", str(unjudged_log)]) == 0
    out = capsys.readouterr().out
    # the label filter could not run on any of them: none is queued as if it had passed
    assert "added 0 review item(s)" in out and "because a filter was not checked" in out
    assert not folder.load_folder(root).study.review
    assert main(["study", "add-attacks", str(root), "--from", str(unjudged_log), "--unfiltered"]) == 0
    assert len(folder.load_folder(root).study.review) == wins
