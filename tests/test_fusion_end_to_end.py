"""The whole DUO path as a user runs it: `modlens fuse --score` with the embedded detectors, then
`modlens report`; the report's Error Finding Rates must equal the ones computed here straight
from the logged scores (the metamorphic relation: a case whose seed is toxic must be toxic)."""
from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import pytest

from modlens.cli import main
from realtools import requires

pytestmark = requires("tesseract")

PAIRS = "abuse_hate,women,pigs\nabuse_hate,immigrants,rats\nabuse_hate,muslims,idiots\nsexual,lick,tits\n"


def efr_from_rows(db) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(detector name, content type, fusion) -> (cases whose seed the detector finds toxic, misses)."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT fc.case_id, fc.content_type, fc.fusion, d.name, d.threshold, cs.part, cs.toxicity "
        "FROM case_scores cs JOIN fused_cases fc USING (case_id) JOIN detectors d USING (detector_id)").fetchall()
    conn.close()
    score: dict[tuple[int, str, str], float | None] = {}
    meta: dict[tuple[int, str], tuple[str, str, float]] = {}
    for case_id, ctype, fusion, name, threshold, part, tox in rows:
        score[(case_id, name, part)] = tox
        meta[(case_id, name)] = (ctype, fusion, threshold)
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for (case_id, name), (ctype, fusion, threshold) in meta.items():
        seed, case = score.get((case_id, name, "seed")), score.get((case_id, name, "case"))
        if seed is None or case is None or seed < threshold:
            continue
        out[(name, ctype, fusion)][0] += 1
        out[(name, ctype, fusion)][1] += case < threshold
    return {k: (n, e) for k, (n, e) in out.items()}


def test_fuse_score_report_gives_the_error_finding_rates_of_the_logged_scores(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    pairs, db, report = tmp_path / "pairs.csv", tmp_path / "study.sqlite", tmp_path / "report.json"
    pairs.write_text(PAIRS)
    assert main(["fuse", "--pairs-file", str(pairs), "--detectors", "profanity-check", "ocr",
                 "--fusion", "T+E", "--fusion", "T+I", "--fusion", "I", "--score", "--quiet", "--db", str(db)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scored"]["n_errors"] == 0 and summary["recorded"]["added"] > 0
    assert main(["report", "--db", str(db), "--format", "json", "--out", str(report)]) == 0
    section = json.loads(report.read_text())["sections"]["fusion"]

    expected = efr_from_rows(db)
    assert expected, "no case had a seed a detector found toxic"
    got = {(d["detector"], e["content_type"], e["fusion"]): (e["n"], e["errors"], e["efr"])
           for d in section["detectors"] for e in d["efr"] if e["fusion"] != "all"}
    for key, (n, errors) in expected.items():
        assert got[key][:2] == (n, errors), key
        assert got[key][2] == pytest.approx(errors / n)
    assert {k for k, v in got.items() if v[0]} == set(expected)

    # An image-only reply (fusion "I": a picture of the seed text, no caption): the text-only
    # detector sees an empty comment and misses every case; OCR + MiniLM reads the picture.
    text_only = [v for k, v in got.items() if k[0] == "profanity-check" and k[2] == "I" and v[0]]
    with_ocr = [v for k, v in got.items() if k[0] == "ocr+minilm-toxicity" and k[2] == "I" and v[0]]
    assert text_only and all(errors == n for n, errors, _ in text_only)
    assert with_ocr and sum(e for _, e, _ in with_ocr) < sum(n for n, _, _ in with_ocr)
