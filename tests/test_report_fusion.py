"""The report's fusion section (`analysis/fusion.py`): on a log with planted scores, the oracle,
EFR and baseline tables equal a computation written here (Wilson intervals from statsmodels);
through `modlens report` the JSON and the HTML carry the section; a log without fused cases, or
with cases nobody scored, lists the reason under `skipped`."""
from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest
from fused_helpers import record, text_image

from modlens.analysis import fusion
from modlens.analysis.report import render_html, report_from_db
from modlens.audit.fused import score_cases
from modlens.cli import main
from modlens.fusion.case import CONTENT_TYPES, PARTS, FusedCase
from modlens.media import MediaInput
from modlens.media.store import MediaStore
from modlens.studylog.records import media as media_records
from modlens.studylog.store import StudyLog

FUSIONS = ("T+E", "T+I", "V+A")


def planted(db, n_seeds: int = 60, per_seed: int = 4, seed: int = 7) -> dict:
    """Cases without media (only their rows matter here), every part scored by two detectors with
    seeded random scores; a few parts failed, a few not readable here, a few not scored yet.
    Returns what was planted: (detector_id, case_id, part) -> (toxicity | None, state)."""
    rng = random.Random(seed)
    log = StudyLog(db)
    try:
        with log.transaction():
            dets = {log.ensure_detector("planted-a", "1", "toxic", 0.5, {}): 0.5,
                    log.ensure_detector("planted-b", "2", "toxic", 0.7, {}): 0.7}
            cases = []
            for s in range(n_seeds):
                ct = CONTENT_TYPES[s % 3]
                for k in range(per_seed):
                    c = FusedCase(ct, "t", f"a{s}", "are", f"b{s}", f"a{s} are b{s}", FUSIONS[(s + k) % 3],
                                  f"a{s} are", (), MediaInput(f"a{s}"), MediaInput(f"b{s}"), {"k": k})
                    cases.append((media_records.add_fused_case(log, c, {}, None), c))
            truth, rows = {}, []
            for det_id in dets:
                for cid, _ in cases:
                    for part in PARTS:
                        roll = rng.random()
                        tox = rng.random()
                        state = ("not yet" if roll < 0.03 else "failed" if roll < 0.07
                                 else "unread" if roll < 0.10 and part in ("case", "part_b") else "scored")
                        if state == "not yet":
                            continue
                        labels = {"toxic": tox} if state == "scored" else None
                        details = {"unscored_media": ["audio"]} if state == "unread" else {}
                        rows.append((cid, part, (det_id, labels, tox if labels else None, 1.0,
                                                 "boom" if state == "failed" else None, details)))
                        truth[(det_id, cid, part)] = (tox if labels else None, state)
            media_records.add_case_scores_many(log, rows)
    finally:
        log.close()
    return {"dets": dets, "cases": cases, "truth": truth}


def test_tables_equal_a_direct_computation_on_planted_scores(tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    db = tmp_path / "planted.sqlite"
    p = planted(db)
    s = report_from_db(db)["sections"]["fusion"]
    assert s["n_cases"] == len(p["cases"]) and s["content_types"] == list(CONTENT_TYPES)
    assert s["fusions"] == ["T+E", "T+I", "V+A"]
    truth = p["truth"]
    for det in s["detectors"]:
        det_id = next(d for d in p["dets"] if det["label"] == {1: "planted-a@1", 2: "planted-b@2"}[d])
        thr = p["dets"][det_id]
        assert det["threshold"] == thr
        # oracle: each seed sentence's first good seed score, in case order
        oracle: dict[str, bool] = {}
        for cid, c in p["cases"]:
            tox, state = truth.get((det_id, cid, "seed"), (None, "not yet"))
            if state == "scored":
                oracle.setdefault(c.seed_text, tox >= thr)
        for row in det["oracle"]:
            seeds = {c.seed_text for _, c in p["cases"] if c.content_type == row["content_type"]}
            verdicts = [oracle[t] for t in seeds if t in oracle]
            assert (row["seeds"], row["scored"], row["toxic"]) == (len(seeds), len(verdicts), sum(verdicts))
        expect: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        flagged: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
        for cid, c in p["cases"]:
            for cell in ((c.content_type, c.fusion), (c.content_type, "all")):
                for part in PARTS:
                    tox, state = truth.get((det_id, cid, part), (None, "not yet"))
                    if state == "scored":
                        flagged[(*cell, part)].append(tox >= thr)
                if oracle.get(c.seed_text) is not True:
                    continue
                tox, state = truth.get((det_id, cid, "case"), (None, "not yet"))
                expect[cell][state] += 1
                if state == "scored":
                    expect[cell]["errors"] += tox < thr
        got = {(r["content_type"], r["fusion"]): r for r in det["efr"]}
        assert set(got) == {(ct, fu) for ct in CONTENT_TYPES for fu in (*FUSIONS, "all")}
        for cell, e in expect.items():
            r = got[cell]
            assert (r["n"], r["errors"], r["failed"], r["not_scored_locally"], r["not_scored_yet"]) == (
                e["scored"], e["errors"], e["failed"], e["unread"], e["not yet"]), cell
            assert r["seed_toxic"] == r["n"] + r["failed"] + r["not_scored_locally"] + r["not_scored_yet"]
            assert r["efr"] == pytest.approx(e["errors"] / e["scored"])
            assert r["ci"] == pytest.approx(list(proportion_confint(e["errors"], e["scored"], method="wilson")))
        for b in det["baseline"]:
            for part in PARTS:
                hits = flagged[(b["content_type"], b["fusion"], part)]
                assert (b["parts"][part]["n"], b["parts"][part]["toxic"]) == (len(hits), sum(hits))
    listed = s["not_scored_locally"]
    assert listed["total"] == sum(state == "unread" for _, state in truth.values())
    assert len(listed["listed"]) == min(fusion.MAX_LISTED, listed["total"])
    assert all(e["reason"] == "no local reader for audio" and e["part"] in ("case", "part_b") for e in listed["listed"])


def test_json_and_html_carry_the_section(tmp_path, capsys):
    from modlens.detectors import registry

    db, store = tmp_path / "f.sqlite", MediaStore(tmp_path / "media")
    log = StudyLog(db)
    for c in (text_image("abuse_hate", "women", "are", "bitches"), text_image("sexual", "suck", "my", "dick")):
        record(log, store, c)
    score_cases(log, {"prof": registry.create("profanity-check")}, store)
    log.close()
    assert main(["report", "--db", str(db), "--format", "json", "--out", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert "fusion" not in report["skipped"] and "fusion" in report["methods"]
    (det,) = report["sections"]["fusion"]["detectors"]
    assert {(r["content_type"], r["fusion"]): (r["errors"], r["n"]) for r in det["efr"]} == {
        ("abuse_hate", "T+I"): (1, 1), ("abuse_hate", "all"): (1, 1), ("sexual", "T+I"): (0, 1), ("sexual", "all"): (0, 1)}
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    # the only section present is section 1; the header does not list empty counts
    assert ">1. Semantic fusion (DUO): error finding rate</h2>" in page and "0 comments on ;" not in page
    assert "Wang et al. 2023" in page and "Validating Multimedia Content Moderation Software via Semantic Fusion" in page
    assert "Error finding rate (fusion × content type)" in page
    assert "<th>fusion</th><th>abuse_hate</th><th>sexual</th>" in page and "1.000 [" in page and "(1/1)" in page
    assert "Text-only detector" in page and "part A alone" in page


def test_a_log_without_cases_or_scores_says_why(tmp_path):
    empty = tmp_path / "empty.sqlite"
    StudyLog(empty).close()
    report = report_from_db(empty)
    assert report["skipped"]["fusion"] == fusion.NO_CASES == "no fused cases: run `modlens fuse`"
    assert "no fused cases: run `modlens fuse`" in render_html(report).replace("&#x27;", "'")
    unscored = tmp_path / "unscored.sqlite"
    log = StudyLog(unscored)
    record(log, MediaStore(tmp_path / "media"), text_image("spam", "cigarettes", ":", "call 555 0134"))
    log.close()
    reason = report_from_db(unscored)["skipped"]["fusion"]
    assert reason.startswith("no detector has scored the 1 fused cases yet")


def test_skipped_seeds_are_printed_and_counted_once_across_runs(tmp_path, capsys, monkeypatch):
    """`modlens fuse` prints every seed a fusion could not take with its reason; the report counts
    them per content type x fusion and per reason, a seed skipped again by a later run once."""
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    pairs, db = tmp_path / "pairs.csv", tmp_path / "study.sqlite"
    # women/pigs: the pig emoji takes T+E and I+T; no emoji and no picture for the other two pairs
    pairs.write_text("abuse_hate,women,pigs\nspam,Tobacco,Tel: 555-0142\nabuse_hate,immigrants,idiots\n")
    base = ["fuse", "--pairs-file", str(pairs), "--no-oracle", "--detectors", "profanity-check", "--score",
            "--db", str(db)]
    assert main([*base, "--fusion", "T+E", "--fusion", "I+T"]) == 0
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert summary["generation"]["skipped_by_fusion"] == {"T+E": 2, "I+T": 2}
    expected = {("T+E", "Tobacco: Tel: 555-0142"): "no emoji for 'Tel: 555-0142' or 'Tobacco' in the emoji table",
                ("T+E", "immigrants are idiots"): "no emoji for 'idiots' or 'immigrants' in the emoji table",
                ("I+T", "Tobacco: Tel: 555-0142"):
                    "no picture for A 'Tobacco' or B 'Tel: 555-0142' (no --images label, no emoji)",
                ("I+T", "immigrants are idiots"):
                    "no picture for A 'immigrants' or B 'idiots' (no --images label, no emoji)"}
    for (fu, seed), why in expected.items():
        assert f"{fu} skipped {seed!r}: {why}" in out.err
    # a second run (another fusion list, so another run row) skips the T+E seeds again
    assert main([*base, "--fusion", "T+E", "--fusion", "T+I", "--quiet"]) == 0
    capsys.readouterr()
    skipped = report_from_db(db)["sections"]["fusion"]["skipped"]
    assert skipped["total"] == len(expected) == 4
    content_type = {"Tobacco: Tel: 555-0142": "spam", "immigrants are idiots": "abuse_hate"}
    by_cell: dict[tuple[str, str], int] = defaultdict(int)
    for fu, seed in expected:
        by_cell[(content_type[seed], fu)] += 1
    assert {(r["content_type"], r["fusion"]): r["seeds"] for r in skipped["by_cell"]} == by_cell
    assert {r["reason"]: r["seeds"] for r in skipped["reasons"]} == {why: 1 for why in expected.values()}
    page = render_html(report_from_db(db)).replace("&#x27;", "'")
    assert "Seeds a fusion skipped (4)" in page and expected[("I+T", "immigrants are idiots")] in page


def test_the_baseline_tables_counts_are_over_every_case_as_its_heading_says(tmp_path):
    """'Baseline: share flagged toxic, over every case': its fused-case column is over the cases
    scored, so its 'not scored locally' and 'failed' columns must count the other cases of the row,
    all of them: cases = scored + not scored locally + failed or missing. They were the EFR cell's
    counts, over the cases with a toxic seed only."""
    from modlens.analysis.report import render

    db = tmp_path / "planted.sqlite"
    p = planted(db)
    report = report_from_db(db)
    tables = [t for t in render(report).tables if "fused case" in t.header and "cases" in t.header]
    assert len(tables) == 2  # one per detector
    truth = p["truth"]
    by_key = {c.content_type + "|" + c.fusion: [] for _, c in p["cases"]}
    for cid, c in p["cases"]:
        by_key[c.content_type + "|" + c.fusion].append(cid)
    for t, det_id in zip(tables, sorted(p["dets"])):
        col = {h: i for i, h in enumerate(t.header)}
        for row in t.rows:
            if row[col["fusion"]].text == "all":
                continue
            cids = by_key[row[col["content type"]].text + "|" + row[col["fusion"]].text]
            states = [truth.get((det_id, cid, "case"), (None, "not yet"))[1] for cid in cids]
            assert int(row[col["cases"]].text) == len(cids)
            assert int(row[col["not scored locally"]].text) == states.count("unread")
            assert int(row[col["failed or missing"]].text) == states.count("failed") + states.count("not yet")
            scored = states.count("scored")
            assert row[col["fused case"]].text.endswith(f"/{scored})")
