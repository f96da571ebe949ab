"""An audit interrupted under one normalizer version is not resumed under another: the run (and an
--out-parquet folder's manifest) names the normalizer it ran, as it names its detectors."""
import json
import sqlite3

import pytest

from modlens.audit import run_audit
from modlens.normalize import pipeline
from modlens.normalize.pipeline import build_normalizer
from modlens.services.errors import SetupError

PERSPECTIVE = "cached:{path}:clean=perspective_clean,perturbed=perspective_perturbed:perspective"


def interrupt(n_done):
    raise KeyboardInterrupt


def test_an_audit_interrupted_under_another_normalizer_version_starts_a_new_run(data_dir, tmp_path, monkeypatch):
    nh = data_dir / "noisyhate" / "dev.csv"
    spec, db = [PERSPECTIVE.format(path=nh)], tmp_path / "log.sqlite"
    with monkeypatch.context() as m:  # the audit interrupted under the normalizer's previous revision
        m.setattr(pipeline, "PIPELINE_REVISION", "3")
        old = build_normalizer()
        with pytest.raises(KeyboardInterrupt):
            run_audit(str(nh), db=db, detectors=spec, normalize=True, limit=20, chunk_size=10, progress=False,
                      on_chunk=interrupt)
    new = build_normalizer()
    assert old.version != new.version
    again = run_audit(str(nh), db=db, detectors=spec, normalize=True, limit=20, chunk_size=10, progress=False)
    assert not again.resumed and again.run_id == 2 and again.n_skipped == 0
    con = sqlite3.connect(db)
    runs = [(s, json.loads(p).get("normalizer")) for s, p in con.execute(
        "SELECT status, params_json FROM audit_runs ORDER BY run_id")]
    assert runs == [("interrupted", f"{old.name}@{old.version}"), ("finished", f"{new.name}@{new.version}")]
    # under its own normalizer version, the interrupted run resumes
    with monkeypatch.context() as m:
        m.setattr(pipeline, "PIPELINE_REVISION", "3")
        resumed = run_audit(str(nh), db=db, detectors=spec, normalize=True, limit=20, chunk_size=10,
                            progress=False)
    assert resumed.resumed and resumed.run_id == 1 and resumed.n_skipped == 10


def test_an_out_parquet_folder_written_under_another_normalizer_version_is_refused(data_dir, tmp_path, monkeypatch):
    nh = data_dir / "noisyhate" / "dev.csv"
    spec, out = [PERSPECTIVE.format(path=nh)], tmp_path / "shards"
    with monkeypatch.context() as m:
        m.setattr(pipeline, "PIPELINE_REVISION", "3")
        old = build_normalizer()
        with pytest.raises(KeyboardInterrupt):
            run_audit(str(nh), db=tmp_path / "unused.sqlite", detectors=spec, normalize=True, limit=20,
                      chunk_size=10, progress=False, on_chunk=interrupt, out_parquet=out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["params"]["normalizer"] == f"{old.name}@{old.version}"
    with pytest.raises(SetupError, match="another audit"):
        run_audit(str(nh), db=tmp_path / "unused.sqlite", detectors=spec, normalize=True, limit=20,
                  chunk_size=10, progress=False, out_parquet=out)
