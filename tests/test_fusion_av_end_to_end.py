"""Speech and video fusions scored offline, as a user runs them: `modlens fuse --fusion A+T --fusion
V+A --fusion V+T --fusion V+A+T --score` with the default detectors (the study's, plus `asr`:
pocketsphinx, Tesseract on frames, then MiniLM). Every EFR cell of the report must be filled and
equal to the rate computed here from the logged scores; transcripts are logged in `asr_results`
with their engine and version, and each part's contribution in the score's details."""
from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import pytest

from modlens.cli import main
from test_fusion_end_to_end import efr_from_rows
from realtools import requires

pytestmark = requires("tesseract", "espeak-ng", "ffmpeg")

PAIRS = "abuse_hate,women,pigs\nsexual,lick,tits\n"
FUSIONS = ("A+T", "V+A", "V+T", "V+A+T")


def test_speech_and_video_fusions_fill_every_efr_cell_from_the_logged_scores(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    pairs, db, report = tmp_path / "pairs.csv", tmp_path / "study.sqlite", tmp_path / "report.json"
    pairs.write_text(PAIRS)
    args = ["fuse", "--pairs-file", str(pairs), "--no-oracle", "--score", "--quiet", "--db", str(db)]
    for f in FUSIONS:
        args += ["--fusion", f]
    assert main(args) == 0
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert summary["scored"]["n_errors"] == 0, summary["scored"]["errors"]
    asr_key = next(k for k, v in summary["scored"]["detectors"].items() if v["detector"].startswith("asr+"))
    assert summary["scored"]["detectors"][asr_key]["asr_rows"] > 0
    assert main(["report", "--db", str(db), "--format", "json", "--out", str(report)]) == 0
    section = json.loads(report.read_text())["sections"]["fusion"]

    expected = efr_from_rows(db)
    got = {(d["detector"], e["content_type"], e["fusion"]): e for d in section["detectors"] for e in d["efr"]
           if e["fusion"] != "all"}
    asr_cells = {k for k in got if k[0] == "asr+minilm-toxicity"}
    # every content type x fusion has cases the speech/video reader scored: no cell left empty
    assert {(ct, fu) for _, ct, fu in asr_cells} == {(ct, fu) for ct in ("abuse_hate", "sexual") for fu in FUSIONS}
    for key in asr_cells:
        assert got[key]["not_scored_locally"] == 0 and got[key]["failed"] == 0, key
    for key, (n, errors) in expected.items():
        assert (got[key]["n"], got[key]["errors"]) == (n, errors), key
        assert got[key]["efr"] == pytest.approx(errors / n)
    assert {k for k, e in got.items() if e["n"]} == set(expected)
    for key in asr_cells:  # filled: every cell holds tested cases (both seeds are toxic to MiniLM)
        assert got[key]["n"] == got[key]["seed_toxic"] > 0, key

    conn = sqlite3.connect(db)
    heard = conn.execute("SELECT a.engine, a.version, t.text, a.confidence, m.kind FROM asr_results a "
                         "JOIN texts t USING (text_id) JOIN media m USING (media_id)").fetchall()
    details = [json.loads(r[0]) for r in conn.execute(
        "SELECT cs.details_json FROM case_scores cs JOIN detectors d USING (detector_id) "
        "WHERE d.name = 'asr+minilm-toxicity' AND cs.part = 'case'")]
    conn.close()
    assert heard and {r[0] for r in heard} == {"pocketsphinx"} and all(r[1].startswith("5.") for r in heard)
    assert {r[4] for r in heard} == {"audio", "video"}  # the parts' clips and the videos' sound tracks
    assert all(r[3] is None or 0 <= r[3] <= 1 for r in heard)
    # each part's contribution is logged: the text it gave and its own score
    assert all(d["contributions"] and all("toxicity" in c for c in d["contributions"].values()) for d in details)
    assert any("ocr" in d["contributions"] for d in details) and any("asr" in d["contributions"] for d in details)
    # recognition quality sits beside the EFR: ASR and OCR keyword checks for the reader's cells
    recog = [got[k]["recognition"] for k in asr_cells]
    assert sum(r["asr"]["cases"] for r in recog) > 0 and sum(r["ocr"]["cases"] for r in recog) > 0

    # the recognition numbers beside each EFR cell, recomputed from the logged transcripts and OCR text
    conn = sqlite3.connect(db)
    assert_recognition_matches_the_logged_readings(conn, got)
    conn.close()


def _has(text: str, keyword: str) -> bool:
    """Every word of the keyword among the text's words, lower case, singular or plural."""
    words = set()
    for w in "".join(c.lower() if c.isalnum() or c in "@.-" else " " for c in text).split():
        w = w.strip(".-")
        words |= {w, w[:-1] if w.endswith("s") else w + "s"}
    return all(k.strip(".-") in words for k in keyword.lower().split())


def assert_recognition_matches_the_logged_readings(conn, got) -> None:
    """For the asr detector's tested cases (seed toxic, case scored): the keywords the case
    speaks / shows on cards (its params), against the transcript in `asr_results` and the frame
    text in `ocr_results` of the case's video; counted per cell like the report's recognition."""
    rows = conn.execute(
        "SELECT fc.case_id, fc.content_type, fc.fusion, fc.keyword_a, fc.keyword_b, fc.params_json, d.threshold, "
        "s.toxicity, c.toxicity FROM fused_cases fc "
        "JOIN case_scores c ON c.case_id = fc.case_id AND c.part = 'case' "
        "JOIN case_scores s ON s.case_id = fc.case_id AND s.part = 'seed' AND s.detector_id = c.detector_id "
        "JOIN detectors d ON d.detector_id = c.detector_id WHERE d.name = 'asr+minilm-toxicity'").fetchall()
    heard = dict(conn.execute("SELECT cm.case_id, t.text FROM case_media cm JOIN asr_results a USING (media_id) "
                              "JOIN texts t USING (text_id) WHERE cm.part = 'case' AND a.engine = 'pocketsphinx'"))
    read = dict(conn.execute("SELECT cm.case_id, t.text FROM case_media cm JOIN ocr_results o USING (media_id) "
                             "JOIN texts t USING (text_id) WHERE cm.part = 'case' AND o.version LIKE '%+frames.%'"))
    cells: dict = defaultdict(lambda: defaultdict(int))
    for cid, ct, fu, a, b, params, threshold, seed_tox, case_tox in rows:
        if seed_tox is None or case_tox is None or seed_tox < threshold:
            continue
        shown = json.loads(params)["shown"]
        said = " ".join(s.get("speech", "") for s in shown)
        written = " ".join(s.get("card", "") for s in shown)
        cell = cells[(ct, fu)]
        verdicts = []
        for channel, source, logged in (("asr", said, heard), ("ocr", written, read)):
            expected = [k for k in (a, b) if source and _has(source, k)]
            if expected and cid in logged:
                ok = all(_has(logged[cid], k) for k in expected)
                cell[f"{channel}_cases"] += 1
                cell[f"{channel}_recognised"] += ok
                verdicts.append(ok)
        if case_tox < threshold and verdicts:
            cell["misrecognised" if False in verdicts else "recognised"] += 1
    assert cells
    for (ct, fu), cell in cells.items():
        e = got[("asr+minilm-toxicity", ct, fu)]
        for channel in ("asr", "ocr"):
            r = e["recognition"][channel]
            assert (r["cases"], r["recognised"]) == (cell[f"{channel}_cases"], cell[f"{channel}_recognised"]), (ct, fu)
            assert r["share"] == (pytest.approx(r["recognised"] / r["cases"]) if r["cases"] else None)
        assert (e["errors_misrecognised"], e["errors_recognised"]) == (cell["misrecognised"], cell["recognised"])
    # a keyword is spoken in V+A, A+T and V+A+T, and on a card in V+T and A+T (V+A+T's card is the middle word)
    assert {key for key, cell in cells.items() if cell["asr_cases"]} == {k for k in cells if k[1] != "V+T"}
    assert {key for key, cell in cells.items() if cell["ocr_cases"]} == {k for k in cells if k[1] in ("V+T", "A+T")}
