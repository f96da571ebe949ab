"""Live variants apart from scoring (live/variants.py): a page is scored whatever the variant
backlog, variant work over the study's budget is deferred with its reason and made later by
`modlens rescore --variants`, and the extension's sampling rule is the daemon's too."""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from pathlib import Path

from modlens.audit.deferred_variants import run_deferred_variants
from modlens.cli.status import variant_budget_line, variant_mode_line
from modlens.live.variants import asked_about

from daemon_helpers import Client, WordListDetector, comments_msg, connect, running_daemon, study
from log_helpers import rows

STRATEGIES = {"budget": 1, "strategies": ["repeat_char", "mixed_case"]}


def hold_generation(app, release: threading.Event, when=lambda text: True) -> list[int]:
    """The daemon's generator waits for `release` (20 s at most) on the texts `when` picks; the
    list's one number counts those that started waiting (generation runs in worker threads)."""
    from modlens.daemon.app import ENGINE
    generator = app[ENGINE].generator
    real, lock, held = generator.generate, threading.Lock(), [0]

    def generate(text, importance=None):
        if when(text):
            with lock:
                held[0] += 1
            release.wait(20)
        return real(text, importance=importance)

    generator.generate = generate
    return held


async def until(check, what: str) -> None:
    """Waits (10 s at most) until `check()`, a look at the daemon's own state, holds."""
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def scored_page(c: Client, mid: str, key: str, text: str) -> None:
    """A page of one comment, sent as message `mid`; returns once its scores came."""
    await c.request(comments_msg(mid, [(key, text)]), "comments_ok")
    await c.until(lambda m: m["id"] == mid and m["type"] == "scores")


async def test_later_pages_are_scored_while_earlier_variants_are_still_being_made(tmp_path):
    # A generator that blocks until released: before the fix, each page held its connection's
    # credit until its variants were made, so the 9th page was refused `rate_limited`.
    cfg = study(perturbation={"enabled": True, "live_rate": 1000, **STRATEGIES}, limits={"burst": 100})
    release = threading.Event()
    async with running_daemon(tmp_path, cfg) as (url, app):
        hold_generation(app, release)
        try:
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello()
                for n in range(12):  # more pages than the connection's 8 pending credits
                    mid = f"c{n}"
                    ok = await c.request(comments_msg(mid, [(f"k{n}", f"you stupid idiot number {n}")]), "comments_ok")
                    assert ok["type"] == "comments_ok", ok
                    scores = await c.until(lambda m, mid=mid: m["id"] == mid and m["type"] in ("scores", "error"))
                    assert scores["type"] == "scores", scores
                assert not [m for m in c.inbox if m["type"] == "variants"]  # none made yet: the generator waits
                release.set()
                got = {(await c.until(lambda m: m["type"] == "variants", timeout=20))["key"] for _ in range(12)}
                assert got == {f"k{n}" for n in range(12)}
        finally:
            release.set()
    assert rows(tmp_path / "study.sqlite", "SELECT count(DISTINCT comment_id) FROM variants") == [(12,)]


async def test_variants_over_the_budget_are_deferred_recorded_and_made_by_rescore(tmp_path):
    cfg = study(perturbation={"enabled": True, "live_rate": 0, **STRATEGIES})
    async with running_daemon(tmp_path, cfg) as (url, _):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("c1", [("k1", "you stupid person"), ("k2", "you dumb hater")]), "comments_ok")
            await c.until(lambda m: m["type"] == "scores")
            deferred = [await c.until(lambda m: m["type"] == "variants") for _ in range(2)]
            status = (await c.request({"type": "status", "id": "s1"}, "status_ok"))["queue"]["variants"]
    # `modlens status` says the daemon defers rather than makes variants live
    assert (status["mode"], status["recent_offered"], status["recent_deferred_share"]) == ("deferred", 2, 1.0)
    assert variant_mode_line(status).startswith("deferred (100% of the last 2 comments deferred")
    assert all(m["items"] == [] and m["error"].startswith("deferred: ") and "live_rate" in m["error"] for m in deferred)
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT count(*) FROM deferred_variants WHERE done_at IS NULL AND reason LIKE '%live_rate%'") == [(2,)]
    assert rows(db, "SELECT count(*) FROM variants") == [(0,)]

    result = await asyncio.to_thread(run_deferred_variants, db, study=cfg, detector_objects={"wordlist": WordListDetector()})
    assert (result.comments, result.still_to_do) == (2, 0) and result.variants == 2  # budget 1 each
    assert rows(db, "SELECT count(DISTINCT comment_id) FROM variants") == [(2,)]
    assert rows(db, "SELECT count(*) FROM deferred_variants WHERE done_at IS NULL") == [(0,)]
    # the variants were scored by the study's detector, as live ones are
    assert rows(db, "SELECT count(*) FROM variants v LEFT JOIN scores s USING (text_id) WHERE s.text_id IS NULL") == [(0,)]
    # a rerun has nothing left to do
    again = await asyncio.to_thread(run_deferred_variants, db, study=cfg, detector_objects={"wordlist": WordListDetector()})
    assert again.comments == 0


async def _page_of_variants(cfg, tmp_path, n: int, hold: bool = False) -> tuple[list[dict], dict]:
    """One page of n comments, variants asked for; (its n `variants` answers, the daemon's variant
    status). hold: generation waits until every answer for a deferred comment is in."""
    release = threading.Event()
    async with running_daemon(tmp_path, cfg) as (url, app):
        if hold:
            hold_generation(app, release)
        try:
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello()
                page = [(f"k{i}", f"you stupid idiot number {i}") for i in range(n)]
                await c.request(comments_msg("c1", page), "comments_ok")
                # held: the deferred answers come at once, the rest once generation goes on
                first = [await c.until(lambda m: m["type"] == "variants", timeout=20)
                         for _ in range(n - cfg.perturbation.live_backlog if hold else n)]
                status = (await c.request({"type": "status", "id": "s1"}, "status_ok"))["queue"]["variants"]
                release.set()
                rest = [await c.until(lambda m: m["type"] == "variants", timeout=20) for _ in range(n - len(first))]
        finally:
            release.set()
    return first + rest, status


async def test_auto_rate_pays_variants_from_scoring_time_not_a_fixed_rate(tmp_path):
    """The default live_rate "auto" has no fixed comments/s: variant work is paid from the time pages
    waited for their scores (live/variants.py LatencyBudget; tests/test_live_variant_budget.py for
    the hardware that keeps up). Before any round was measured, a few comments probe the cost; the
    rest of the page is deferred for the scoring latency, recorded, and made later by rescore. A fixed
    rate defers what exceeds it however idle the model (the H200 deferred 94,160 of 95,736 comments
    at the old fixed 20/s)."""
    from modlens.live.variants import PROBE_COMMENTS
    answers, status = await _page_of_variants(study(perturbation={"enabled": True, **STRATEGIES}), tmp_path / "a", 30)
    assert status["live_rate"] == "auto" and status["deferred"] == 30 - PROBE_COMMENTS
    assert status["deferred_by_reason"] == {"scoring latency": 30 - PROBE_COMMENTS}
    assert sum(1 for m in answers if m["items"] and m["error"] is None) == PROBE_COMMENTS
    assert all(m["error"].startswith("deferred: variants would slow the pages' scores") for m in answers if not m["items"])
    assert rows(tmp_path / "a" / "study.sqlite", "SELECT count(*) FROM deferred_variants "
                "WHERE reason LIKE '%scoring latency%'") == [(30 - PROBE_COMMENTS,)]
    assert variant_budget_line(status) == "budget: variant work may take 0.75x the time pages wait for their scores, at most 256 waiting"
    fixed = study(perturbation={"enabled": True, "live_rate": 1, **STRATEGIES})
    answers, status = await _page_of_variants(fixed, tmp_path / "b", 30)
    assert status["deferred"] == 29 and status["mode"] == "deferred"  # a burst of 1 at 1 comment/s
    assert sum(1 for m in answers if m["error"] and "live_rate" in m["error"]) == 29
    assert variant_budget_line(status) == "budget 1 comments/s, at most 256 waiting"


async def test_the_backlog_defers_what_a_busy_model_cannot_take(tmp_path):
    """When the worker falls behind (here: generation held), the bounded backlog defers the rest.
    A rate high enough not to bind: under "auto" the latency budget's probe binds before a backlog
    of 4 (tests/test_live_variant_budget.py)."""
    cfg = study(perturbation={"enabled": True, "live_backlog": 4, "live_rate": 1000, **STRATEGIES})
    answers, status = await _page_of_variants(cfg, tmp_path, 10, hold=True)
    assert (status["done"], status["deferred"], status["mode"]) == (0, 6, "deferred")
    assert sum(1 for m in answers if m["error"] and "live_backlog" in m["error"]) == 6
    assert sum(1 for m in answers if m["items"]) == 4
    assert variant_mode_line(status).startswith("deferred (60% of the last 10 comments deferred")
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT count(*) FROM deferred_variants WHERE reason LIKE '%live_backlog%'") == [(6,)]


def test_the_variant_mode_follows_the_last_offered_comments():
    from modlens.live.variants import RECENT, LiveVariants

    lv = LiveVariants.__new__(LiveVariants)
    lv.recent = __import__("collections").deque(maxlen=RECENT)
    assert lv.mode()["mode"] == "idle" and variant_mode_line({**lv.mode()}).startswith("idle")
    lv.recent.extend([True] * (RECENT * 3))  # a busy start, all deferred ...
    assert lv.mode() == {"mode": "deferred", "recent_offered": RECENT, "recent_deferred_share": 1.0}
    lv.recent.extend([False] * (RECENT // 2 + 1))  # ... then the model has room: live again, on recent comments only
    assert lv.mode()["mode"] == "live" and len(lv.recent) == RECENT
    assert variant_mode_line(lv.mode()).startswith("live (50% of the last 1,000 comments deferred")


def test_sampling_rule_is_the_extensions():
    """The daemon serves asked-about comments first by the extension's own rule (lib/sampling.js)."""
    lib = Path(__file__).resolve().parents[1] / "extension" / "lib" / "sampling.js"
    keys = [f"key-{n}" for n in range(40)] + ["ü-é", "😀"]
    sampling = {"mode": "random", "rate": 0.5, "salt": "s"}
    script = (f"const ns = require({json.dumps(str(lib))}); const keys = {json.dumps(keys)};"
              f"console.log(JSON.stringify(keys.filter(k => ns.decideSample({json.dumps(sampling)}, "
              "{platform: 'youtube', key: k}, []).sampled)))")
    node = shutil.which("node")
    assert node, "node runs the extension's tests; it is needed here too"
    picked_by_extension = json.loads(subprocess.run([node, "-e", script], capture_output=True, text=True,
                                                    check=True).stdout)
    assert [k for k in keys if asked_about(sampling, "youtube", k, None)] == picked_by_extension
    assert 5 < len(picked_by_extension) < 37
    assert asked_about({"mode": "all"}, "youtube", "k", None)
    assert not asked_about({"mode": "deciles", "per_decile": 10, "salt": "s"}, "youtube", "k", None)  # no score


class VariantScoringFails(WordListDetector):
    """Answers for the page's own words; an answer for any other word (a variant's
    `stuupid`) has no toxicity it can give: `toxicity` raises an error the runner does not
    expect, so scoring the round's variants raises."""

    VOCAB = {"you", "stupid", "idiot", "dumb", "hater", "person"}

    def score(self, texts):
        out = super().score(texts)
        for t, labels in zip(texts, out):
            if any(w.strip(".,!?").lower() not in self.VOCAB for w in t.split()):
                labels["broken"] = 1.0
        return out

    def toxicity(self, scores):
        if scores is not None and "broken" in scores:
            raise RuntimeError("detector cannot read its own answer")
        return super().toxicity(scores)


async def test_a_round_whose_variant_scoring_raises_answers_every_comment_and_records_the_error(tmp_path):
    cfg = study(perturbation={"enabled": True, "live_rate": 1000, "budget": 1, "strategies": ["repeat_char"]})
    async with running_daemon(tmp_path, cfg, detectors={"wordlist": VariantScoringFails()}) as (url, app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("c1", [("k1", "you stupid idiot"), ("k2", "you dumb hater")]), "comments_ok")
            scores = await c.until(lambda m: m["type"] == "scores")
            assert {i["key"] for i in scores["items"]} == {"k1", "k2"}
            got = [await c.until(lambda m: m["type"] == "variants") for _ in range(2)]
        from modlens.daemon.app import PIPELINE
        stats = app[PIPELINE].live_variants.status()
    assert {m["key"] for m in got} == {"k1", "k2"}
    assert all(m["items"] == [] and "RuntimeError" in m["error"] for m in got), got
    assert (stats["failed"], stats["done"], stats["queued"]) == (2, 0, 0)
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT t.text, e.step FROM step_errors e JOIN texts t USING (text_id) ORDER BY t.text") == [
        ("you dumb hater", "variants"), ("you stupid idiot", "variants")]
    assert rows(db, "SELECT count(*) FROM variants") == [(0,)]


async def test_a_round_stuck_in_generation_does_not_hold_back_the_next_and_rounds_in_flight_are_bounded(tmp_path):
    # Rounds overlap (live/variants.py ROUNDS_IN_FLIGHT): while one round waits (here its
    # generator, in the daemon: its variants in the batchers' derived lane), the next one runs.
    from modlens.daemon.app import PIPELINE
    from modlens.live.variants import ROUNDS_IN_FLIGHT
    assert ROUNDS_IN_FLIGHT == 2
    cfg = study(perturbation={"enabled": True, "live_rate": 1000, **STRATEGIES})
    release = threading.Event()
    async with running_daemon(tmp_path, cfg) as (url, app):
        live = app[PIPELINE].live_variants
        held = hold_generation(app, release, lambda text: "hold" in text)
        try:
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello()
                await scored_page(c, "c1", "k1", "hold you stupid idiot")
                await until(lambda: held[0] == 1, "the first round")
                await scored_page(c, "c2", "k2", "free you stupid idiot")  # a second round, beside the stuck one
                done = await c.until(lambda m: m["type"] == "variants", timeout=20)
                assert done["key"] == "k2" and done["items"], done
                await scored_page(c, "c3", "k3", "hold you dumb hater")
                await until(lambda: held[0] == 2, "the second stuck round")
                await scored_page(c, "c4", "k4", "free you dumb hater")  # both slots are stuck: it waits its turn
                await until(lambda: live.stats.queued == 1, "the fourth comment to wait")
                assert not [m for m in c.inbox if m["type"] == "variants" and m["key"] == "k4"]
                release.set()
                got = {(await c.until(lambda m: m["type"] == "variants", timeout=20))["key"] for _ in range(3)}
                assert got == {"k1", "k3", "k4"}
        finally:
            release.set()
    assert held[0] == 2 and live.stats.done == 4
