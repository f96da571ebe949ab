"""Answering one Perspective API call, whatever carries it: the key it presents, the method its
path names, its body decoded and bounded (`body`), and every failure in Perspective's error shape
(`errors.PerspectiveError`), so no input gets a 500 and a bug is Google's INTERNAL with its
traceback in the log. A batch (`batch`) is answered part by part, each as if it had come alone:
its own key, its own errors.

The transport (`modlens.daemon.perspective_api`) checks the door (Host, Origin, request target),
reads the body within its deadline and sends what this module answers.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from yarl import URL

from modlens.perspective import batch as pbatch, body as pbody, request as preq
from modlens.perspective.errors import PerspectiveError, key_invalid, key_missing, method_not_found
from modlens.perspective.keys import accepted
from modlens.perspective.service import Analyzer
from modlens.studylog.connection import LogUnwritable

ANALYZE_PATH = "/v1alpha1/comments:analyze"
SUGGEST_PATH = "/v1alpha1/comments:suggestscore"
BATCH_PATH = "/batch"  # the discovery document's batchPath
KEY_HEADER = "X-Goog-Api-Key"

Key = Callable[[], str | None]  # a key source, re-read on each call (the pairing token, the API key)
Method = Callable[[Analyzer, Any], Awaitable[dict[str, Any]]]
# the daemon's log: its lines pass the daemon's secret scrubber (`modlens.protocol.security`)
log = logging.getLogger("modlens.daemon")


def key_refusal(offered: list[str], *keys: Key) -> PerspectiveError | None:
    """None when exactly one key was offered (`?key=` and `X-Goog-Api-Key` together) and it is one
    of `keys`; else Google's answer: no key is 403 CREDENTIALS_MISSING, a wrong one or two is 400."""
    if not offered:
        return key_missing()
    if len(offered) > 1 or not accepted(offered[0], *(key() for key in keys)):
        return key_invalid()
    return None


async def _analyze(analyzer: Analyzer, body: Any) -> dict[str, Any]:
    return await analyzer.analyze(preq.parse_analyze(body, analyzer.config.max_text_bytes, analyzer.names))


async def _suggest(analyzer: Analyzer, body: Any) -> dict[str, Any]:
    return await analyzer.suggest(preq.parse_suggest(body, analyzer.config.max_text_bytes, analyzer.names))


METHODS: dict[str, Method] = {ANALYZE_PATH: _analyze, SUGGEST_PATH: _suggest}


async def answer(analyzer: Analyzer, path: str, raw: bytes, closing: Callable[[], bool]) -> dict[str, Any]:
    """The JSON answer of the method at `path` for a body that passed the door and the key; a
    refusal raises PerspectiveError, a bug is Perspective's 500 (the traceback goes to the log)."""
    if closing():
        raise PerspectiveError("UNAVAILABLE", "the daemon is shutting down")
    try:
        return await METHODS[path](analyzer, pbody.decode(raw))
    except PerspectiveError:
        raise
    except LogUnwritable as err:  # a full disk: 503, no traceback (the study-log writer logs it once)
        raise PerspectiveError("UNAVAILABLE", f"The call could not be logged, so it is not answered: {err.message}. "
                               "Try again later.") from None
    except Exception as err:
        log.exception("internal error in a Perspective API call")
        raise PerspectiveError("INTERNAL", f"{type(err).__name__}: {err}") from None


async def _part(analyzer: Analyzer, part: pbatch.Part, keys: tuple[Key, ...],
                closing: Callable[[], bool]) -> tuple[int, dict[str, Any]]:
    """One request of a batch, answered as if it had come alone: its own key, its own errors."""
    url = URL(part.target if part.target.startswith("/") else "/")
    try:
        if part.method != "POST" or url.path not in METHODS:
            raise method_not_found()
        refusal = key_refusal(url.query.getall("key", []) + part.header(KEY_HEADER), *keys)
        if refusal is not None:
            raise refusal
        return 200, await answer(analyzer, url.path, part.body, closing)
    except PerspectiveError as err:
        return err.code, err.body()


async def answer_batch(analyzer: Analyzer, content_type: str | None, raw: bytes, keys: tuple[Key, ...],
                       closing: Callable[[], bool]) -> tuple[str, bytes]:
    """(Content-Type, body) of googleapiclient's batch: each part answered on its own and at once,
    so the parts share the detectors' batchers. A batch that cannot be parsed raises its 400."""
    parts = pbatch.parse(content_type, raw)
    answers = await asyncio.gather(*(_part(analyzer, p, keys, closing) for p in parts))
    return pbatch.render([(p, status, body) for p, (status, body) in zip(parts, answers)])
