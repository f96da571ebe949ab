"""A simulated multi-participant study end to end, with a real daemon process per participant and no mocks
(the other commands run modlens's `main` in this process, as `python -m modlens` would).

The researcher `modlens study init`s a folder, edits it (profanity-check only, normalizer and
perturbations off, sampling `all`, three task pages on youtube / x / news, per-connection limits
raised for a scripted client), `study check`s and `study pack`s it. Eight participants, each with
their own MODLENS_HOME: `modlens join`, `modlens pair --json`, `modlens serve --port P --db ...`
as a subprocess with its own log (all eight at once), `modlens feed` of every task page by the first
FEEDERS of them (a session without consent, which must stay out of their bundles; the others' daemons
send their scores to the rating client only), then the rating client of tests/study_sim.py
over the real protocol: hello with a consent time, the same task pages, the study's gold comments
and one rating per comment from a rater of known noise. Each participant exports a bundle and
its daemon is stopped (SIGTERM). The researcher merges the eight bundles, lists them and runs
`modlens report --format json`.

Planted truth (tests/study_sim.py): per platform, a rater calls a comment toxic with probability
1/2 where its profanity-check score equals the platform's threshold (news 0.35, youtube 0.50,
x 0.65); 80 comments per platform, spread evenly over the score deciles; rater noise sigma
0.04 ... 0.22 in score units. Tolerances:

- thresholds: |crossing_top - planted| < 3 standard errors (the report's delta-method SE, about
  0.03 here) + 0.03. The 0.03 is bias: the majority of 8 raters with Table 13's tie rule
  ("hard to say" vs "toxic" ties go to "toxic") makes "toxic" majorities slightly more likely
  than each rater's 1/2 at the threshold, which moves the crossing down by about 0.025 (60
  simulated studies of this design, seeds 0-59, ratings as the clients send them: mean error
  -0.025 per platform, SD 0.03, worst |error| 0.105 against a tolerance of about 0.12). The
  estimated crossings must also come out in the planted order (planted 0.15 apart, 5 SD).
- alpha: the report's ordinal alpha of toxicity equals Krippendorff's alpha that the
  `krippendorff` package computes from the ratings the clients sent (1e-9: merge and report lose
  and double nothing), and lies within 0.06 of the planted model's expected alpha (about 0.79;
  replicate studies have SD about 0.016, so 0.06 is close to 4 SD).

Runs in about 20-40 s on a 2-core machine (`slow`).
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import study_sim
from cli_inprocess import run_modlens
from study_sim import Page, Plan


pytestmark = pytest.mark.slow

N_PARTICIPANTS = 8
# participants who also `modlens feed` the task pages: two show a feed session is kept out of a bundle
# and the comments merged once; feeding all eight would add 18 `modlens feed` processes proving the same
FEEDERS = 2
THRESHOLDS = {"news": 0.35, "youtube": 0.50, "x": 0.65}
SIGMAS = [0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.18, 0.22]
PAGES = {
    "youtube": Page("youtube", "sim-video", "https://www.youtube.com/watch?v=sim-video", "A video"),
    "x": Page("x", "sim/status/1", "https://x.com/sim/status/1", "An X thread"),
    "news": Page("news", "sim-article", "https://news.example.org/sim-article", "A news article"),
}
STUDY_ID = "sim-study"


@dataclass
class Ran:
    """What a `modlens` command printed."""
    stdout: str
    stderr: str


def modlens(args: list[str], home: Path | None = None) -> Ran:
    """`modlens ARGS` as `python -m modlens` runs it, in this process (`cli_inprocess`), with
    MODLENS_HOME=`home` where given; the command must exit 0."""
    code, out, err = run_modlens(args, home)
    if code != 0:
        raise AssertionError(f"modlens {' '.join(args)} exited {code}:\n{out}\n{err}")
    return Ran(out, err)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def researcher(root: Path) -> Path:
    folder = root / "study"
    modlens(["study", "init", str(folder), "--study-id", STUDY_ID, "--title", "simulated study"])
    study = (folder / "study.toml").read_text()
    study = study.replace('[[detectors]]\nname = "minilm-toxicity"\n\n', "")
    study = study.replace('mode = "deciles"', 'mode = "all"')
    assert study.count("[[detectors]]") == 1 and 'mode = "all"' in study, study
    study += ("\n[normalizer]\nenabled = false\n\n[perturbation]\nenabled = false\n\n"
              "# a scripted client rates faster than a person; the default 20 messages/s would only slow it\n"
              "[limits]\nmessages_per_second = 2000.0\nburst = 2000\n")
    (folder / "study.toml").write_text(study)
    tasks = ["free_browsing = false\n"]
    for p in PAGES.values():
        tasks.append(f'\n[[tasks]]\nurl = "{p.url}"\ntitle = "{p.title}"\n')
    (folder / "tasks.toml").write_text("".join(tasks))
    check = modlens(["study", "check", str(folder)])
    assert "ok: study 'sim-study', 1 detectors" in check.stdout and "warning" not in check.stdout + check.stderr, check
    pack = root / "sim.modlens"
    key = root / "researcher" / "signing.key"  # outside the study folder, as keygen insists
    fingerprint = modlens(["study", "keygen", "--out", str(key)]).stdout.split("fingerprint ")[1].split()[0]
    packed = modlens(["study", "pack", str(folder), "--out", str(pack), "--sign-key", str(key)])
    assert f"signed by {fingerprint}" in packed.stdout
    return pack


class Participant:
    def __init__(self, root: Path, index: int, pack: Path):
        self.index, self.pack = index, pack
        self.home = root / f"participant-{index}"
        self.home.mkdir()
        self.db = self.home / "participant.sqlite"
        self.log = self.home / "serve.log"
        self.bundle = root / f"participant-{index}.bundle"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.token = ""

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def join_and_pair(self) -> None:
        joined = modlens(["join", str(self.pack)], self.home)
        assert "joined study 'sim-study'" in joined.stdout and "signed by ed25519:" in joined.stdout
        assert "profanity-check (profanity-check): runs on this computer" in joined.stdout
        self.token = json.loads(modlens(["pair", "--json"], self.home).stdout)["token"]

    def start(self) -> None:
        self.port = free_port()
        env = {**os.environ, "MODLENS_HOME": str(self.home), "PYTHONUNBUFFERED": "1"}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--port", str(self.port),
                                          "--db", str(self.db)], env=env, stdout=log, stderr=subprocess.STDOUT)

    def listening(self) -> bool:
        """True once the daemon printed its address; raises when it exited."""
        assert self.proc is not None
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        if f"modlens: listening   ws://127.0.0.1:{self.port}/ws" in text:
            return True
        if self.proc.poll() is not None:
            raise RuntimeError(f"participant {self.index}: modlens serve exited {self.proc.returncode}:\n{text}")
        return False

    def stop(self, timeout: float = 20) -> int | None:
        """SIGTERM, wait; kill if it does not stop in time. Returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise

    def feed_pages(self, root: Path, plan: Plan) -> dict[tuple[str, str], float]:
        """`modlens feed` of every task page (rater modlens-feed, no consent); the scores it printed."""
        scores = {}
        for platform, page in sorted(PAGES.items()):
            f = root / f"page-{platform}.jsonl"
            out = modlens(["feed", str(f), "--platform", platform, "--url", page.url, "--page-key", page.page_key,
                           "--key-col", "key", "--no-variants", "--daemon", self.url], self.home)
            for line in out.stdout.splitlines():
                item = json.loads(line)
                scores[platform, item["key"]] = item["detectors"][study_sim.DETECTOR]["toxicity"]
        return scores


def wait_listening(people: list[Participant], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(people)
    while waiting:
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- participant {p.index}\n{p.log.read_text(errors='replace')}" for p in waiting)
            raise AssertionError(f"{len(waiting)} daemons not listening after {timeout} s:\n{logs}")
        for p in list(waiting):
            try:
                if p.listening():
                    waiting.remove(p)
            except RuntimeError:
                text = p.log.read_text(errors="replace")
                if "cannot listen on" not in text:
                    raise
                p.start()  # the free port was taken meanwhile: another one
        time.sleep(0.1)


def test_eight_participants_merge_and_the_report_recovers_the_planted_study(tmp_path):
    t0 = time.monotonic()
    plan = Plan(thresholds=THRESHOLDS, pages=PAGES, sigmas=SIGMAS)
    plan.comments = study_sim.select_comments(plan)
    per_platform = {p: [c for c in plan.comments if c.platform == p] for p in THRESHOLDS}
    for p, cs in per_platform.items():
        with (tmp_path / f"page-{p}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"key": c.key, "text": c.text}) + "\n" for c in cs)

    pack = researcher(tmp_path)
    gold = tomllib.loads((tmp_path / "study" / "calibration.toml").read_text())["gold"]
    people = [Participant(tmp_path, i, pack) for i in range(N_PARTICIPANTS)]
    try:
        for p in people:
            p.join_and_pair()
        for p in people:
            p.start()
        wait_listening(people)

        fed = [p.feed_pages(tmp_path, plan) for p in people[:FEEDERS]]
        want = {(c.platform, c.key): c.score for c in plan.comments}
        for scores in fed:
            assert scores.keys() == want.keys()
            assert max(abs(scores[k] - want[k]) for k in want) < 1e-6  # the daemon's detector = the selection's

        consent = [f"2026-03-0{1 + i % 9}T1{i}:00:00Z" for i in range(N_PARTICIPANTS)]

        async def everyone() -> list[study_sim.RaterResult]:
            return await asyncio.wait_for(asyncio.gather(*(
                study_sim.rate_participant(p.url, p.token, p.index, plan, STUDY_ID, consent[p.index], gold)
                for p in people)), 180)

        results = asyncio.run(everyone())
        for r in results:  # every daemon, fed or not, scores as the selection did
            assert r.scores == fed[0] and r.n_ratings == len(plan.comments) + len(gold)

        shown = modlens(["export", "--db", str(people[0].db), "--bundle", str(people[0].bundle), "--show"], people[0].home)
        assert not people[0].bundle.exists() and f"sim-rater-0 (consent {consent[0]})" in shown.stdout
        for p in people:
            modlens(["export", "--db", str(p.db), "--bundle", str(p.bundle)], p.home)
        for p in people:
            assert p.stop() == 0, p.log.read_text()
            assert "modlens: stopped" in p.log.read_text()
    finally:
        for p in people:
            if p.proc is not None and p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait(10)
    t_participants = time.monotonic() - t0

    # --- the researcher ------------------------------------------------------------------------
    merged = tmp_path / "merged.sqlite"
    out = modlens(["merge", "--study", str(pack), "--out", str(merged), *(str(p.bundle) for p in people)])
    assert out.stdout.count("merged ") == N_PARTICIPANTS, out.stdout
    again = modlens(["merge", "--out", str(merged), str(people[3].bundle)])
    assert "already merged" in again.stdout
    listing = modlens(["merge", "--list", str(merged)]).stdout
    raters = plan.rater_ids()
    assert f"{N_PARTICIPANTS} bundles, {N_PARTICIPANTS} raters" in listing, listing
    for r, c in zip(raters, consent):
        line = next(ln for ln in listing.splitlines() if f" {r} " in ln)
        assert f" {len(plan.comments) + len(gold)} " in line and c in line, line

    db = sqlite3.connect(merged)
    try:
        n_per_platform = dict(db.execute("SELECT platform, COUNT(*) FROM comments GROUP BY platform").fetchall())
        keys = {(p, k) for p, k in db.execute("SELECT platform, comment_key FROM comments WHERE platform != 'study'")}
        raters_per_comment = db.execute("SELECT c.platform, COUNT(DISTINCT r.rater_id), COUNT(*) FROM ratings r "
                                        "JOIN comments c USING (comment_id) GROUP BY r.comment_id").fetchall()
        consented = dict(db.execute("SELECT rater_id, consent_at FROM raters").fetchall())
        sessions = db.execute("SELECT DISTINCT client FROM sessions").fetchall()
    finally:
        db.close()
    # one row per comment though eight participants (and two feeds) sent it
    assert n_per_platform == {**{p: len(cs) for p, cs in per_platform.items()}, "study": 5}  # 3 gold + 2 anchors
    assert keys == {(c.platform, c.key) for c in plan.comments}
    assert all(n == N_PARTICIPANTS and m == N_PARTICIPANTS for _, n, m in raters_per_comment)
    assert len(raters_per_comment) == len(plan.comments) + len(gold)
    assert consented == dict(zip(raters, consent)) and sessions == [("modlens-study-sim",)]  # no feed session

    t1 = time.monotonic()
    report = json.loads(modlens(["report", "--db", str(merged), "--format", "json"]).stdout)
    t_report = time.monotonic() - t1
    s = report["sections"]

    # overlap: every comment rated by all eight, every pair of raters shares every comment
    ov = s["overlap"]
    assert ov["n_raters"] == N_PARTICIPANTS and ov["n_comments"] == len(plan.comments)
    assert ov["comments_by_raters"]["all platforms"] == {"1": 0, "2": 0, "3": 0, "4": 0, "5+": len(plan.comments)}
    for p, cs in per_platform.items():
        assert ov["comments_by_raters"][p]["5+"] == len(cs)
    assert ov["comments_below_minimum_total"] == 0 and ov["rater_pairs"]["sharing_at_least"]["15"] == 28

    # human ratings: only the gold comments are left out; alpha as the ratings sent give it
    h = s["human"]
    assert h["n_raters"] == N_PARTICIPANTS and h["excluded"] == {"gold comment (attention check)": N_PARTICIPANTS * len(gold)}
    assert all(r["n_gold_wrong"] == 0 and set(r["tasks"]) == {"approve, use"} for r in h["raters"])
    tox = next(a for a in h["attributes"] if a["name"] == "toxicity")
    assert tox["n_comments"] == tox["n_comments_paired"] == len(plan.comments)
    assert tox["n_ratings"] == N_PARTICIPANTS * len(plan.comments)
    import krippendorff

    sent = np.array([[study_sim.TOX.index(r.toxicity[c.platform, c.key]) for c in plan.comments] for r in results], float)
    assert tox["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=sent, level_of_measurement="ordinal"), abs=1e-9)
    planted_alpha, alpha_sd = study_sim.expected_alpha(plan)
    assert abs(tox["alpha"] - planted_alpha) < 0.06, (tox["alpha"], planted_alpha, alpha_sd)

    # detectors vs people: the planted per-platform thresholds, in order
    (det,) = s["people"]["detectors"]
    assert det["detector"] == study_sim.DETECTOR
    fit = det["attributes"]["toxicity"]
    assert fit["levels"] == study_sim.TOX and fit["n"] <= len(plan.comments)
    got = {p: fit["platforms"][p]["crossing_top"] for p in THRESHOLDS}
    for p, planted in THRESHOLDS.items():
        e = fit["platforms"][p]
        assert 0 < e["crossing_top_se"] < 0.06, (p, e)
        assert abs(e["crossing_top"] - planted) < 3 * e["crossing_top_se"] + 0.03, (p, e["crossing_top"], planted)
    assert sorted(got, key=got.get) == sorted(THRESHOLDS, key=THRESHOLDS.get), got
    print(f"\nsimulated study: participants {t_participants:.1f} s, report {t_report:.1f} s, "
          f"alpha {tox['alpha']:.3f} (planted {planted_alpha:.3f} ± {alpha_sd:.3f}), crossings "
          + ", ".join(f"{p} {got[p]:.3f} (planted {THRESHOLDS[p]})" for p in THRESHOLDS))
