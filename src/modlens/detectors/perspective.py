"""Perspective API (Google Jigsaw; legacy, shutting down at the end of 2026), key from $PERSPECTIVE_API_KEY.

One request per text (the API scores one comment per call), spaced by a rate limiter at the
default quota of 1 request/s, with retries and back-off on 429 (quota) and 5xx, timeouts,
and `doNotStore: true` always. Texts the API refuses on their own (unsupported language,
empty, too long) come back as missing (None); any other failure fails the batch, which the
engine reports as this detector's error. The version hashes the settings that shape the
scores, never the key; Google may change its model without notice.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Sequence

from modlens.detectors.base import DetectorUnavailable, LabelScores, config_hash
from modlens.detectors.remote import RemoteDetector, RemoteError

DEFAULT_ENDPOINT = "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"
KEY_ENV = "PERSPECTIVE_API_KEY"
# errorType values of a 400 that concern one comment, not the request or the key
PER_TEXT_ERRORS = {"LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE", "COMMENT_EMPTY", "COMMENT_TOO_LONG",
                   "LANGUAGE_NOT_SUPPORTED", "UNKNOWN_LANGUAGE"}


def _per_text_error(err: RemoteError) -> bool:
    if err.status != 400 or not isinstance(err.body, dict):
        return False
    details = (err.body.get("error") or {}).get("details") or []
    return any(isinstance(d, dict) and d.get("errorType") in PER_TEXT_ERRORS for d in details)


class PerspectiveDetector(RemoteDetector):
    name = "perspective"
    max_batch = 16

    def __init__(self, api_key: str, *, attributes: Sequence[str] = ("TOXICITY",), languages: Sequence[str] = ("en",),
                 endpoint: str = DEFAULT_ENDPOINT, qps: float = 1.0, timeout_s: float = 10.0, retries: int = 4,
                 backoff_s: float = 1.0, max_backoff_s: float = 30.0, threshold: float = 0.5,
                 api_key_env: str = KEY_ENV):
        super().__init__()
        self.api_key_env = api_key_env
        if not attributes:
            raise ValueError("perspective: `attributes` must name at least one attribute, e.g. ['TOXICITY']")
        self._api_key = api_key
        self.attributes = tuple(a.upper() for a in attributes)
        self.languages = tuple(languages)
        self.endpoint = endpoint
        self.labels = self.attributes
        self.toxicity_label = "TOXICITY" if "TOXICITY" in self.attributes else self.attributes[0]
        self.threshold = threshold
        self._connect(qps=qps, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s)
        self.version = "v1alpha1-" + config_hash(self._scoring_config())

    def _scoring_config(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "attributes": list(self.attributes), "languages": list(self.languages),
                "do_not_store": True}

    def config(self) -> dict[str, Any]:
        return {**self._scoring_config(), **self._transport, "api_key_env": self.api_key_env}

    def request_body(self, text: str) -> dict[str, Any]:
        return {"comment": {"text": text}, "languages": list(self.languages),
                "requestedAttributes": {a: {} for a in self.attributes}, "doNotStore": True}

    async def _score_one(self, text: str) -> LabelScores | None:
        try:
            reply = await self.client.request_json("POST", self.endpoint, params={"key": self._api_key},
                                                   body=self.request_body(text))
        except RemoteError as err:
            if _per_text_error(err):
                return None
            raise
        try:
            scores = reply["attributeScores"]
            return {a: float(scores[a]["summaryScore"]["value"]) for a in self.attributes}
        except (KeyError, TypeError, ValueError) as err:
            raise RemoteError(f"unexpected Perspective reply, missing {err}: {str(reply)[:200]}") from None

    async def ascore(self, texts: Sequence[str]) -> list[LabelScores | None]:
        results = await asyncio.gather(*(self._score_one(t) for t in texts), return_exceptions=True)
        out: list[LabelScores | None] = []
        for r in results:  # all requests finished (none left running); the first failure fails the batch
            if isinstance(r, BaseException):
                raise r
            out.append(r)
        return out


def create(**options: Any) -> PerspectiveDetector:
    if "api_key" in options:
        raise DetectorUnavailable("error", "perspective: do not put the API key in the study config",
                                  f"remove `api_key` and export {KEY_ENV}=...")
    env = options.get("api_key_env", KEY_ENV)
    key = os.environ.get(env, "").strip()
    if not key:
        raise DetectorUnavailable("missing_dependency", f"perspective: no API key in ${env}",
                                  f"export {env}=... (a Perspective API key; the API shuts down end of 2026)")
    try:
        return PerspectiveDetector(key, **options)
    except TypeError as err:
        raise DetectorUnavailable("error", f"perspective: {err}", "see docs for the perspective detector's options") from None
