"""`Analyzer`: Perspective's analyze and suggestscore calls, answered by the study's detectors.

Scores go through the engine's shared batchers (`Engine.score`), so concurrent API calls, live
comments and each other share model calls. A call is logged like any scored text: one comment of
platform `api` on the page of its `communityId` (its client token, session, the attributes asked
for, answered and dropped, as labels of source `api`: docs/PERSPECTIVE.md), its scores through
the chunk pipeline's one recording path (`chunks.register_items`, `chunks.record_results`). With
`doNotStore: true` nothing about the call is written.

Both writes go through the daemon's batched writer, as the extension's comments do: the call is
submitted on arrival, so its commit runs while the comment is scored, and the answer waits for
that commit (a call that was answered is in the log). Its scores (or a detector's error, which
answers 500 and says so in the daemon log), with what the answer's thresholds left out
(`api.withheld`, known only then), are submitted once the answer is built, without waiting, and committed in the writer's next batch, after the answer: a daemon killed in that moment
(the writer's batching window, `writer_max_delay_ms`, 20 ms, plus the commit) keeps the call
without its scores, which `modlens rescore` computes again. A daemon that stops normally commits
them first (`drain`). Waiting for the scores' commit too cost a quarter to half of the throughput
at 16-20 clients (`bench/bench_perspective.py`).
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace
from typing import Any, Awaitable, Callable, Mapping

from modlens.chunks import ItemSource, record_results, register_items
from modlens.config import StudyConfig
from modlens.datasets.base import DatasetItem
from modlens.engine import DetectorResult, Engine
from modlens.perspective import calibration, languages, spans
from modlens.perspective.attributes import KNOWN, AttributeSource, mislabelled, resolve, resolve_languages
from modlens.perspective.errors import PerspectiveError, explanation, invalid
from modlens.perspective.request import AnalyzeRequest, SuggestRequest
from modlens.studylog.store import StudyLog

PLATFORM = "api"
LABEL_SOURCE = "api"
NO_COMMUNITY = "(no communityId)"

Write = Callable[[Callable[[StudyLog], Any]], Awaitable[Any]]
Labels = dict[str, Any]
ScoreRow = tuple[str, str, DetectorResult]
log = logging.getLogger("modlens.daemon")


def community_page_key(community_id: str | None) -> str:
    """The page of a community's calls (platform `api`): one page per `communityId`."""
    return f"community:{community_id or ''}"


class Analyzer:
    def __init__(self, study: StudyConfig, engine: Engine, write: Write | None, detector_ids: Mapping[str, int]):
        self.config = study.perspective
        self.engine = engine
        self.write = write
        self.detector_ids = detector_ids
        self.sources = resolve(self.config, engine.detectors)
        self.by_language = resolve_languages(self.config, engine.detectors)
        self.mislabelled = mislabelled(self.config, engine.detectors)  # mapped to a label its detector lacks
        # names a request may carry: Perspective's and those study.toml adds ([perspective.attributes.X])
        self.names = frozenset((*KNOWN, *self.config.attributes))
        self.calibrations = calibration.Maps()
        self._score_writes: set[asyncio.Future[Any]] = set()  # submitted after their answer, not yet committed

    # --- which attributes, which languages --------------------------------------------------
    def _chosen(self, req: AnalyzeRequest, langs: list[str], detected: list[str]) -> dict[str, AttributeSource]:
        chosen: dict[str, AttributeSource] = {}
        wanted = {languages.base(x) for x in langs}
        for attr in req.attributes:
            src = self.sources.get(attr)
            if src is None or not wanted <= set(src.languages):
                # each language answered by its own source (a language the study maps to a
                # (multilingual) detector answers there): one call is scored by one, so the call is
                # answered when every language's source reads the same label of the same detector
                each = [s for s in (self._source_in(attr, lang) for lang in wanted) if s is not None]
                same = len(each) == len(wanted) > 0 and len({(s.detector, s.label) for s in each}) == 1
                src = replace(each[0], languages=tuple(sorted(wanted))) if same else None
            if src is not None:
                chosen[attr] = src
                continue
            if req.drop_unsupported:
                continue
            raise self._refusal(attr, langs, wanted, detected)
        return chosen

    def _source_in(self, attr: str, lang: str) -> AttributeSource | None:
        """Who answers `attr` in `lang`: the attribute's own source where it covers the language,
        else the detector the study maps the language to."""
        own = self.sources.get(attr)
        if own is not None and lang in own.languages:
            return own
        return self.by_language.answers.get(lang, {}).get(attr)

    def _refusal(self, attr: str, langs: list[str], wanted: set[str], detected: list[str]) -> PerspectiveError:
        """Google's error for an attribute not answered here; its message is Google's exact text
        (clients parse it), modlens's explanation a second detail (google.rpc.LocalizedMessage)."""
        in_some_language = attr in self.sources or any(attr in a for a in self.by_language.answers.values())
        if not in_some_language and attr in self.mislabelled:
            return invalid(f"Attribute {attr} is not available here: {self.mislabelled[attr]}",
                           "ATTRIBUTE_NOT_AVAILABLE", attribute=attr)
        if not in_some_language and not wanted & set(self.by_language.not_loaded):
            available = ", ".join(sorted(self.sources)) or "none"
            production = attr.removesuffix("_EXPERIMENTAL")
            model = (f" (Perspective's experimental model, not {production}: no detector here is one)"
                     if production != attr else "")
            return invalid(f"Attribute {attr} is not available here{model}: no detector of this study answers it "
                           f"(available: {available}; map it in study.toml [perspective.attributes.{attr}], "
                           "for instance to a Hugging Face model for users who are online)",
                           "ATTRIBUTE_NOT_AVAILABLE", attribute=attr)
        answering: dict[str, AttributeSource] = {}  # language -> what answers the attribute in it alone
        for lang in wanted:  # as `_chosen` picks
            src = self._source_in(attr, lang)
            if src is not None:
                answering[lang] = src
        why = []
        for lang in sorted(wanted):
            key = self.by_language.not_loaded.get(lang)
            if lang in answering:
                continue  # answered in this language alone: said below when every language is
            if lang == languages.UNDETERMINED:
                why.append(f"{lang}: no language was detected in the comment (no letters of a script modlens "
                           "can name: emoji, digits, punctuation; or Latin letters or common words of a language it "
                           "cannot name, such as ł, ř, ş, å, or Indonesian, Swahili, Hungarian, Finnish words); "
                           "a client that knows it sends `languages`")
            elif key is not None:
                why.append(f"{lang}: the study maps it to detector {key}, which is not loaded here "
                           "(offline, or its model could not be loaded); it would answer")
            elif lang in self.by_language.answers:
                why.append(f"{lang}: detector {self.config.languages[lang]} answers it, but has no label for {attr}")
            else:
                covered = sorted({*(x for s in self.sources.values() for x in s.languages), *self.by_language.answers})
                why.append(f"{lang}: no detector of this study covers it (covered: {', '.join(covered) or 'none'}; "
                           "map one in study.toml [perspective.languages])")
        if not why:  # each language is answered, not all by the same detector and label (`_chosen`
            # answers those); a call is scored by one
            each = ", ".join(f"{lang} by detector {s.detector} (label {s.label})" for lang, s in sorted(answering.items()))
            why.append(f"{attr} is answered in {each}, and one detector's label scores a call: "
                       "send one language per call")
        err = invalid(f"Attribute {attr} does not support request languages: {', '.join(langs)}",
                      "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE",
                      languageNotSupportedByAttributeError={"detectedLanguages": detected, "attribute": attr})
        err.details.append(explanation("; ".join(why)))
        return err

    def _calibration(self, src: AttributeSource) -> calibration.Calibration:
        det = self.engine.detectors[src.detector]
        found = self.calibrations.get(src.attribute, det.name, det.version, src.label)
        if found is None:
            raise PerspectiveError("FAILED_PRECONDITION", f"No calibration of {src.attribute} for detector "
                                   f"{src.detector} ({det.name} version {det.version}, label {src.label}); fit one "
                                   f"with `modlens perspective calibrate --attribute {src.attribute}`, or ask for "
                                   "uncalibrated scores (calibrated: false)")
        return found

    # --- analyze ---------------------------------------------------------------------------
    async def analyze(self, req: AnalyzeRequest) -> dict[str, Any]:
        detected = languages.detect(req.text)
        langs = req.languages or detected
        chosen = self._chosen(req, langs, detected)
        calibrated = self.config.calibrate if req.calibrated is None else req.calibrated
        maps = {a: self._calibration(s) for a, s in chosen.items()} if calibrated else {}

        call = None
        if not req.do_not_store:  # written while the comment is scored; answered once committed
            # what was asked for, and what the client got: the attributes answered (scored in the
            # call's language), those dropped (dropUnsupportedAttributes), the thresholds under
            # which the response leaves a score out
            labels = {"api.endpoint": "analyze", "api.attributes": ",".join(req.attributes),
                      "api.answered": ",".join(chosen),
                      "api.dropped": ",".join(a for a in req.attributes if a not in chosen),
                      # calibrated: a map was applied to each answered attribute, not that the call
                      # asked for it (a call with every attribute dropped had none applied). Written
                      # before the answer, so not what was sent: that is `api.withheld` (what the
                      # thresholds left out), and a detector's failure is answered 500
                      "api.languages": ",".join(langs), "api.calibrated": bool(maps)}
            thresholds = {a: p.score_threshold for a, p in req.attributes.items() if p.score_threshold is not None}
            if thresholds:
                labels["api.score_thresholds"] = thresholds
            if maps:  # a threshold applies to the calibrated score, and the log keeps the uncalibrated one
                labels["api.calibrations"] = {a: cal.id for a, cal in maps.items()}
            call = asyncio.ensure_future(self._log_call(req.text, req.community_id, req.client_token,
                                                        req.session_id, labels))
        pieces = spans.sentences(req.text) if req.span_annotations else [(0, spans.utf16_len(req.text), req.text)]
        call_id = None
        try:
            by_text = await self._results(req.text, pieces, chosen)
        finally:
            if call is not None:
                call_id = await call
        withheld: dict[str, Any] = {}  # what the thresholds left out of the answer, once it is known
        try:
            response = self._scores(req, pieces, chosen, maps, by_text)
            withheld = _withheld(req, pieces, chosen, response)
        except PerspectiveError as err:  # a detector failed or lacks its label: said here, never the text
            log.warning("Perspective API call not answered (%s): %s", err.status, err.message)
            raise
        finally:
            if call is not None:  # a detector's error too, as for any scored text (`modlens rescore` retries it)
                self._log_scores_after_answer([(t, k, r) for t, per in by_text.items() for k, r in per.items()],
                                              call_id, {"api.withheld": withheld} if withheld else None)
        response.update({"languages": list(langs), "detectedLanguages": detected})
        if req.client_token is not None:
            response["clientToken"] = req.client_token
        return response

    async def _results(self, text: str, pieces: list[tuple[int, int, str]],
                       chosen: Mapping[str, AttributeSource]) -> dict[str, dict[str, DetectorResult]]:
        """Each text to score (the comment, its spans) -> detector key -> the detector's result."""
        texts = list(dict.fromkeys([text, *(t for _, _, t in pieces)]))
        keys = sorted({s.detector for s in chosen.values()})
        # alone: a request's texts are all here, so a lone request does not wait for company
        results = await self.engine.score(texts, only=keys, alone=True) if keys else [{} for _ in texts]
        return dict(zip(texts, results))

    def _scores(self, req: AnalyzeRequest, pieces: list[tuple[int, int, str]], chosen: Mapping[str, AttributeSource],
                maps: Mapping[str, calibration.Calibration],
                by_text: Mapping[str, Mapping[str, DetectorResult]]) -> dict[str, Any]:
        """The response's `attributeScores`; a PerspectiveError (500) when a detector failed."""
        scores: dict[str, Any] = {}
        for attr, src in chosen.items():
            summary = self._value(src, by_text[req.text][src.detector], maps.get(attr))
            threshold = req.attributes[attr].score_threshold
            if threshold is not None and summary < threshold:
                continue  # Perspective leaves scores below the threshold out
            # ... every score of the attribute below it ("Don't return scores for this attribute that
            # are below this threshold"), a span's too
            span_values = [(b, e, self._value(src, by_text[t][src.detector], maps.get(attr))) for b, e, t in pieces]
            span_scores = [{"begin": b, "end": e, "score": _probability(v)} for b, e, v in span_values
                           if threshold is None or v >= threshold]
            det = self.engine.detectors[src.detector]
            cal = maps.get(attr)
            scores[attr] = {
                "summaryScore": _probability(summary), "spanScores": span_scores,
                # modlens: which detector produced the score (clients ignore fields they do not know)
                "detector": {"key": src.detector, "name": det.name, "version": det.version, "label": src.label,
                             "calibration": None if cal is None else {"id": cal.id, "source": cal.source,
                                                                      "fittedAt": cal.fitted_at}}}
        return {"attributeScores": scores}

    def _value(self, src: AttributeSource, result: DetectorResult, cal: calibration.Calibration | None) -> float:
        if result.error is not None or result.labels is None:
            raise PerspectiveError("INTERNAL", f"detector {src.detector} could not score the comment: "
                                   f"{result.error or 'no answer'}")
        try:
            value = float(result.labels[src.label])
        except (KeyError, TypeError, ValueError):
            raise PerspectiveError("INTERNAL", f"detector {src.detector} has no label {src.label!r} for "
                                   f"{src.attribute} (labels: {', '.join(result.labels)})") from None
        return cal.apply(value) if cal is not None else value

    # --- suggestscore --------------------------------------------------------------------------
    async def suggest(self, req: SuggestRequest) -> dict[str, Any]:
        detected = languages.detect(req.text)
        # the suggestion's languages as an analyze call's: those the request gave, else the one detected
        labels: dict[str, Any] = {"api.endpoint": "suggestscore", "api.languages": ",".join(req.languages or detected)}
        labels.update({f"api.suggested.{attr}": value for attr, value in req.scores.items()})
        labels.update({f"api.suggested_spans.{attr}": [list(s) for s in spans] for attr, spans in req.spans.items()})
        await self._log_call(req.text, req.community_id, req.client_token, req.session_id, labels)
        response: dict[str, Any] = {"requestedLanguages": req.languages, "detectedLanguages": detected}
        if req.client_token is not None:
            response["clientToken"] = req.client_token
        return response

    # --- the study log -----------------------------------------------------------------------
    async def _log_call(self, text: str, community: str | None, client_token: str | None, session_id: str | None,
                        labels: Labels) -> int | None:
        """The call as a comment of platform `api`, its labels of source `api`; returns its comment_id after the commit."""
        if self.write is None:
            return None
        labels = {**labels, **({"api.client_token": client_token} if client_token is not None else {}),
                  **({"api.session_id": session_id} if session_id is not None else {}),
                  **({"api.community_id": community} if community is not None else {})}
        item = DatasetItem(f"call-{uuid.uuid4().hex}", text, labels)

        def record(lg: StudyLog) -> int:
            with lg.transaction():
                page_id = lg.ensure_page(PLATFORM, community_page_key(community), None, community or NO_COMMUNITY)
                return register_items(lg, ItemSource(PLATFORM, page_id, LABEL_SOURCE), [item])[0]

        call_id: int = await self.write(record)
        return call_id

    def _log_scores_after_answer(self, scores: list[ScoreRow], call_id: int | None = None,
                                 labels: Labels | None = None) -> None:
        """Submits the scores, and the call's labels known only once it was answered, to the writer
        without waiting for their commit (see the module's docstring)."""
        if self.write is None or not (scores or labels):
            return
        ids = self.detector_ids

        def record(lg: StudyLog) -> None:
            with lg.transaction():
                record_results(lg, ids, scores=scores)
                if labels and call_id is not None:
                    lg.add_labels_per_comment(LABEL_SOURCE, [(call_id, labels)])

        pending = asyncio.ensure_future(self.write(record))
        self._score_writes.add(pending)
        pending.add_done_callback(self._score_write_done)

    def _score_write_done(self, pending: asyncio.Future[Any]) -> None:
        self._score_writes.discard(pending)
        if not pending.cancelled() and pending.exception() is not None:
            log.error("study log: the scores of a Perspective API call were not recorded: %s", pending.exception())

    async def drain(self) -> None:
        """Waits until every call's scores are committed (the daemon's shutdown, tests)."""
        while self._score_writes:
            await asyncio.gather(*list(self._score_writes), return_exceptions=True)


def _withheld(req: AnalyzeRequest, pieces: list[tuple[int, int, str]], chosen: Mapping[str, AttributeSource],
              response: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per answered attribute with a threshold, what the response left out under it: its summary
    (and with it every span) or some spans, read off the response the client was sent."""
    out: dict[str, dict[str, Any]] = {}
    for attr in chosen:
        if req.attributes[attr].score_threshold is None:
            continue
        sent = response["attributeScores"].get(attr)
        shown = set() if sent is None else {(s["begin"], s["end"]) for s in sent["spanScores"]}
        out[attr] = {"summary": sent is None, "spans": [[b, e] for b, e, _ in pieces if (b, e) not in shown]}
    return out


def _probability(value: float) -> dict[str, Any]:
    return {"value": value, "type": "PROBABILITY"}
