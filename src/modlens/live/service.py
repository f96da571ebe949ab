"""The live service: a page of comments at a time through the chunk pipeline's steps.

A page's comments are registered (page, comments, sightings) as soon as they arrive, so a rating
that follows finds them; they are normalized and scored beside that write (what the log lacks is
scored: the engine's batchers cache by text), the scores are answered and recorded
(`chunks.record_results`), then the page is offered to the budgeted live-variant worker
(`variants.py`).

One rule for every acknowledgement (`comments_ok`, `rating_ok`, `comment_media_ok`): it is sent
after the COMMIT of the rows it vouches for, and it names them (comment_ids, rating_id,
media_ids). A write that fails is answered with an error, never an acknowledgement: the study
log that cannot be written now (`LogUnwritable`: full disk, I/O error, read-only) is `unavailable`,
which the client retries; the transport maps it (`modlens.daemon.app`). A normalizer or generator that fails
(or does not exist yet) costs only its own output: the error is sent and recorded (`step_errors`,
the chunk pipeline's one error policy, `modlens.chunks.steps`), the scores still go out. Every
write goes through the single LogWriter and is shielded from cancellation, so a client that
disconnects mid-page loses nothing that was accepted.

`run.running` starts the service with its resources.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Coroutine

from modlens import __version__, pairing
from modlens import protocol as p
from modlens.chunks import Failed, StepError, record_results
from modlens.chunks.steps import NORMALIZE, each, normalizer_identity
from modlens.config import StudyConfig
from modlens.datasets.base import blank_reason
from modlens.engine import DetectorResult, Engine
from modlens.errors import with_fix
from modlens.live.session import LiveSession, owe
from modlens.live.variants import LiveVariants, VariantJob, asked_about
from modlens.media import MediaInput
from modlens.media.store import MediaFolderRefused, MediaStore
from modlens.protocol import ErrorCode, ProtocolError
from modlens.ratings import derive_toxicity, rating_problems
from modlens.rows import Variant
from modlens.services import comment_media as comment_images
from modlens.live.join import JOIN_FRAME_BYTES, is_join_frame
from modlens.services.recording import register, score_rows
from modlens.study import assignment, calibration
from modlens.study.assignment import Plan
from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.connection import LogUnwritable, unwritable
from modlens.studylog.store import LogWriter, StudyLog
from modlens.rows import CommentRow

# The extension's account of how each comment's parent was determined (CommentItem.parent_via):
# a label of the comment, so it travels with export, bundles and merges without a schema change.
PARENT_VIA_LABEL = "parent_via"
PARENT_VIA_SOURCE = "extension"

# the daemon's log: its lines pass the daemon's secret scrubber (`modlens.protocol.security`)
log = logging.getLogger("modlens.daemon")


def media_consent(keep_bytes: bool, local: list[str], remote: dict[str, list[str]]) -> str:
    """The sentences added to the consent text of a study that collects comment images: where they are
    scored (`local`: the media detectors that run here; `remote`: key -> where the others send them,
    the images with the text) and everything the log keeps of them (media, comment_media.source_url,
    ocr_results), so the participant agrees to what is written."""
    where = []
    if local:
        where.append("scored on this computer")
    if remote:
        where.append("sent, to be scored, to " + "; ".join(f"{', '.join(dest)} (detector {key})"
                                                          for key, dest in remote.items()))
    scored = " and ".join(where) if where else "not scored (no detector of this study reads images)"
    kept = ("the image files are kept in the study's data folder with the log" if keep_bytes
            else "not the image files")
    return (f"Images attached to the comments you see are collected too: they are {scored}. The log keeps "
            "their fingerprints (SHA-256) and sizes, the web address each was shown from, and any text read "
            f"from them by a detector; {kept}.")


def _not_as_stored(stored: dict[str, Any], comment_id: int, msg: p.Rating) -> list[str]:
    """What of `msg` differs from the rating stored under its id (`StudyLog.stored_rating`): none for a resend."""
    anchors = msg.anchors.model_dump() if msg.anchors else None
    return [what for what, same in (
        ("comment", stored["comment_id"] == comment_id),
        ("values", stored["values_json"] == canonical_json(dict(msg.values))),
        ("anchors", stored["anchors_json"] == (None if anchors is None else canonical_json(anchors))))
        if not same]


def _ok_as_stored(msg_id: str, rating_id: int, stored: dict[str, Any]) -> p.RatingOk:
    """The answer to a resend: the rating stored under its id (`StudyLog.stored_rating`), acknowledged
    as the duplicate it is, with what the log holds (not what the resend says)."""
    return p.RatingOk(id=msg_id, rating_id=rating_id, derived_toxicity=stored["derived_toxicity"],
                      inconsistent=bool(stored["inconsistent"]), duplicate=True,
                      time_spent_over_limit=stored["time_spent_over_limit_ms"] is not None)


Send = Callable[[dict[str, Any]], Awaitable[None]]
NOT_MADE = "not made: "  # a `variants` error for a comment nobody scores (blank): `Variants.error`


@dataclass
class Accepted:
    key: str
    text: str
    item: p.CommentItem
    truncated: bool
    original_length: int


def _score_out(r: DetectorResult) -> p.DetectorScore:
    return p.DetectorScore(name=r.name, version=r.version, labels=r.labels, toxicity=r.toxicity,
                           latency_ms=round(r.latency_ms, 3), error=r.error)


def _variants_message(msg_id: str, key: str, variants: list[Variant], scores: list[dict[str, DetectorResult]],
                      ids: list[int | None], error: str | None) -> dict[str, Any]:
    items = [p.VariantOut(variant_id=vid, text=v.text, strategy=v.strategy, params=v.params, seed=v.seed,
                          positions=[list(x) for x in v.positions],
                          detectors={k: _score_out(r) for k, r in sc.items()})
             for v, sc, vid in zip(variants, scores, ids)]
    return p.Variants(id=msg_id, key=key, items=items, error=error).dump()


class LiveService:
    def __init__(self, study: StudyConfig, engine: Engine, writer: LogWriter, *, variant_concurrency: int = 1,
                 media_store: MediaStore | None = None, plan: Plan | None = None):
        # variant_concurrency: accepted for older callers; one worker batches every connection's variants
        self.study = study
        self.plan = plan  # the study's item set and assignment (study/assignment.py), if it has one
        self.media_store = media_store or MediaStore()
        self.engine = engine
        self.writer = writer
        self.detector_ids: dict[str, int] = {}
        self.sessions: set[LiveSession] = set()  # those that said hello and are not closed
        self.unended: set[str] = set()  # ids of the sessions this service started whose end is not written
        # of those, the ones that ended but whose end the log refused: id -> (ended_by, ended_at), written by the
        # next session write (`_session_write`), else by the stop
        self.ends_owed: dict[str, tuple[str, str]] = {}
        self.live_variants = LiveVariants(study, engine, self.write, lambda: self.detector_ids, _variants_message)
        self.sampling = self.client_settings()["sampling"]  # the extension's rule: asked-about comments first
        self.in_flight_writes = 0
        self.extreme_anchor = next((a.rating for a in study.anchors if a.role == "extreme"), None)
        self.attributes = {a.name: a.levels for a in study.attributes}

    async def close(self) -> None:
        """Stops the variant worker: comments still waiting for variants are recorded as deferred
        ('daemon stopped'), for `modlens rescore --variants`; their scores went out."""
        await self.live_variants.close()

    # --- writes ------------------------------------------------------------------------
    async def write(self, fn: Callable[[StudyLog], Any]) -> Any:
        """One study-log call through the writer; resolves after its transaction committed.
        Shielded: cancelling the caller does not cancel the write."""
        self.in_flight_writes += 1
        try:
            return await asyncio.shield(self.writer.submit(fn))
        finally:
            self.in_flight_writes -= 1

    async def _session_write(self, fn: Callable[[StudyLog], Any]) -> Any:
        """`fn` through the writer, after, in its transaction, the ends the log refused earlier
        (`ends_owed`, as they happened): once the log is writable again (a disk with room again) the
        next hello or close puts them in it, so a report on the live log does not see those sessions
        open until the stop. The ends it wrote are no longer owed."""
        owed = dict(self.ends_owed)

        def with_owed_ends(lg: StudyLog) -> Any:
            for sid, (ended_by, at) in owed.items():
                lg.end_session(sid, ended_by, at)
            return fn(lg)

        result = await self.write(with_owed_ends if owed else fn)
        for sid, ended in owed.items():
            if self.ends_owed.get(sid) == ended:
                del self.ends_owed[sid]
            self.unended.discard(sid)
        return result

    async def prepare(self) -> None:
        """Record the study and every loaded detector (name, version, config) once, then the
        calibration items (gold + anchors, for the calibration round) and the item set's comments
        (for the extension's item-set page)."""
        study, dets = self.study, self.engine.detectors
        self.detector_ids = await self.write(lambda lg: register(lg, study, dets))
        await self.record_calibration_items()
        await self.record_itemset_items()

    async def record_calibration_items(self) -> dict[str, int]:
        """Validate and record the study's calibration items (gold, anchors, review texts)."""
        study = self.study
        items = calibration.calibration_items(study)
        if not items:
            return {}
        ids: dict[str, int] = await self.write(lambda lg: calibration.record_items(lg, study, items))
        log.info("calibration: %d gold comments, %d anchors and %d attack texts to review in the study log",
                 sum(i.role == "gold" for i in items), sum(i.role == "anchor" for i in items),
                 sum(i.role == "review" for i in items))
        return ids

    async def record_itemset_items(self) -> None:
        """The item set's comments, so the extension's item-set page can rate them."""
        study, plan = self.study, self.plan
        if plan is None:
            return
        n = await self.write(lambda lg: assignment.record_items(lg, study, plan))
        log.info("item set: %d comments in the study log, %d assignments", n, len(plan.assignment["assignments"]))

    def detector_infos(self) -> list[p.DetectorInfo]:
        return [p.DetectorInfo(key=k, name=d.name, version=d.version, toxicity_label=d.toxicity_label,
                               threshold=d.threshold) for k, d in self.engine.detectors.items()]

    @property
    def variants_enabled(self) -> bool:
        return self.engine.generator is not None

    # --- frames ------------------------------------------------------------------------------
    def max_frame_bytes(self, *, joinable: bool) -> int:
        """The largest frame the transport may read: the largest `message_limit` (room for one image
        of `media.max_bytes`, and, on a daemon that can join a study, for one pack in a `join_study`)."""
        return max(self.message_limit(t, joinable=joinable) for t in ("comment_media", "join_study"))

    def frame_limit(self, raw: str | bytes, size: int, *, ready: bool, joinable: bool) -> int:
        """The size limit of a frame of `size` bytes, read before it is parsed: `max_message_bytes`,
        or room for one image in a `comment_media` frame, or for one pack in a `join_study` frame
        once the connection said hello, on a daemon that can join (only a frame over the first is
        looked into)."""
        limit = self.study.limits.max_message_bytes
        if size <= limit:
            return limit
        looks_like = ("comment_media" if comment_images.is_media_frame(raw)
                      else "join_study" if joinable and ready and is_join_frame(raw) else "")
        return self.message_limit(looks_like, joinable=joinable)

    def message_limit(self, msg_type: str, *, joinable: bool) -> int:
        """The size limit of a parsed message of `msg_type` (the one table of limits: `frame_limit` and
        `max_frame_bytes` read it too): what `frame_limit` allowed its frame by a look at its start
        holds only for the message that frame turned out to be."""
        if msg_type == "comment_media":
            return comment_images.media_frame_bytes(self.study)
        if msg_type == "join_study" and joinable:
            return JOIN_FRAME_BYTES
        return self.study.limits.max_message_bytes

    # --- hello ---------------------------------------------------------------------------
    async def open_session(self, session: LiveSession, hello: p.Hello) -> p.HelloOk:
        if hello.study_id is not None and hello.study_id != self.study.study_id:
            raise ProtocolError(ErrorCode.study_mismatch,
                                f"study_id: {hello.study_id!r} is not the running study {self.study.study_id!r}", hello.id)
        study_id = self.study.study_id
        settings = self.client_settings()
        consent_text = settings["consent_text"]
        if hello.consent_sha256 is not None and hello.consent_sha256 != p.consent_text_sha256(consent_text):
            # a consent counts for the text agreed to: one given to an earlier text is no consent to this one
            raise ProtocolError(ErrorCode.consent_outdated,
                                "consent_sha256: the consent was given to another consent text than the running study's "
                                "current one; ask the participant again (hello without consent shows the text)", hello.id)

        plan = self.plan

        def start(lg: StudyLog) -> int | None:
            lg.ensure_rater(study_id, hello.rater_id, hello.consent_at, consent_text)  # recorded only with consent_at
            if hello.consent_withdrawn_at is not None:  # written before hello_ok, which is its acknowledgement
                lg.withdraw_consent(study_id, hello.rater_id, hello.consent_withdrawn_at)
            lg.start_session(session.session_id, study_id, hello.rater_id, hello.client,
                             hello.client_version, hello.protocol)
            return None if plan is None else assignment.slot_of(assignment.session_raters(lg, study_id),
                                                                hello.rater_id, plan)

        self.unended.add(session.session_id)  # before its write: a hello cut short by a stop is ended by it
        slot = await self._session_write(start)
        session.rater_id, session.client, session.ready = hello.rater_id, hello.client, True
        self.sessions.add(session)
        if plan is not None and slot is not None:
            settings["itemset"] = assignment.client_assignment(plan, slot)  # this rater's tasks: itemset.html
            session.assignment = settings["itemset"]["assignment"]  # the one its item-set ratings may name
        return p.HelloOk(id=hello.id, session_id=session.session_id, server_version=__version__,
                         study=settings, detectors=self.detector_infos(),
                         variants_enabled=self.variants_enabled)

    def client_settings(self) -> dict[str, Any]:
        settings = self.study.client_settings(running=self.engine.detectors)  # the consent names what loaded
        media = self.study.media
        settings["media"] = {"collect": media.collect, "keep_bytes": media.keep_bytes, "max_bytes": media.max_bytes,
                             "max_per_comment": media.max_per_comment}
        if media.collect:
            # the consent the participant gives must cover the images too: the text says so
            keys = comment_images.media_detector_keys(media, self.engine.detectors)
            destinations = self.study.destinations()
            sentence = media_consent(media.keep_bytes, [k for k in keys if k not in destinations],
                                     {k: destinations[k] for k in keys if k in destinations})
            settings["consent_text"] = f"{settings['consent_text'].rstrip()} {sentence}"
        settings["author_salt"] = settings["author_salt"] or pairing.study_salt(self.study.study_id)
        # The extension samples by hash(salt, platform, key): the salt comes from the study file
        # only (never this machine's fallback author salt), so every participant samples alike.
        sampling = settings["sampling"]
        basis = "\0".join(["modlens-sampling", self.study.study_id, self.study.author_salt or "", str(sampling.get("seed", 0))])
        sampling["salt"] = sampling.get("salt") or hashlib.sha256(basis.encode()).hexdigest()[:32]
        return settings

    async def close_session(self, session: LiveSession, ended_by: str = "client") -> None:
        """`ended_by`: 'client' (the socket closed) or 'shutdown' (the daemon closed it, stopping)."""
        self.sessions.discard(session)
        sid = session.session_id
        if sid in self.unended:  # its hello's write was made (a failed one wrote nothing: a no-op)
            ended = (ended_by, now_iso())  # as it happened, whenever it is written
            try:
                await self._session_write(lambda lg: lg.end_session(sid, *ended))
            except BaseException:
                self.ends_owed[sid] = ended  # the next session write or the stop writes this end, not one of its own
                raise
            self.unended.discard(sid)

    # --- comments --------------------------------------------------------------------------
    def take_comments(self, session: LiveSession, msg: p.Comments, send: Send) -> Coroutine[Any, Any, None]:
        """A page: its comments start being written now (a rating that follows finds them). Returns
        the work that answers it: `comments_ok` once that write committed, then the scores (an
        error instead when the write failed); the page counts as pending (`session.pending`) until
        that work ends."""
        items = self.accept(msg)
        recorded = self.record_comments(session, msg, items)
        session.pending += 1

        async def work() -> None:
            try:
                await self.process_comments(session, msg, items, recorded, send)
            finally:
                session.pending -= 1

        return work()

    def accept(self, msg: p.Comments) -> list[Accepted]:
        limits = self.study.limits
        if len(msg.items) > limits.max_items_per_message:
            raise ProtocolError(ErrorCode.invalid_fields,
                                f"items: {len(msg.items)} items, at most {limits.max_items_per_message} per message", msg.id)
        out: dict[str, Accepted] = {}
        for item in msg.items:
            if item.key in out:
                continue  # a page can list the same comment twice; score it once
            cut = len(item.text) > limits.max_comment_chars
            out[item.key] = Accepted(item.key, item.text[:limits.max_comment_chars] if cut else item.text,
                                     item, cut, len(item.text))
        return list(out.values())

    def record_comments(self, session: LiveSession, msg: p.Comments, items: list[Accepted]) -> "asyncio.Future[list[int]]":
        """Start writing page, comments and sightings; returns the pending comment_ids.
        Called synchronously on receipt, so a rating that follows finds its comment."""
        page, platform = msg.page, msg.page.platform
        sid = session.session_id

        def record(lg: StudyLog) -> list[int]:
            # the page's comments in one batched insert (the rows `add_comment` writes one by one)
            page_id = lg.ensure_page(platform, page.page_key, page.url, page.title)
            # how the parent was found is a first label: kept with the first sighting, like parent_key itself
            ids = lg.add_comments_many(platform, [
                CommentRow(a.key, a.text, page_id, a.item.parent_key, a.item.author_hash, a.item.time_shown,
                           a.truncated, a.original_length,
                           None if a.item.parent_via is None else
                           {PARENT_VIA_LABEL: (a.item.parent_via, PARENT_VIA_SOURCE)}) for a in items])
            # with the text this session was sent: the comment keeps its first text, an edit shown later
            # is what this session saw (a bundle sends a comment as its consenting raters saw it)
            lg.add_sightings([(cid, sid, a.text) for cid, a in zip(ids, items)])
            return ids

        recorded = asyncio.ensure_future(self.write(record))
        # its failure is answered by the page's work; when that work was cancelled (the client left),
        # nobody else may look: retrieved here, so asyncio logs no traceback for it
        recorded.add_done_callback(lambda f: f.cancelled() or f.exception())
        session.remember_comments(platform, [a.key for a in items], recorded)
        return recorded

    async def process_comments(self, session: LiveSession, msg: p.Comments, items: list[Accepted],
                               recorded: "asyncio.Future[list[int]]", send: Send) -> None:
        """Score while the comments are being written; once they are committed, acknowledge them,
        send the scores, log them, then variants. A failed write raises (the page's error answer)."""
        texts = [a.text for a in items]
        scoring = asyncio.ensure_future(self._score_page(texts))
        try:
            comment_ids = list(await asyncio.shield(recorded))  # a rating may be waiting on it too
        except BaseException:
            scoring.cancel()  # the client sends the page again: it is scored then
            await asyncio.gather(scoring, return_exceptions=True)
            raise
        try:
            await send(p.CommentsOk(id=msg.id, accepted=len(items), truncated=[a.key for a in items if a.truncated],
                                    comment_ids={a.key: cid for a, cid in zip(items, comment_ids)}).dump())
            scores, (norms, norm_scores) = await scoring
        finally:
            scoring.cancel()  # only when cancelled itself (the client left): nothing waits for these scores
        await self._answer_scores(session, msg, items, comment_ids, texts, scores, norms, norm_scores, send)

    async def _score_page(self, texts: list[str]) -> tuple[list[dict[str, DetectorResult]], Any]:
        """The page's scores, and its normalized texts with theirs. A blank text (`blank_reason`)
        is neither normalized nor scored: its scores are {} (the answer says why)."""
        todo = [t for t in texts if blank_reason(t) is None]

        async def normalize_and_score() -> tuple[list[tuple[Any, str | None]], dict[str, dict[str, DetectorResult]]]:
            # Runs beside the originals' scoring: normalized texts that are ready within the
            # batcher's window share the originals' model call instead of waiting for it.
            norms = await self._normalize(todo)
            changed = list(dict.fromkeys(n.text for n, _ in norms if n is not None and n.text not in todo
                                         and blank_reason(n.text) is None))
            return norms, (dict(zip(changed, await self.engine.score(changed))) if changed else {})

        scored, (norms, norm_scores) = await asyncio.gather(self.engine.score(todo), normalize_and_score())
        if len(todo) == len(texts):
            return scored, (norms, norm_scores)
        got, got_norms = iter(scored), iter(norms)
        blank = [blank_reason(t) is not None for t in texts]
        return ([{} if b else next(got) for b in blank],
                ([(None, None) if b else next(got_norms) for b in blank], norm_scores))

    async def _answer_scores(self, session: LiveSession, msg: p.Comments, items: list[Accepted], comment_ids: list[int],
                             texts: list[str], scores: list[dict[str, DetectorResult]],
                             norms: list[tuple[Any, str | None]], norm_scores: dict[str, dict[str, DetectorResult]],
                             send: Send) -> None:
        out = []
        # a normalized text that is another comment's text on this page was scored as that comment
        # (`_score_page` scores each text once): its scores are that comment's, not none
        scored_as = {**dict(zip(texts, scores)), **norm_scores}
        for a, cid, sc, (norm, norm_err) in zip(items, comment_ids, scores, norms):
            normalized = None
            if norm is not None:
                norm_sc = {} if norm.text == a.text else scored_as.get(norm.text, {})  # empty: unchanged
                normalized = p.NormalizedOut(
                    text=norm.text, edits=[e.to_dict() for e in norm.edits], normalizer=norm.normalizer,
                    version=norm.version, detectors={k: _score_out(r) for k, r in norm_sc.items()})
            out.append(p.ScoreItem(key=a.key, comment_id=cid, truncated=a.truncated,
                                   detectors={k: _score_out(r) for k, r in sc.items()},
                                   normalized=normalized, error=norm_err, not_scored=blank_reason(a.text)))
        # owed to this connection before the scores go out, so a `sync` that follows them waits for the rows
        recording = owe(self._record_scores(texts, scores, norms, norm_scores),
                        [(session.owed, f"the scores of comments message {msg.id!r}")])
        await send(p.Scores(id=msg.id, items=out).dump())
        try:
            await recording  # shielded: its outcome is the connection's, even if it leaves
        except LogUnwritable:
            pass  # the writer logs the condition once; `sync` says so; `modlens rescore` scores them later
        except Exception:
            log.exception("study log: could not record scores")

        if msg.variants and self.variants_enabled:
            sampling, det = self.sampling, self.sampling.get("detector") or next(iter(self.engine.runners), None)
            await self.live_variants.offer([
                VariantJob(msg.id, a.key, a.text, cid, session, send,
                           asked_about(sampling, msg.page.platform, a.key, sc[det].toxicity if det in sc else None))
                for a, cid, sc in zip(items, comment_ids, scores) if blank_reason(a.text) is None])
            # one `variants` message per accepted item (docs/PROTOCOL.md): a blank comment's says why it has none
            for a in items:
                blank = blank_reason(a.text)
                if blank is not None:
                    await send(_variants_message(msg.id, a.key, [], [], [], f"{NOT_MADE}the comment is {blank}: "
                                                                            "nothing to perturb, nothing recorded"))

    async def _normalize(self, texts: list[str]) -> list[tuple[Any, str | None]]:
        """(Normalized | None, error | None) per text; a failing normalizer fails alone."""
        normalizer = self.engine.normalizer
        if not self.study.normalizer.enabled or normalizer is None:
            return [(None, None)] * len(texts)
        got = await asyncio.get_running_loop().run_in_executor(None, lambda: each(normalizer.normalize, texts, NORMALIZE))
        return [(None, f"normalizer: {g.message}") if isinstance(g, Failed) else (g, None) for g in got]

    async def _record_scores(self, texts: list[str], scores: list[dict[str, DetectorResult]],
                             norms: list[tuple[Any, str | None]],
                             norm_scores: dict[str, dict[str, DetectorResult]]) -> None:
        """The page's score rows, its normalizations and step errors, in one transaction; raises
        when it failed."""
        ids = self.detector_ids
        name, version = normalizer_identity(self.engine.normalizer)
        errors = [StepError(t, NORMALIZE, name, version, err.removeprefix("normalizer: "))
                  for t, (_, err) in zip(texts, norms) if err is not None]

        def record(lg: StudyLog) -> None:
            record_results(lg, ids, scores=score_rows([*texts, *norm_scores], [*scores, *norm_scores.values()]),
                           normalizations=[(text, norm) for text, (norm, _) in zip(texts, norms) if norm is not None],
                           errors=errors)

        await self.write(record)

    # --- ratings ------------------------------------------------------------------------
    def _check_rating(self, msg: p.Rating) -> None:
        anchors = msg.anchors.model_dump() if msg.anchors is not None else None
        problems = rating_problems(dict(msg.values), anchors, self.attributes, self.extreme_anchor is not None)
        if problems:
            raise ProtocolError(ErrorCode.invalid_fields, problems[0], msg.id)

    async def _comment_id(self, session: LiveSession, platform: str, key: str) -> int | None:
        pending = session.comments.get((platform, key))
        if pending is not None:
            try:
                return await pending.get()
            except LogUnwritable:
                raise  # its page was not stored and will be sent again: `unavailable`, not `unknown_comment`
            except Exception:
                pass  # that write failed; fall back to the log
        found: int | None = await self.write(lambda lg: lg.comment_id(platform, key))
        if found is None and not self.writer.writability.writable:
            # its page may be one the log refused: the client sends it again once the log can be written
            raise LogUnwritable(f"comment {platform}/{key} is not in the study log, which cannot be written now "
                                f"({self.writer.writability.reason})")
        return found

    def _check_assignment(self, session: LiveSession, msg: p.Rating) -> None:
        """An id naming an assignment or task of the item set (`<assignment>:r-<uuid>`) ties the rating
        to that task in the review (study/acceptance.py): only the rater's own assignment, or its task
        (`<task>:...`, the form `modlens rate` writes; reviewed on the same task), may be named."""
        plan = self.plan
        named = None if plan is None else plan.unit_named(msg.id)
        if plan is None or named is None or named == session.assignment:
            return
        own_task = None if session.assignment is None else plan.task_named(session.assignment)
        if named == own_task:
            return
        raise ProtocolError(ErrorCode.other_assignment,
                            f"id: {msg.id!r} names item-set {'task' if named in plan.tasks else 'assignment'} "
                            f"{named!r}, but this rater's assignment is {session.assignment!r} (task {own_task!r}); "
                            "nothing stored", msg.id)

    async def rate(self, session: LiveSession, msg: p.Rating) -> p.RatingOk:
        if msg.study_id is not None and msg.study_id != self.study.study_id:
            # stored in its own study, its answer lost: the log holds it, so its resend is answered as one
            resent = await self._resent_from(msg.study_id, session, msg)
            if resent is not None:
                return resent
            raise ProtocolError(ErrorCode.study_mismatch,
                                f"study_id: the rating was given in study {msg.study_id!r}, not the running study "
                                f"{self.study.study_id!r}; nothing stored", msg.id)
        self._check_rating(msg)
        self._check_assignment(session, msg)
        derived, inconsistent = None, False
        if msg.anchors is not None:
            assert self.extreme_anchor is not None  # _check_rating refused anchors without one
            d = derive_toxicity(msg.anchors.vs_hard, msg.anchors.vs_extreme, self.extreme_anchor)
            derived, inconsistent = d.rating, d.inconsistent
        comment_id = await self._comment_id(session, msg.comment.platform, msg.comment.key)
        if comment_id is None:
            raise ProtocolError(ErrorCode.unknown_comment,
                                f"comment {msg.comment.platform}/{msg.comment.key} is not in the study log; "
                                "send it in a comments message first", msg.id)
        study_id, rater, sid = self.study.study_id, session.rater_id, session.session_id
        assert rater is not None  # only a connection that said hello rates
        anchors = msg.anchors.model_dump() if msg.anchors else None
        # a time over a day is a panel left open, not time spent rating: the answer is kept, the time
        # recorded as unknown with the reported value beside it (the rating is not refused for it)
        over = msg.time_spent_ms is not None and msg.time_spent_ms > p.MAX_TIME_SPENT_MS
        def record(lg: StudyLog) -> tuple[int, dict[str, Any] | None]:
            added = lg.add_rating(
                study_id, rater, msg.id, sid, comment_id, dict(msg.values), anchors, derived, inconsistent,
                None if over else msg.time_spent_ms, msg.time_spent_ms if over else None)
            return added[0], added.stored  # stored: the row already under this id (None: stored now)

        rating_id, stored = await self.write(record)
        if stored is not None:
            # `duplicate` vouches for this very rating, stored before: a resend. Another rating under an id
            # already used (other comment or answers) is not stored, and is not acknowledged as if it were
            other = _not_as_stored(stored, comment_id, msg)
            if other:
                raise ProtocolError(ErrorCode.invalid_fields,
                                    f"id: {msg.id!r} already names another rating of this rater (rating {rating_id}, "
                                    f"with another {' and '.join(other)}); nothing stored: send this rating under a "
                                    "new id", msg.id)
            return _ok_as_stored(msg.id, rating_id, stored)
        return p.RatingOk(id=msg.id, rating_id=rating_id, derived_toxicity=derived,
                          inconsistent=inconsistent, duplicate=False, time_spent_over_limit=over)

    async def _resent_from(self, study_id: str, session: LiveSession, msg: p.Rating) -> p.RatingOk | None:
        """The answer to `msg` when the log holds this very rating under `study_id` (not the running
        study): its resend, acknowledged as the duplicate it is; None when it does not."""
        rater = session.rater_id
        assert rater is not None  # only a connection that said hello rates
        stored = await self.write(lambda lg: lg.stored_rating(study_id, rater, msg.id))
        if stored is None:
            return None
        comment_id = await self._comment_id(session, msg.comment.platform, msg.comment.key)
        if comment_id is None or _not_as_stored(stored, comment_id, msg):
            return None
        return _ok_as_stored(msg.id, stored["rating_id"], stored)

    # --- comment media ---------------------------------------------------------------------
    async def comment_media(self, session: LiveSession, msg: p.CommentMedia) -> p.CommentMediaOk:
        """Check, log and score the images of one logged comment (docs/EXTENSION.md, "Comment media")."""
        items = comment_images.decode_items(msg, self.study.media)
        comment_id = await self._comment_id(session, msg.platform, msg.comment_key)
        if comment_id is None:
            raise ProtocolError(ErrorCode.unknown_comment,
                                f"comment {msg.platform}/{msg.comment_key} is not in the study log; "
                                "send it in a comments message first", msg.id)
        keep = self.study.media.keep_bytes
        store = self.media_store
        if keep:  # content-addressed files: the same image is written once, whoever sent it
            try:
                await asyncio.get_running_loop().run_in_executor(None, lambda: [store.put(b) for _, b in items])
            except MediaFolderRefused as err:  # no free space would help: the folder's mode or owner refuses this user
                refused = with_fix(err)  # "fix:", as the CLI says it
                log.warning("comment media: %s", refused)
                raise ProtocolError(ErrorCode.unavailable, f"nothing was stored: {refused}; send it again once it "
                                    "can be written", msg.id) from None
            except OSError as err:
                failed = unwritable(err, self.writer.path)
                if failed is None:
                    raise
                self.writer.writability.failure(failed.reason, 1)
                raise failed from None
        text = await self.write(lambda lg: lg.comment_text(comment_id))
        keys = comment_images.media_detector_keys(self.study.media, self.engine.detectors)
        results = (await self._score_media(MediaInput(text, tuple(b for _, b in sorted(items, key=lambda i: i[0]))),
                                           keys)) if keys else {}
        rows = [(pos, blob, store.relative_path(blob) if keep else None) for pos, blob in items]
        det_ids = self.detector_ids
        media_ids = await self.write(lambda lg: comment_images.record_comment_media(lg, comment_id, rows, det_ids, results))
        return p.CommentMediaOk(
            id=msg.id, comment_id=comment_id,
            media=[p.MediaOut(position=pos, sha256=b.sha256, media_id=media_ids[pos], kept=keep) for pos, b in items],
            detectors={k: p.MediaDetectorScore(**_score_out(r).model_dump(), details=getattr(r, "details", None) or {})
                       for k, r in results.items()})

    async def _score_media(self, inp: MediaInput, keys: list[str]) -> dict[str, DetectorResult]:
        return (await self.engine.score_media([inp], only=keys))[0]

    # --- sync ------------------------------------------------------------------------------
    async def sync(self, session: LiveSession, msg: p.Sync) -> p.SyncOk:
        """`sync_ok` once every write owed for the answers this connection was sent before `msg`
        has committed (`LiveSession.owed`); `not_stored`, naming what is missing, when one failed."""
        owed = session.owed
        await owed.settled()
        if owed.failed:
            more = f"; and {owed.failed - len(owed.failures)} more" if owed.failed > len(owed.failures) else ""
            raise ProtocolError(ErrorCode.not_stored,
                                f"{owed.failed} of the writes behind this connection's answers failed, so the study "
                                f"log lacks their rows: {'; '.join(owed.failures)}{more}", msg.id)
        return p.SyncOk(id=msg.id, writes=owed.committed)

    # --- status ----------------------------------------------------------------------------
    async def status(self, transport: dict[str, Any], *, counts_or_none: bool = False) -> dict[str, Any]:
        """What the socket's `status_ok` and `GET /status` both say: detectors, components, rows
        per table, the study log's condition, the queue (`transport`: the connections' part of it).
        A log that cannot be read raises LogUnwritable, or with `counts_or_none` gives counts None."""
        try:
            counts: dict[str, int] | None = await self.counts()
        except LogUnwritable:
            if not counts_or_none:
                raise
            counts = None
        return {"detectors": self.detector_statuses(), "components": self.engine.component_errors, "counts": counts,
                "study_log": self.writer.writability.status(), "queue": {**transport, **self.queue()}}

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.write(lambda lg: lg.counts())
        return counts

    def queue(self) -> dict[str, Any]:
        return {
            "pending_writes": self.in_flight_writes,
            "batchers": {k: {"queued": r.batcher._queue.qsize(), "derived_queued": r.batcher.low_queued,
                             "batches": r.batcher.batches, "items": r.batcher.items, "cache_hits": r.cache_hits}
                         for k, r in self.engine.runners.items()},
            "variants": self.live_variants.status(),
        }

    def detector_statuses(self) -> list[dict[str, Any]]:
        return [{"name": s.name, "status": s.status, "message": s.message, "fix": s.fix, "version": s.version}
                for s in self.engine.statuses]
