"""`modlens fuse`: cases and media into a study log (a rerun adds nothing), the oracle with a real
detector, --export's manifest, and errors with their fixes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from modlens.cli import main
from modlens.media.store import MediaStore
from modlens.studylog.store import StudyLog

PAIRS = "content_type,a,b\nabuse_hate,women,pigs\nabuse_hate,women,wonderful\nsexual,lick,dick\n"
FAST = ["--fusion", "T+E", "--fusion", "T+I", "--fusion", "I", "--quiet"]


def fuse(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["fuse", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and out.startswith("{") else {}), err


@pytest.fixture
def pairs_file(tmp_path) -> Path:
    f = tmp_path / "pairs.csv"
    f.write_text(PAIRS, encoding="utf-8")
    return f


def counts(db: Path) -> dict[str, int]:
    with StudyLog(db) as log:
        return {t: log.query(f"SELECT count(*) AS n FROM {t}")[0]["n"]
                for t in ("fused_cases", "media", "case_media", "case_parts", "audit_runs")}


def test_fuse_writes_cases_and_media_and_a_rerun_adds_nothing(capsys, tmp_path, pairs_file, modlens_home):
    db = tmp_path / "study.sqlite"
    args = ["--pairs-file", str(pairs_file), "--detectors", "profanity-check", "--db", str(db), *FAST]
    code, summary, err = fuse(capsys, *args)
    assert code == 0, err
    # the oracle (profanity-check) drops the benign seed "women are wonderful"
    assert summary["oracle"]["kept"] == 2 and summary["oracle"]["dropped"] == 1
    # 2 seeds x (T+E, T+I, I): every one can take each fusion (both B keywords have an emoji)
    assert summary["generation"]["by_fusion"] == {"T+E": 2, "T+I": 2, "I": 2}
    assert summary["recorded"]["added"] == 6
    assert summary["media_dir"] == str(modlens_home / "media")
    first = counts(db)
    assert first["fused_cases"] == 6 and first["audit_runs"] == 1 and first["case_parts"] == 12
    with StudyLog(db) as log:
        rows = log.query("SELECT m.sha256, m.path FROM media m")
        run = log.query("SELECT dataset, params_json, status FROM audit_runs")[0]
        seeds = {r["text"] for r in log.query(
            "SELECT t.text FROM fused_cases f JOIN texts t ON t.text_id = f.seed_text_id")}
    store = MediaStore(modlens_home / "media")
    for r in rows:  # every media row's file is there, under its hash
        assert hashlib.sha256((store.root / r["path"]).read_bytes()).hexdigest() == r["sha256"]
    assert seeds == {"women are pigs", "lick my dick"} or seeds == {"women are pigs", "lick your dick"}
    params = json.loads(run["params_json"])
    assert run["dataset"] == "fuse" and run["status"] == "finished"
    assert params["oracle"]["toxic_by"]["women are pigs"] == ["profanity-check"]

    code, again, err = fuse(capsys, *args)
    assert code == 0, err
    assert again["recorded"] == {"run_id": summary["recorded"]["run_id"], "added": 0, "existing": 6,
                                 "files_written": 0}
    assert counts(db) == first


def test_fuse_export_manifest_matches_files(capsys, tmp_path, pairs_file):
    out = tmp_path / "export"
    code, summary, err = fuse(capsys, "--pairs-file", str(pairs_file), "--no-oracle", "--db", str(tmp_path / "s.sqlite"),
                              "--export", str(out), *FAST)
    assert code == 0, err
    lines = [json.loads(line) for line in (out / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    # no oracle: 3 seeds x 3 fusions, less T+E of "women are wonderful" (no emoji for either keyword)
    assert summary["generation"]["skipped"] == 1
    assert len(lines) == summary["export"]["cases"] == 8
    files = 0
    for case in lines:
        assert case["expected"] is None and case["oracle_toxic_by"] is None  # --no-oracle: nobody checked the seed
        for m in case["media"] + case["parts"]["part_a"]["media"] + case["parts"]["part_b"]["media"]:
            assert hashlib.sha256((out / m["file"]).read_bytes()).hexdigest() == m["sha256"]
            files += 1
        # no detector was loaded: only text is read locally, an image case needs an external scorer
        assert case["needs_external_scorer"] == bool(case["media"])
    assert files > 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["local_modalities"] == ["text"] and manifest["cases"] == 8
    assert manifest["expected_toxic"] == 0 and "--no-oracle" in manifest["expected"]


@pytest.mark.slow  # renders fused cases, twice
def test_fuse_export_says_toxic_only_for_seeds_the_oracle_vouched_for_and_counts_its_own_files(capsys, tmp_path,
                                                                                               pairs_file):
    """cases.jsonl's expected verdict is the oracle's ("women are wonderful" is not toxic to
    profanity-check: it is not exported as expected toxic), and manifest.json counts the files its
    cases name, not what an earlier export left in the folder."""
    out = tmp_path / "export"
    db = str(tmp_path / "s.sqlite")
    code, _, err = fuse(capsys, "--pairs-file", str(pairs_file), "--no-oracle", "--db", db, "--export", str(out), *FAST)
    assert code == 0, err
    code, summary, err = fuse(capsys, "--pairs-file", str(pairs_file), "--detectors", "profanity-check", "--db", db,
                              "--export", str(out), "--fusion", "I", "--quiet")
    assert code == 0, err
    lines = [json.loads(line) for line in (out / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 and {c["seed_text"] for c in lines} == {"women are pigs", next(
        c["seed_text"] for c in lines if c["seed_text"] != "women are pigs")}
    assert all(c["expected"] == "toxic" and c["oracle_toxic_by"] == ["profanity-check"] for c in lines)
    named = {m["file"] for c in lines for m in c["media"] + c["parts"]["part_a"]["media"] + c["parts"]["part_b"]["media"]}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["files"] == summary["export"]["files"] == len(named) > 0
    assert manifest["expected_toxic"] == 2


def test_fuse_list(capsys):
    assert main(["fuse", "--list"]) == 0
    out = capsys.readouterr().out
    for word in ("A is/are B", "A: B", "A your/my B", "T+E", "V+A+T", "groups.txt", "davidson"):
        assert word in out


def test_fuse_errors_name_the_fix(capsys, tmp_path, pairs_file):
    code, _, err = fuse(capsys, "--fusion", "T+X", "--pairs-file", str(pairs_file))
    assert code == 2 and "unknown fusion 'T+X'" in err and "fix:" in err
    code, _, err = fuse(capsys, "--images", str(tmp_path / "missing"), "--pairs-file", str(pairs_file))
    assert code == 3 and "not found" in err
    code, _, err = fuse(capsys, "--content-type", "hate", "--pairs-file", str(pairs_file))
    assert code == 2 and "abuse_hate" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[[template]]\nname = 1\n", encoding="utf-8")
    code, _, err = fuse(capsys, "--templates", str(bad), "--pairs-file", str(pairs_file), "--no-oracle")
    assert code == 2 and "missing" in err and "fix:" in err


def test_a_pairs_file_that_is_not_utf8_is_a_clear_error(capsys, tmp_path):
    """Not a traceback: the file, the line and the fix; nothing written."""
    f = tmp_path / "pairs.csv"
    f.write_bytes(b"content_type,a,b\nabuse_hate,women,pigs\nabuse_hate,caf\xe9,pigs\n")
    db = tmp_path / "s.sqlite"
    code, _, err = fuse(capsys, "--pairs-file", str(f), "--no-oracle", "--db", str(db), *FAST)
    assert code == 1 and "line 3 is not UTF-8" in err and "fix:" in err and "Traceback" not in err
    assert not db.exists()


def test_the_oracle_note_tells_unanswered_seeds_from_seeds_found_benign(capsys, tmp_path, pairs_file, modlens_home):
    """A judge with no score for a seed (a cached table without it) did not find it benign: the note
    counts those apart, instead of "N seeds no detector found toxic"."""
    table = tmp_path / "scores.csv"
    table.write_text("text,score\nwomen are pigs,0.9\nwomen are wonderful,0.1\n", encoding="utf-8")
    code, summary, err = fuse(capsys, "--pairs-file", str(pairs_file), "--detectors", f"cached:{table}",
                              "--db", str(tmp_path / "study.sqlite"), *FAST)
    assert code == 0, err
    assert summary["oracle"]["kept"] == 1 and summary["oracle"]["dropped"] == 2
    assert "abuse_hate: the oracle dropped 1 of 2 seeds: 1 no detector found toxic" in err
    assert "sexual: the oracle dropped 1 of 1 seeds: 1 no detector had a score for" in err
    assert "sexual: the oracle dropped 1 of 1 seeds no detector found toxic" not in err
