"""Live variants, apart from scoring: a page's scores go out whatever the variant backlog.

After its scores are sent, each comment of a page with `variants: true` is offered here. The
study's budget decides (at most `perturbation.live_backlog` waiting, at most
`LiveSession.max_variant_backlog` per connection, and `live_rate` comments/s over all connections
unless it is "auto"; under "auto", `LatencyBudget`: variant rounds may take at most
`LATENCY_RATIO` times the time pages spent waiting for their scores); comments the
study asks participants about (its sampling, the extension's rule) are offered first. A comment
over budget gets an empty `variants` message whose `error` says it was deferred and why, and a
`deferred_variants` row; `modlens rescore --variants` makes its variants later. So does a comment
whose connection closed while it waited (nobody to send its variants to), one waiting or in a
round whose variants were not made when the daemon stops, one whose variants or step error
the study log refused (deferred before it is answered), and one whose round raised before the log took its variants or
step error: every comment offered is made, failed (a step_errors row) or deferred (a row; counted
`deferred_unrecorded` when the log refuses that too).

One worker takes the waiting comments in batches, from every connection at once: one
word-importance pass for the whole batch, the generator over each, and every variant scored by
each detector in one call (derived texts: behind live pages in the batchers, cached per text).
Two such rounds run at once, so the batchers' derived lane is fed while a round generates or records.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from modlens.chunks import StepError, record_results
from modlens.chunks.steps import VARIANTS, generator_identity
from modlens.config import StudyConfig
from modlens.engine import DetectorResult, Engine
from modlens.rows import Variant
from modlens.services.recording import record_variants
from modlens.studylog.connection import LogUnwritable
from modlens.studylog.records.deferred import defer_variants
from modlens.studylog.store import StudyLog

from modlens.live.session import LiveSession, TokenBucket, owe

# the daemon's log: its lines pass the daemon's secret scrubber (`modlens.protocol.security`)
log = logging.getLogger("modlens.daemon")

Send = Callable[[dict[str, Any]], Awaitable[None]]
Write = Callable[[Callable[[StudyLog], Any]], Awaitable[Any]]
# How a variant's scores go on the wire (the service's `_score_out`), and the message itself
Render = Callable[[str, str, list[Variant], list[dict[str, DetectorResult]], list[int | None], str | None],
                  dict[str, Any]]

BATCH_COMMENTS = 64  # comments per worker round: 64 completed 87 c/s where 32 did 73 (docs/PERFORMANCE.md, "Paced participants")
# Rounds in flight at once: while one round's variants wait in the batchers' derived lane, the next
# generates its own (the generator runs in a worker thread, the model in the detector's).
ROUNDS_IN_FLIGHT = 2
# How the daemon's variants run now (`status()["mode"]`, `modlens status`): from the last RECENT comments offered,
# "deferred" when at least half of them were deferred (the model is busy with pages, or the budget binds), else "live".
RECENT = 1_000
# "auto": variant rounds may keep the worker busy this many seconds per second pages waited for their
# scores. On a 2-core CPU a comment's variants cost ten times its page's scoring, so without it a
# participant's feed took 6-10x as long with variants on; a device that makes variants cheaply
# keeps every comment live.
LATENCY_RATIO = 0.75
# The credit it keeps: an idle daemon banks no more than this, and one slow round (the first, made
# before anything was measured) defers the next comments for no longer than this.
CREDIT_CAP_S = 0.5
DECAY = 0.8  # weight of the past in the per-comment cost (each finished round)
# Comments admitted before any round was measured: the first round measures the cost. A cold first
# round (the generator's first use) took 4 s for a page of 20 here, three times a feed of 150 without
# variants, so it is kept small; later comments go live as the measured cost and the credit allow.
PROBE_COMMENTS = 2
# why a comment's variants were left to `modlens rescore --variants`, besides a budget; the last
# parenthesis of a reason is its kind (`reason_kind`)
CONNECTION_CLOSED = "its connection closed while it waited for variants (connection closed)"
DAEMON_STOPPED = "the daemon stopped before its variants were made (daemon stopped)"
# a round that raised before the log took its comments' variants or step errors: no row holds them
ROUND_FAILED = "its variants' round failed ({error}) (round failed)"
# a round that raised after the log took a comment's variants, before they were sent: the protocol's
# "not sent: " answer (Variants.error), counted done
NOT_SENT = "not sent: its variants are in the study log, but answering with them failed ({error})"


def reason_kind(reason: str) -> str:
    """A deferral's reason as `deferred_by_reason` counts it: its last parenthesis (the setting or
    event that put it off); "unknown" for a reason that names none (a row of an earlier version)."""
    return reason.rpartition("(")[2].rstrip(")") if "(" in reason else "unknown"


class LatencyBudget:
    """Variant work paid from scoring time: seconds during which pages waited for scores (the
    batchers' `live_wait_s`) add `ratio` seconds of credit; a comment is admitted for its measured
    cost (wall seconds a round kept the worker busy, per comment), and each round's busy time is
    charged as it ends. Before a round has been measured, `probe` comments are admitted."""

    def __init__(self, scoring_s: Callable[[], float], ratio: float = LATENCY_RATIO, cap_s: float = CREDIT_CAP_S,
                 probe: int = PROBE_COMMENTS):
        self.scoring_s, self.ratio, self.cap, self.probe = scoring_s, ratio, cap_s, probe
        self._seen = scoring_s()
        self.credit = 0.0
        self.per_comment: float | None = None  # seconds; None until a round ends
        self._busy, self._comments = 0.0, 0.0  # decayed sums behind per_comment
        self._in_flight, self._since = 0, 0.0

    def _refill(self) -> None:
        now = self.scoring_s()
        self.credit = min(self.cap, self.credit + self.ratio * (now - self._seen))
        self._seen = now

    def admit(self) -> bool:
        self._refill()
        if self.per_comment is None:
            self.probe -= 1
            return self.probe >= 0
        # a full credit admits one comment even when its cost is over the cap: otherwise a costly first
        # round (the generator's first use) would keep every later one from being measured
        if self.credit < min(self.per_comment, self.cap):
            return False
        self.credit -= self.per_comment  # reserved; given back when its round's real cost is charged
        return True

    def started(self) -> None:
        if self._in_flight == 0:
            self._since = time.monotonic()
        self._in_flight += 1

    def ended(self, n_comments: int, reserved: int) -> None:
        """A round of `n_comments` ended, `reserved` of which were admitted at the estimate."""
        self._in_flight -= 1
        now = time.monotonic()
        busy, self._since = now - self._since, now  # busy since the last start or end (rounds overlap)
        self._refill()
        self.credit = max(-self.cap, self.credit + reserved * (self.per_comment or 0.0) - busy)
        self._busy = self._busy * DECAY + busy
        self._comments = self._comments * DECAY + max(1, n_comments)
        self.per_comment = self._busy / self._comments


@dataclass
class VariantJob:
    msg_id: str
    key: str
    text: str
    comment_id: int | None
    session: LiveSession
    send: Send
    sampled: bool = True
    answered: bool = False  # its `variants` message went out (or was tried)
    handed: bool = False  # its variants or step error went to the study-log writer (a stop lets its round finish)
    reserved: bool = False  # admitted against the latency budget's estimate
    # what its round's write left of it in the log, which is how it is counted: "done" (its variants),
    # "failed" (its step error), "deferred" (the log refused that write: a deferred_variants row, once
    # written); None: nothing (the write not made yet, or nothing of it to write)
    logged: str | None = None
    step_error: str | None = None  # why its variants failed, as its step_errors row says (logged "failed")
    deferral: str | None = None  # its `variants` answer once deferred: the reason, and whether rescore makes them


@dataclass
class VariantStats:
    queued: int = 0
    done: int = 0       # comments whose variants went out (and are in the log, when they have rows)
    failed: int = 0     # generation failed (a step_errors row)
    # deferred, by comment: the deferred_variants row (one per comment) that `modlens rescore --variants`
    # makes; a comment deferred again is still one row, which keeps its reason while still to do
    recorded: dict[int, str] = field(default_factory=dict)  # comment_id -> kind of the reason its row holds
    # over budget, but the study log refused their deferred_variants rows (and no row holds them)
    unrecorded: set[int | str] = field(default_factory=set)

    @property
    def deferred(self) -> int:
        return len(self.recorded)

    def to_dict(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for kind in self.recorded.values():
            reasons[kind] = reasons.get(kind, 0) + 1
        return {"queued": self.queued, "done": self.done, "failed": self.failed, "deferred": self.deferred,
                "deferred_by_reason": reasons, "deferred_unrecorded": len(self.unrecorded - self.recorded.keys())}


def _fnv1a_mixed(text: str) -> int:
    """extension/lib/sampling.js `fnv1a` (over UTF-16 code units, as JavaScript's charCodeAt)."""
    h = 0x811C9DC5
    units = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def asked_about(sampling: Mapping[str, Any], platform: str, key: str, toxicity: float | None) -> bool:
    """The extension's `decideSample`: whether the participant is asked about this comment."""
    mode = sampling.get("mode", "all")
    if mode == "all":
        return True
    salt = str(sampling.get("salt") if sampling.get("salt") is not None else sampling.get("seed", 0))
    u = _fnv1a_mixed(f"{salt}|{platform}|{key}") / 0x100000000
    if mode == "random":
        return u < float(sampling.get("rate", 1.0))
    if toxicity is None:
        return False
    d = min(9, max(0, int(toxicity * 10)))
    rates = sampling.get("decile_rates")
    rate = rates[d] if rates else min(1.0, (sampling.get("per_decile") or 10) / 100)
    return u < float(rate)


def owed_write(jobs: list[VariantJob], what: str, write: Awaitable[Any]) -> "asyncio.Future[Any]":
    """`write` started and owed (`session.owe`) to each connection among `jobs`, naming its comments."""
    by_session: dict[int, tuple[LiveSession, list[str]]] = {}
    for job in jobs:
        by_session.setdefault(id(job.session), (job.session, []))[1].append(job.key)
    return owe(write, [(session.owed, f"the {what} of comments " + ", ".join(repr(k) for k in keys[:3])
                        + (f" and {len(keys) - 3} more" if len(keys) > 3 else ""))
                       for session, keys in by_session.values()])


class LiveVariants:
    def __init__(self, study: StudyConfig, engine: Engine, write: Write, detector_ids: Callable[[], Mapping[str, int]],
                 render: Render, *, batch: int = BATCH_COMMENTS, rounds: int = ROUNDS_IN_FLIGHT):
        p = study.perturbation
        self.study, self.engine, self.write, self.render = study, engine, write, render
        self.detector_ids = detector_ids
        self.batch = batch
        self.rounds = asyncio.Semaphore(max(1, rounds))
        self._in_flight: set[asyncio.Task[None]] = set()
        self._round_jobs: dict[asyncio.Task[None], list[VariantJob]] = {}  # each round in flight's comments
        self._deferring: set[asyncio.Task[bool]] = set()  # deferrals of comments whose connection closed
        self.rate, self.backlog = p.live_rate, p.live_backlog
        # "auto": no rate; the bounded backlog admits what the worker drains, so the hardware sets
        # the pace (a GPU keeps up with pages, a busy 2-core CPU does not and defers)
        self.budget = None if p.live_rate == "auto" or p.live_rate <= 0 else TokenBucket(p.live_rate, max(1, int(p.live_rate)))
        self.latency = LatencyBudget(self._scoring_s) if p.live_rate == "auto" else None
        self.waiting: tuple[deque[VariantJob], deque[VariantJob]] = (deque(), deque())  # asked-about first
        self.stats = VariantStats()
        self.recent: deque[bool] = deque(maxlen=RECENT)  # offered comments, newest last: deferred or not
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- admission --------------------------------------------------------------------------
    def _over_budget(self, job: VariantJob) -> str | None:
        if self.rate == 0:
            return "the study's variant budget is 0 comments/s (perturbation.live_rate)"
        if job.session.variants_queued >= job.session.max_variant_backlog:
            return f"this connection has {job.session.variants_queued} comments waiting for variants (connection backlog)"
        if self.stats.queued >= self.backlog:
            return f"{self.stats.queued} comments wait for variants (perturbation.live_backlog)"
        if self.budget is not None and self.budget.take():
            return f"over the study's variant budget of {self.rate:g} comments/s (perturbation.live_rate)"
        if self.latency is not None:
            measured = self.latency.per_comment is not None
            if not self.latency.admit():
                return (f"variants would slow the pages' scores: live variant work is held to {LATENCY_RATIO:g}x "
                        "the time pages wait for their scores (scoring latency)")
            job.reserved = measured
        return None

    def _scoring_s(self) -> float:
        """Seconds pages have waited for scores: the detector that kept them waiting longest."""
        return max((r.batcher.live_wait_s for r in self.engine.runners.values()), default=0.0)

    async def offer(self, jobs: list[VariantJob]) -> None:
        """Queue each comment for variants, or defer it (recorded, and told to the client)."""
        deferred: list[tuple[VariantJob, str]] = []
        for job in sorted(jobs, key=lambda j: not j.sampled):
            why = self._over_budget(job)
            if why is not None:
                deferred.append((job, why))
                self.recent.append(True)
                continue
            self.recent.append(False)
            self.waiting[0 if job.sampled else 1].append(job)
            job.session.variants_queued += 1
            self.stats.queued += 1
        if len(deferred) < len(jobs):
            self._start()
            self._wake.set()
        if deferred:
            await self._defer(deferred)

    async def _defer(self, deferred: list[tuple[VariantJob, str]], *, tell: bool = True) -> bool:
        """Record `deferred` (job, why) in deferred_variants and count them; `tell`: send each its
        `variants` message (not to a connection that closed). Whether the log took the record."""
        rows = [(j.comment_id, why) for j, why in deferred if j.comment_id is not None]
        held: dict[int, str] = {}  # comment_id -> the reason its row holds (an earlier one, still to do)
        # what the answer says comes of them: made later only when the study log holds their deferral
        later, recorded = "`modlens rescore --variants` makes them later", True
        if rows:
            writing = owed_write([j for j, _ in deferred if j.comment_id is not None], "deferred-variant rows",
                                 self.write(lambda lg: defer_variants(lg, rows)))
            try:
                held = await writing
            except Exception as err:
                if not isinstance(err, LogUnwritable):  # the writer logs that condition once, not per page
                    log.exception("study log: could not record deferred variants")
                reason = err.reason if isinstance(err, LogUnwritable) else f"{type(err).__name__}: {err}"
                later, recorded = (f"the deferral was not recorded in the study log ({reason}), so `modlens "
                                   "rescore --variants` will not make them"), False
        # counted as what the log holds: `deferred` are the comments (one row each) rescore will make,
        # each under the reason its row holds
        for job, why in deferred:
            job.deferral = f"deferred: {why}; {later}"  # what it is told, now or by `_round_failed`
            if recorded and job.comment_id is not None:
                self.stats.recorded[job.comment_id] = reason_kind(held.get(job.comment_id, why))
            else:  # no row: a comment without an id is told apart by its message and key
                self.stats.unrecorded.add(job.comment_id if job.comment_id is not None else f"{job.msg_id}/{job.key}")
        for job, _ in deferred if tell else ():
            await self._send(job, self.render(job.msg_id, job.key, [], [], [], job.deferral))
        return recorded

    # --- the worker -------------------------------------------------------------------------
    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="live-variants")

    async def close(self) -> None:
        """Stop the worker; the comments still waiting, and those of rounds cut short before their
        variants went to the writer, are recorded as deferred (the writer still runs). A round whose
        variants went to the writer is let finish: what is left of it is that write, its answers (to
        closed sockets, nothing) and, when the log refuses the write, its own deferral."""
        handed = {t for t, jobs in self._round_jobs.items() if any(j.handed for j in jobs)}
        # their jobs are none of them handed: `_round` hands all of a round's jobs at once, with no await between
        in_rounds = [j for t, jobs in self._round_jobs.items() if t not in handed for j in jobs]
        tasks = [t for t in (self._task, *self._in_flight) if t is not None and t not in handed]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *handed, *self._deferring, return_exceptions=True)
        self._task = None
        self._in_flight.clear()
        self._round_jobs.clear()
        waiting = [job for lane in self.waiting for job in lane]
        for lane in self.waiting:
            lane.clear()
        for job in waiting:
            job.session.variants_queued -= 1
        self.stats.queued = 0
        left = [j for j in in_rounds if not j.answered] + waiting
        if left:
            if await self._defer([(j, DAEMON_STOPPED) for j in left], tell=False):
                log.info("stopping: the variants of %d comments are left to `modlens rescore --variants`", len(left))
            else:  # the log refused their deferral: nothing will make them
                log.warning("stopping: the variants of %d comments were not made, and the study log refused their "
                            "deferral: `modlens rescore --variants` will not make them", len(left))

    def _take(self) -> tuple[list[VariantJob], list[VariantJob]]:
        """The next round's comments, and those taken whose connection closed meanwhile."""
        jobs: list[VariantJob] = []
        gone: list[VariantJob] = []
        for lane in self.waiting:
            while lane and len(jobs) < self.batch:
                job = lane.popleft()
                job.session.variants_queued -= 1
                self.stats.queued -= 1
                # the client is gone: nobody to send them to; they are deferred, made by rescore
                (gone if job.session.closed else jobs).append(job)
        return jobs, gone

    async def _run(self) -> None:
        while True:
            await self.rounds.acquire()  # a free round slot first: comments wait in the lanes, not in a round
            jobs, gone = self._take()
            if gone:  # off the lanes: a stop must let this deferral finish and be counted, not cut it
                deferring = asyncio.create_task(self._defer([(j, CONNECTION_CLOSED) for j in gone], tell=False))
                self._deferring.add(deferring)
                deferring.add_done_callback(self._deferring.discard)
            if not jobs:
                self.rounds.release()
                self._wake.clear()
                await self._wake.wait()
                continue
            task = asyncio.create_task(self._guarded_round(jobs), name="live-variants-round")
            self._in_flight.add(task)
            self._round_jobs[task] = jobs
            task.add_done_callback(self._in_flight.discard)
            task.add_done_callback(lambda t: self._round_jobs.pop(t, None))

    async def _guarded_round(self, jobs: list[VariantJob]) -> None:
        if self.latency is not None:
            self.latency.started()
        try:
            await self._round(jobs)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a bug of the round itself: still, nobody waits for ever
            log.exception("live variants: a round failed")
            await self._round_failed(jobs, f"{type(err).__name__}: {err}")
        finally:
            if self.latency is not None:
                self.latency.ended(len(jobs), sum(j.reserved for j in jobs))
            self.rounds.release()

    async def _round_failed(self, jobs: list[VariantJob], error: str) -> None:
        """A round raised: its comments not yet answered are counted, and told, as the log holds them
        (`logged`). Those whose variants its write put in the log are done, told their variants were not
        sent; those whose step error it put there are failed, told that error (not the round's); those
        whose write the log refused are already deferred ('variants not recorded', counted there) and told
        that deferral; of the others the log holds nothing, so they are deferred ('round failed'), for
        `modlens rescore --variants`, and told so: a `failed` count names a step_errors row, and none
        holds them."""
        left: list[VariantJob] = []
        for job in jobs:
            if job.answered:
                continue
            if job.logged == "failed" and job.step_error is not None:
                await self._answer_failed(job, job.step_error)
            elif job.logged == "done":
                self.stats.done += 1
                await self._send(job, self.render(job.msg_id, job.key, [], [], [], NOT_SENT.format(error=error)))
            elif job.logged == "deferred" and job.deferral is not None:
                await self._send(job, self.render(job.msg_id, job.key, [], [], [], job.deferral))
            else:  # nothing of it in the log (or its deferral not yet counted): deferred here
                left.append(job)
        if left:
            await self._defer([(j, ROUND_FAILED.format(error=error)) for j in left])

    async def _answer_failed(self, job: VariantJob, error: str, *, counted: bool = True) -> None:
        """`counted`: its step_errors row is in the log (else it is counted by the caller)."""
        message = self.render(job.msg_id, job.key, [], [], [], error)  # before the count: the count is of answers
        if counted:
            self.stats.failed += 1
        log.warning("variants failed for %s: %s", job.key, error)
        await self._send(job, message)

    @staticmethod
    async def _send(job: VariantJob, message: dict[str, Any]) -> None:
        """One job's answer; a connection that fails to take it costs only its own answer."""
        job.answered = True
        try:
            await job.send(message)
        except Exception:
            log.exception("live variants: could not answer %s", job.key)

    async def _round(self, jobs: list[VariantJob]) -> None:
        got = await self.engine.variants_scored([j.text for j in jobs])
        made, errors = got.made, got.errors  # errors: comment text -> why it has no variants (a step_errors row)
        det_ids = dict(self.detector_ids())
        name, version = generator_identity(self.study.perturbation)
        failed = [StepError(t, VARIANTS, name, version, why) for t, why in errors.items()]
        keep = [(j, made[j.text]) for j in jobs if made.get(j.text) and j.comment_id is not None]
        for job in jobs:
            job.handed = True  # the write below is shielded: a stop from now on does not cut it

        def record(lg: StudyLog) -> list[list[int]]:
            if failed:
                record_results(lg, {}, errors=failed)
            return [record_variants(lg, j.comment_id, vs, detector_ids=det_ids,  # type: ignore[arg-type]
                                    scores=got.scores_of(vs)) for j, vs in keep]

        ids_of: dict[int, list[int]] = {}
        refused: str | None = None  # why the log holds none of this round's variants
        writing = owed_write(jobs, "variant rows", self.write(record))
        try:
            for (j, _), ids in zip(keep, await writing):
                ids_of[id(j)] = ids
        except LogUnwritable as err:
            refused = err.reason  # the writer logs the condition once, not a traceback per page
        except Exception as err:
            log.exception("study log: could not record variants")
            refused = f"{type(err).__name__}: {err}"
        # what the log now holds of each, which is how each is counted, here or by `_round_failed` should
        # answering raise. Refused: the log holds neither the step errors nor the variants, so those
        # comments are deferred, not failed or done: each comment offered is in one count
        kept = {id(j) for j, _ in keep}
        for job in jobs:
            wrote = "failed" if job.text in errors else "done" if id(job) in kept else None
            job.logged = "deferred" if refused is not None and wrote else wrote
            job.step_error = errors.get(job.text)
        if refused is not None:  # not in the log: deferred before any answer, so `modlens rescore --variants` makes them
            await self._defer([(j, f"its variants were made but the study log refused them: {refused} "
                                   "(variants not recorded)") for j, _ in keep]
                              + [(j, f"its variants failed ({errors[j.text]}) and the study log refused that step "
                                     f"error: {refused} (variants not recorded)") for j in jobs if j.text in errors],
                              tell=False)
        for job in jobs:
            if job.text in errors:
                if job.logged == "deferred" and job.deferral is not None:  # no step_errors row: told as deferred
                    await self._send(job, self.render(job.msg_id, job.key, [], [], [], job.deferral))
                else:
                    await self._answer_failed(job, errors[job.text], counted=job.logged == "failed")
                continue
            vs = made[job.text]
            variant_ids: list[int | None] = list(ids_of.get(id(job), [None] * len(vs)))
            message = self.render(job.msg_id, job.key, vs, got.scores_of(vs), variant_ids, None)
            if job.logged != "deferred":  # counted as it is answered (a round that raises counts the rest)
                self.stats.done += 1
            await self._send(job, message)

    def mode(self) -> dict[str, Any]:
        """Live or deferred, judged on the last `RECENT` comments offered (none yet: "idle")."""
        n = len(self.recent)
        share = sum(self.recent) / n if n else 0.0
        return {"mode": "idle" if not n else "deferred" if share >= 0.5 else "live",
                "recent_offered": n, "recent_deferred_share": round(share, 4)}

    def status(self) -> dict[str, Any]:
        out = {"live_rate": self.rate, "live_backlog": self.backlog, "live_share": self.study.perturbation.live_share,
               **self.stats.to_dict(), **self.mode()}
        if self.latency is not None and self.latency.per_comment is not None:
            out["variant_s_per_comment"] = round(self.latency.per_comment, 4)
        return out
