"""The Perspective study's design at small scale, end to end with real processes.

The researcher `study init`s a folder (profanity-check only, three gold comments), packs it, joins
it and runs `modlens serve --config STUDY/study.toml` (docs/MULTI.md; the folder's calibration.toml
is read as with `--config STUDY`); one `modlens feed` sends 20 comments on each of three platforms
(HateCheck cases spread over profanity-check's score deciles, tests/study_sim.py). Then
`modlens sample` draws 8 per platform balanced over the deciles (24 items), `study assign` cuts
them into 2 tasks of 12 + 3 gold for 5 raters each, `study check` accepts the folder and
`study export-tasks` writes the Label Studio and survey files. Two raters rate their assignment
through the protocol client's `rate()` on the running daemon; the daemon stops; the other
assignments come back as a Label Studio JSON export and a Mechanical Turk style results CSV built
here from the exported files, imported with `modlens rate` (the Label Studio file twice). One
survey worker fails two gold comments and answers two comments inconsistently (Table 11: reject),
another answers two gold comments inconsistently (accept, unused). `modlens report --format json`:
every item has its 5 ratings and 4 accepted raters, the two workers are excluded (7 raters, 5 of
them accepted, are reported), and alpha per attribute, with no gold comment in it, equals the
`krippendorff` package's on the accepted, consistent ratings of the items built here.
"""
from __future__ import annotations

import asyncio
import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import study_sim
from study_sim import ANCHOR_ANSWERS, TOX, Plan
from test_study_simulation import free_port, modlens

pytestmark = pytest.mark.slow

PLATFORMS = {"news": 0.35, "youtube": 0.5, "x": 0.65}   # study_sim needs thresholds; only the platforms matter here
STUDY_ID = "itemset-study"
INCONSISTENT = ("less", "more")   # with an extreme anchor rated "toxic": no Table 1 cell
RESPECT = study_sim.RESPECT


def truth(score: float) -> str:
    return "not toxic" if score < 0.35 else "hard to say" if score < 0.65 else "toxic"


def make_study(root: Path) -> Path:
    folder = root / "study"
    modlens(["study", "init", str(folder), "--study-id", STUDY_ID, "--title", "item-set study"])
    study = (folder / "study.toml").read_text()
    study = study.replace('[[detectors]]\nname = "minilm-toxicity"\n\n', "").replace('mode = "deciles"', 'mode = "all"')
    study += ("\n[normalizer]\nenabled = false\n\n[perturbation]\nenabled = false\n\n"
              "[limits]\nmessages_per_second = 2000.0\nburst = 2000\n")
    (folder / "study.toml").write_text(study)
    (folder / "tasks.toml").write_text("free_browsing = true\n")
    return folder


class Rater:
    """Answers from a planted truth with seeded noise; `spoil` makes chosen answers bad on purpose."""

    def __init__(self, name: str, seed: int, attributes: dict[str, list[str]], gold: dict[str, dict[str, str]],
                 scores: dict[str, float]):
        self.name, self.rng, self.attributes, self.gold, self.scores = name, np.random.default_rng(seed), attributes, gold, scores
        self.wrong_gold: set[str] = set()
        self.inconsistent_gold: set[str] = set()
        self.inconsistent_items: set[str] = set()
        self.sent: dict[str, tuple[str | None, str]] = {}   # ref -> (toxicity or None if inconsistent, respectfulness)

    def answer(self, ref: str) -> tuple[dict[str, str], dict[str, str]]:
        if ref.startswith("gold:"):
            expected = dict(self.gold[ref[5:]])
            tox = expected.pop("toxicity", "not toxic")
            if ref in self.wrong_gold:
                tox = "not toxic" if tox == "toxic" else "toxic"
            values = {a: expected.get(a, lv[0]) for a, lv in self.attributes.items() if a != "toxicity"}
            pair = INCONSISTENT if ref in self.inconsistent_gold else ANCHOR_ANSWERS[tox]
            return values, {"vs_hard": pair[0], "vs_extreme": pair[1]}
        k = TOX.index(truth(self.scores[ref]))
        if self.rng.random() < 0.25:
            k = int(np.clip(k + self.rng.choice([-1, 1]), 0, 2))
        respect = RESPECT[int(np.clip(k + self.rng.integers(0, 2), 0, 3))]
        values = {a: (respect if a == "respectfulness" else lv[0]) for a, lv in self.attributes.items() if a != "toxicity"}
        bad = ref in self.inconsistent_items
        pair = INCONSISTENT if bad else ANCHOR_ANSWERS[TOX[k]]
        self.sent[ref] = (None if bad else TOX[k], respect)
        return values, {"vs_hard": pair[0], "vs_extreme": pair[1]}


async def rate_through_protocol(url: str, token: str, rater: Rater, assignment: dict, plan_comment) -> None:
    from modlens.protocol.client import session

    agreed = await study_sim.shown_consent_sha256(url, token, rater.name, "itemset-test")
    async with session(url, token, rater=rater.name, client="itemset-test", study_id=STUDY_ID,
                       consent_at="2025-01-31T12:00:00Z", consent_sha256=agreed) as client:
        for ref in assignment["order"]:
            platform, key = plan_comment(ref)
            values, anchors = rater.answer(ref)
            ok = await client.rate({"id": f"{assignment['id']}:{ref}", "comment": {"platform": platform, "key": key},
                                    "values": values, "anchors": anchors})
            assert not ok.duplicate and not ok.inconsistent


def scored_comments(db: Path, detector: str) -> int:
    """How many comments the log holds a score of `detector` for (read-only: the daemon is the writer)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return con.execute("SELECT COUNT(*) FROM comments c JOIN scores s ON s.text_id = c.text_id "
                           "JOIN detectors d USING (detector_id) WHERE d.name = ? AND s.error IS NULL",
                           (detector,)).fetchone()[0]
    finally:
        con.close()


def test_perspective_study_design_small_scale(tmp_path):
    from modlens.config import DEFAULT_ATTRIBUTES
    from modlens.study.assignment import Plan as TaskPlan
    from modlens.study import load

    t0 = time.monotonic()
    folder = make_study(tmp_path)
    home, db, log_file = tmp_path / "home", tmp_path / "study.sqlite", tmp_path / "serve.log"
    home.mkdir()
    modlens(["study", "pack", str(folder), "--out", str(tmp_path / "s.modlens")])
    modlens(["join", str(tmp_path / "s.modlens"), "--allow-unsigned"], home)
    token = json.loads(modlens(["pair", "--json"], home).stdout)["token"]

    sim = Plan(thresholds=PLATFORMS, pages={}, sigmas=[], per_decile=2)
    comments = study_sim.select_comments(sim)
    # one file, three platforms: `modlens feed` groups its rows into a page per (platform, url)
    (tmp_path / "feed.jsonl").write_text("".join(json.dumps({
        "key": c.key, "text": c.text, "platform": c.platform, "url": f"https://{c.platform}.example/a"}) + "\n"
        for c in comments))
    port = free_port()
    env = {**os.environ, "MODLENS_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    with log_file.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--config", str(folder / "study.toml"),
                                 "--port", str(port), "--db", str(db)],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"ws://127.0.0.1:{port}/ws"
    try:
        deadline = time.monotonic() + 90
        while f"listening   {url}" not in log_file.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log_file.read_text(errors="replace")
            time.sleep(0.1)
        fed = modlens(["feed", str(tmp_path / "feed.jsonl"), "--key-col", "key", "--no-variants", "--daemon", url], home)
        assert len(fed.stdout.splitlines()) == len(comments) == 3 * 20
        # the feed printed the scores the daemon sent; `sample` reads them from the log, which the daemon's writer
        # fills after sending: wait until the log holds all 60 (run in-process, `sample` came before they did)
        deadline = time.monotonic() + 60
        while (stored := scored_comments(db, "profanity-check")) < len(comments):
            assert proc.poll() is None and time.monotonic() < deadline, (stored, log_file.read_text(errors="replace"))
            time.sleep(0.1)

        sampled = modlens(["sample", "--db", str(db), "--out", str(folder), "--detector", "profanity-check",
                           "--per-platform", "8", "--min-words", "1", "--seed", "3"])
        assert "wrote" in sampled.stdout
        itemset = json.loads((folder / "itemset.json").read_text())
        assert len(itemset["items"]) == 24
        for p in PLATFORMS:   # 20 comments spread over 10 deciles: 8 drawn from 8 different deciles
            counts = itemset["params"]["counts"][p]
            assert sum(counts.values()) == 8 and max(counts.values()) == 1, counts
        modlens(["study", "assign", str(folder), "--raters", "5", "--items-per-task", "12", "--gold-per-task", "3"])
        assert "ok: study" in modlens(["study", "check", str(folder)]).stdout
        for fmt in ("labelstudio", "survey"):
            modlens(["study", "export-tasks", str(folder), "--format", fmt, "--out", str(tmp_path / fmt)])

        study = load(folder)
        plan = TaskPlan.load(folder, study)
        attributes = {a.name: list(a.levels) for a in DEFAULT_ATTRIBUTES}
        gold = {g.key: dict(g.expected) for g in study.gold}
        scores = {i["id"]: i["score"] for i in itemset["items"]}
        raters = {name: Rater(name, n, attributes, gold, scores) for n, name in enumerate(
            ["participant-1", "participant-2", "ls-11", "ls-12", "W-GOOD", "W-BAD", "W-UNUSED"])}
        t01 = plan.tasks["t01"]["items"]
        raters["ls-12"].inconsistent_items = {t01[0]}                             # (0, 0, 1): accepted
        raters["W-BAD"].wrong_gold = {"gold:gold-insult", "gold:gold-thanks"}
        raters["W-BAD"].inconsistent_items = set(t01[:2])                       # 2 + 2 = 4: rejected
        raters["W-UNUSED"].inconsistent_gold = {"gold:gold-insult", "gold:gold-formal"}  # (2, 0, 0): not used
        a = plan.assignments
        asyncio.run(rate_through_protocol(url, token, raters["participant-1"], a["t01-r1"], plan.comment))
        asyncio.run(rate_through_protocol(url, token, raters["participant-2"], a["t02-r1"], plan.comment))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)

    # Label Studio: one exported task per comment, each annotated by workers 11 and 12 (its queue gives
    # a task to `maximum_annotations` different annotators), a cancelled annotation on each
    tasks = json.loads((tmp_path / "labelstudio" / "tasks.json").read_text())
    # the coordinator's key to the opaque unit ids raters see (no exported field says which comment is gold)
    key = {u["unit"]: u["ref"] for u in json.loads((folder / "crowd-key.json").read_text())["units"]}
    export = []
    for n, task in enumerate(tasks, 1):
        d = task["data"]
        anns = []
        for who, completed_by in (("ls-11", 11), ("ls-12", {"id": 12, "email": "w12@example.org"})):
            values, anchors = raters[who].answer(key[d["unit"]])
            result = [{"from_name": q, "to_name": "text", "type": "choices", "value": {"choices": [v]}}
                      for q, v in {**values, **anchors}.items()]
            anns.append({"id": n * 10, "completed_by": completed_by, "result": result, "was_cancelled": False})
        anns.append({"id": n * 10 + 1, "completed_by": 99, "result": [], "was_cancelled": True})
        export.append({"id": n, "data": d, "annotations": anns})
    ls_file = tmp_path / "labelstudio-export.json"
    ls_file.write_text(json.dumps(export))

    # the survey: Mechanical Turk's results CSV, one row per submitted assignment
    with (tmp_path / "survey" / "tasks.csv").open(newline="") as fh:
        rows = {r["assignment"]: r for r in csv.DictReader(fh)}
    results = []
    for who, assignment in (("W-GOOD", "t01-r4"), ("W-GOOD", "t02-r4"), ("W-BAD", "t01-r5"), ("W-UNUSED", "t02-r5")):
        row = {"HITId": f"hit-{assignment}", "AssignmentId": f"amt-{assignment}", "WorkerId": who,
               **{f"Input.{k}": v for k, v in rows[assignment].items()}}
        for pos, ref in enumerate(a[assignment]["order"], 1):
            assert key[rows[assignment][f"item{pos}_id"]] == ref
            values, anchors = raters[who].answer(ref)
            row.update({f"Answer.item{pos}_{q}": v for q, v in {**values, **anchors}.items()})
        results.append(row)
    survey_file = tmp_path / "amt-results.csv"
    with survey_file.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)

    first = modlens(["rate", str(ls_file), "--db", str(db), "--study", str(folder)]).stdout
    assert "2 workers, 60 ratings imported, 0 already in the log" in first, first
    again = modlens(["rate", str(ls_file), "--db", str(db), "--study", str(folder)]).stdout
    assert "0 ratings imported, 60 already in the log" in again, again
    out = modlens(["rate", str(survey_file), "--db", str(db), "--study", str(folder)]).stdout
    assert "3 workers, 60 ratings imported" in out, out
    assert "reject  survey:W-BAD  task t01 (survey): 0 inconsistent gold, 2 wrong gold, 2 inconsistent" in out, out
    assert "accept_unused  survey:W-UNUSED  task t02 (survey): 2 inconsistent gold" in out, out
    assert "reviewed 10 rater tasks: 8 accept, 1 accept_unused, 1 reject" in out, out
    assert "labelstudio:99" not in out

    report = json.loads(modlens(["report", "--db", str(db), "--format", "json"]).stdout)
    section = report["sections"]["itemset"]
    assert section["n_items"] == 24 and section["decisions"] == {"accept": 8, "accept_unused": 1, "reject": 1}
    assert section["n_raters"] == 7 and section["n_raters_accepted"] == 5   # not "by 0 raters"
    human_section = report["sections"]["human"]
    assert human_section["n_raters"] == 7 and human_section["n_raters_used"] == 5
    n_gold_ratings = sum(ref.startswith("gold:") for ad in a.values() for ref in ad["order"])  # every assignment was rated
    assert human_section["excluded"]["gold comment (attention check)"] == n_gold_ratings
    assert {(r["rater_id"], r["task"], r["source"]) for r in section["acceptance"] if r["decision"] == "accept"} == {
        ("participant-1", "t01", "protocol"), ("participant-2", "t02", "protocol"), ("labelstudio:11", "t01", "labelstudio"),
        ("labelstudio:11", "t02", "labelstudio"), ("labelstudio:w12@example.org", "t01", "labelstudio"),
        ("labelstudio:w12@example.org", "t02", "labelstudio"), ("survey:W-GOOD", "t01", "survey"),
        ("survey:W-GOOD", "t02", "survey")}
    for item in section["items"]:   # 5 raters each; the rejected and the unused worker excluded
        assert item["ratings"] == 5 and item["accepted_raters"] == 4, item
        # ls-12's inconsistent anchor pair drops that one rating (Table 1), its task stays accepted
        assert item["used_ratings"] == (3 if item["key"] == plan.comment(t01[0])[1] else 4), item

    # alpha on the accepted, consistent ratings, by the krippendorff package, from what was sent
    import krippendorff

    accepted = {"t01": ["participant-1", "ls-11", "ls-12", "W-GOOD"], "t02": ["participant-2", "ls-11", "ls-12", "W-GOOD"]}
    refs = [i["id"] for i in itemset["items"]]
    names = sorted({n for ns in accepted.values() for n in ns})
    for attr, index, levels in (("toxicity", 0, TOX), ("respectfulness", 1, RESPECT)):
        data = np.full((len(names), len(refs)), np.nan)
        for j, ref in enumerate(refs):
            for who in accepted[plan.task_of[ref]]:
                tox, respect = raters[who].sent[ref]
                if tox is not None:   # an inconsistent anchor pair drops the whole rating
                    data[names.index(who), j] = levels.index((tox, respect)[index])
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        got = next(x for x in section["attributes"] if x["name"] == attr)
        assert got["alpha"] == pytest.approx(expected, abs=1e-9), attr
        assert got["alpha_ci"] is not None and got["alpha_ci"][0] <= got["alpha"] <= got["alpha_ci"][1]
        human = next(x for x in report["sections"]["human"]["attributes"] if x["name"] == attr)
        assert human["alpha"] == pytest.approx(expected, abs=1e-9), attr   # section 1 applies the same decisions
    print(f"the Perspective study design, small scale: {time.monotonic() - t0:.1f} s")
