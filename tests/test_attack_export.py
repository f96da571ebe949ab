"""`modlens export --taebench DIR`: the attack results of a real audit log as a TaeBench-style
dataset, read back from Parquet and JSONL and checked against the log's rows."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from modlens import __version__
from modlens.audit.export_taebench import COLUMNS, export_taebench
from modlens.cli import main
from log_helpers import sql

N_ROWS = 12


@pytest.fixture(scope="module")
def log(data_dir, tmp_path_factory):
    """A real TAE audit against profanity-check without judges; minilm-toxicity scores every
    adversarial text, so the label filter has something to say."""
    tmp = tmp_path_factory.mktemp("tb")
    db = tmp / "log.sqlite"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MODLENS_HOME", str(tmp / "home"))
        assert main(["audit", str(data_dir / "noisyhate" / "dev.csv"), "--db", str(db), "--quiet", "--limit", str(N_ROWS),
                     "--detectors", "profanity-check", "minilm-toxicity", "--attack", "tae", "--targets",
                     "profanity-check", "--no-ensemble", "--max-queries", "60"]) == 0
    assert sql(db, "SELECT 1 FROM detectors WHERE name = 'minilm-toxicity'"), "minilm-toxicity did not load"
    return db


@pytest.fixture(scope="module")
def exported(log, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "taebench"
    assert main(["export", "--db", str(log), "--taebench", str(out)]) == 0
    return out


def test_parquet_and_jsonl_hold_the_same_rows_with_every_column(log, exported):
    table = pq.read_table(exported / "taebench.parquet")
    assert table.column_names == [c[0] for c in COLUMNS]
    parquet = table.to_pylist()
    jsonl = [json.loads(line) for line in (exported / "taebench.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(parquet) == len(jsonl) == N_ROWS  # one attack per seed, one target
    for p, j in zip(parquet, jsonl):
        assert list(j) == [c[0] for c in COLUMNS]
        for name, kind, _ in COLUMNS:  # JSON columns: strings in Parquet, objects in JSONL
            assert (json.loads(p[name]) if kind == "json" and p[name] is not None else p[name]) == j[name]


def test_values_match_the_study_log(log, exported):
    rows = {r["example_id"]: r for r in map(json.loads, (exported / "taebench.jsonl").read_text().splitlines())}
    logged = sql(log, "SELECT v.variant_id, s.text AS seed, t.text AS adv, v.attack_json, v.seed AS rng "
                      "FROM variants v JOIN texts s ON s.text_id = v.source_text_id JOIN texts t ON t.text_id = v.text_id "
                      "WHERE v.attack_json IS NOT NULL")
    assert set(rows) == {r["variant_id"] for r in logged}
    for r in logged:
        a, row = json.loads(r["attack_json"]), rows[r["variant_id"]]
        assert (row["seed_text"], row["adversarial_text"], row["seed"]) == (r["seed"], r["adv"], r["rng"])
        assert (row["queries"], row["status"], row["target_version"]) == (a["queries"], a["status"], a["target_version"])
        assert row["target"] == "profanity-check" and row["recipe"] == "char_greedy" and row["goal"] == "tae"
        assert row["success"] == (a["status"] == "success")
        assert row["words_changed_share"] == pytest.approx(a["words_edited"] / a["n_words"], abs=1e-6)  # logged to 6 places
        if row["success"]:
            assert set(row["filters"]) == {"dedup", "label", "meaning", "fluency"}
            oks = [f["ok"] for f in row["filters"].values()]  # passed only when every filter ran and passed
            assert row["passed_filters"] == (False if False in oks else None if None in oks else True)
            assert row["filters_not_checked"] == [k for k, f in row["filters"].items() if f["ok"] is None]
        else:
            assert row["filters"] is None and row["passed_filters"] is None


def test_label_filter_recounted_from_the_other_detectors_logged_score(log, exported):
    """No judges ran, so the label check uses minilm-toxicity's logged score of each text:
    it must still call the TAE toxic."""
    rows = [json.loads(x) for x in (exported / "taebench.jsonl").read_text().splitlines()]
    successes = [r for r in rows if r["success"]]
    assert successes
    for r in successes:
        (score,) = sql(log, "SELECT s.toxicity, d.threshold FROM scores s JOIN detectors d USING (detector_id) "
                            "JOIN texts t USING (text_id) WHERE d.name = 'minilm-toxicity' AND t.text = ?",
                       (r["adversarial_text"],))
        assert r["label_ok"] == (score["toxicity"] >= score["threshold"])
        assert r["filters"]["label"]["source"] == "logged scores"


def test_manifest_and_readme(exported):
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["format"] == "taebench" and manifest["modlens_version"] == __version__
    assert [c["name"] for c in manifest["columns"]] == [c[0] for c in COLUMNS]
    s = manifest["quality"]["summary"]
    rows = [json.loads(x) for x in (exported / "taebench.jsonl").read_text().splitlines()]
    assert s["successes"] == sum(r["success"] for r in rows)
    assert s["passed_every_filter"] == sum(r["passed_filters"] is True for r in rows)
    assert s["kept"] == sum(r["success"] and r["passed_filters"] is not False for r in rows)
    readme = (exported / "README.md").read_text()
    assert "`adversarial_text`" in readme and __version__ in readme


def test_successes_only(log, tmp_path):
    manifest = export_taebench(log, tmp_path / "s", successes_only=True)
    rows = pq.read_table(tmp_path / "s" / "taebench.parquet").to_pylist()
    assert rows and all(r["success"] for r in rows) and manifest["rows"] == len(rows)


def test_missing_log_is_an_error_and_writes_nothing(tmp_path, capsys):
    assert main(["export", "--db", str(tmp_path / "none.sqlite"), "--taebench", str(tmp_path / "out")]) == 3
    assert not (tmp_path / "out").exists()
    assert "no study log" in capsys.readouterr().err
