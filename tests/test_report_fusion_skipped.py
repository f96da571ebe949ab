"""The fusion section's "seeds a fusion skipped" are the seeds no fuse run has fused.

`modlens fuse` records in each run what it could not fuse (a seed with no picture for either
keyword, for I+T, without --images). A later run given the pictures fuses that seed, and the report
still counted it among the skipped, with the first run's reason, beside the case that run made."""
from __future__ import annotations


from PIL import Image, ImageDraw

from modlens.analysis.report import render_html, report_from_db
from modlens.cli import main
from modlens.studylog.store import StudyLog

PAIRS = "content_type,a,b\nabuse_hate,women,wonderful\nabuse_hate,women,pigs\n"
NO_PICTURE = "women are wonderful"  # neither keyword has an emoji: I+T needs --images for it


def _fuse(capsys, *args: str) -> None:
    assert main(["fuse", "--fusion", "I+T", "--no-oracle", "--quiet", *args]) == 0, capsys.readouterr().err
    capsys.readouterr()


def _pairs_and_a_picture(tmp_path, db) -> list[str]:
    """The pairs file, and a picture for 'women' under tmp_path/images (given to a run with --images):
    the fuse arguments that name the pairs and the log `db`."""
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS, encoding="utf-8")
    folder = tmp_path / "images" / "women"
    folder.mkdir(parents=True)
    picture = Image.new("RGB", (480, 360), "white")
    ImageDraw.Draw(picture).ellipse((150, 90, 330, 270), fill=(200, 40, 40))
    picture.save(folder / "one.png")
    return ["--pairs-file", str(pairs), "--db", str(db)]


def test_a_seed_a_later_run_fused_is_not_reported_skipped(capsys, tmp_path, modlens_home):
    db = tmp_path / "study.sqlite"
    common = _pairs_and_a_picture(tmp_path, db)

    _fuse(capsys, *common, "--score", "--detectors", "profanity-check")
    first = report_from_db(db)["sections"]["fusion"]
    assert first["skipped"]["total"] == 1  # the run said so: no picture for 'women' or 'wonderful'

    _fuse(capsys, *common, "--images", str(tmp_path / "images"), "--score", "--detectors", "profanity-check")
    with StudyLog(db, readonly=True) as log:
        fused = {r["text"] for r in log.query("SELECT t.text FROM fused_cases f JOIN texts t "
                                               "ON t.text_id = f.seed_text_id WHERE f.fusion = 'I+T'")}
    assert NO_PICTURE in fused  # the second run fused it
    report = report_from_db(db)
    s = report["sections"]["fusion"]
    assert s["skipped"] == {"total": 0, "by_cell": [], "reasons": []}
    assert "Seeds a fusion skipped" not in render_html(report)


def test_a_seed_no_run_fused_stays_skipped(capsys, tmp_path, modlens_home):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS, encoding="utf-8")
    db = tmp_path / "study.sqlite"
    for _ in range(2):  # run twice: still one seed, counted once
        _fuse(capsys, "--pairs-file", str(pairs), "--db", str(db), "--score", "--detectors", "profanity-check")
    s = report_from_db(db)["sections"]["fusion"]
    assert s["skipped"]["total"] == 1
    assert s["skipped"]["by_cell"] == [{"content_type": "abuse_hate", "fusion": "I+T", "seeds": 1}]
    assert [r["seeds"] for r in s["skipped"]["reasons"]] == [1]
    assert "'wonderful'" in s["skipped"]["reasons"][0]["reason"]




def test_a_skip_logged_without_its_content_type_is_matched_by_fusion_and_seed(capsys, tmp_path, modlens_home):
    """A fuse run from before the skipped seeds carried their content type: its record is keyed by
    fusion and seed only, and a later run that fused the seed must clear it all the same."""
    import json
    import sqlite3

    db = tmp_path / "study.sqlite"
    common = _pairs_and_a_picture(tmp_path, db)
    _fuse(capsys, *common, "--score", "--detectors", "profanity-check")
    with sqlite3.connect(db) as con:  # the older run's record, as it was logged then
        (run_id, params), = con.execute("SELECT run_id, params_json FROM audit_runs WHERE dataset = 'fuse'")
        params = json.loads(params)
        for s in params["skipped"]:
            del s["content_type"]
        con.execute("UPDATE audit_runs SET params_json = ? WHERE run_id = ?", (json.dumps(params), run_id))
    assert report_from_db(db)["sections"]["fusion"]["skipped"]["total"] == 1
    _fuse(capsys, *common, "--images", str(tmp_path / "images"), "--score", "--detectors", "profanity-check")
    assert report_from_db(db)["sections"]["fusion"]["skipped"] == {"total": 0, "by_cell": [], "reasons": []}
