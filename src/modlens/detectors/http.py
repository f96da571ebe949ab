"""Generic HTTP detector: any JSON API, configured by URL, request template and the JSON path to the score.

Options: `url`, `method` (POST), `headers` (values may use `${ENV_VAR}`, e.g.
`{"Authorization": "Bearer ${MY_KEY}"}`), `body` (a JSON template whose strings may contain
`{text}`; default `{"text": "{text}"}`), `score_path` (e.g. `data.0.score` or
`$.result.toxicity`), `label` (toxicity), `scale` (divide the raw score by this, e.g. 100),
`timeout_s`, `qps`, `retries`, `threshold`, `name`. Batch mode: `batch_size` > 1, a body with
the string `"{texts}"` where the list of texts goes, and a `score_path` with one `*` that
walks the list of results (e.g. `results.*.toxicity`). The version hashes the configuration
with environment references unexpanded, header names only and secret-looking query values
redacted, so it never contains a secret.

Media (`media`, default "none": a comment's images are not sent and the text alone is scored):
"base64" sends JSON with `media_field` (default "media") = `[{"mime", "sha256", "data_b64"}]`
beside the text (at the body's `"{media}"` string, else as a top-level key); "multipart" sends
the body's fields (a flat object, default `{"text": "{text}"}`) as form fields plus one file part
per media item under `media_field`. Media modes send one input per request (batch_size 1).
"""
from __future__ import annotations

import asyncio
import base64
import math
import re
from typing import Any, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp

from modlens.detectors.base import DetectorUnavailable, LabelScores, MediaScore, config_hash
from modlens.detectors.remote import RemoteDetector, RemoteError, env_refs, expand_env
from modlens.media import MEDIA_KINDS, MediaInput

MEDIA_MODES = ("none", "base64", "multipart")
MODALITIES = ("text", *MEDIA_KINDS)  # what it can send; text only unless `media` is set

_SECRETISH = re.compile(r"key|token|secret|auth|pass|sig", re.I)


def parse_path(path: str) -> list[str | int]:
    """`$.a.b[0].c`, `a.b.0.c` and `results.*.score` -> ['a', 'b', 0, 'c'] ('*' kept)."""
    p = path.strip()
    if p.startswith("$"):
        p = p[1:]
    p = re.sub(r"\[(\*|\d+)\]", r".\1", p).strip(".")
    if not p:
        raise ValueError(f"empty score_path {path!r}")
    return [int(t) if t.isdigit() else t for t in p.split(".")]


def walk(data: Any, steps: Sequence[str | int], path: str) -> Any:
    for step in steps:
        try:
            if isinstance(data, list):
                data = data[int(step)]
            elif isinstance(data, dict):
                data = data[str(step)]
            else:
                raise KeyError(step)
        except (KeyError, IndexError, ValueError):
            raise RemoteError(f"score_path {path!r}: nothing at {step!r} in the reply") from None
    return data


def fill(template: Any, text: str | None = None, texts: list[str] | None = None,
         media: list[dict[str, str]] | None = None) -> Any:
    """Put the text(s) and media into a JSON template (strings only; keys stay as they are)."""
    if isinstance(template, dict):
        return {k: fill(v, text, texts, media) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, text, texts, media) for v in template]
    if isinstance(template, str):
        if template == "{texts}" and texts is not None:
            return texts
        if template == "{media}" and media is not None:
            return media
        if "{text}" in template and text is not None:
            return template.replace("{text}", text)
    return template


def _contains(template: Any, token: str, exact: bool) -> bool:
    if isinstance(template, dict):
        return any(_contains(v, token, exact) for v in template.values())
    if isinstance(template, list):
        return any(_contains(v, token, exact) for v in template)
    return isinstance(template, str) and (template == token if exact else token in template)


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, v if env_refs(v) or not _SECRETISH.search(k) else "REDACTED") for k, v in parse_qsl(parts.query, True)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="${}")))


class HttpDetector(RemoteDetector):
    def __init__(self, url: str, score_path: str, *, method: str = "POST", headers: dict[str, str] | None = None,
                 body: Any = None, label: str = "toxicity", scale: float = 1.0, batch_size: int = 1,
                 timeout_s: float = 10.0, qps: float = 5.0, retries: int = 3, backoff_s: float = 0.5,
                 max_backoff_s: float = 30.0, threshold: float = 0.5, name: str = "http", media: str = "none",
                 media_field: str = "media"):
        super().__init__()
        self.name = name
        self.url_template = url
        self.method = method.upper()
        self.header_templates = dict(headers or {})
        self.body = {"text": "{text}"} if body is None else body
        self.score_path = score_path
        self.steps = parse_path(score_path)
        self.label = label
        self.labels = (label,)
        self.toxicity_label = label
        self.scale = float(scale)
        self.batch_size = int(batch_size)
        self.threshold = threshold
        if self.scale <= 0:
            raise ValueError("http: `scale` must be > 0")
        if self.batch_size > 1:
            if not _contains(self.body, "{texts}", exact=True):
                raise ValueError('http: batch mode needs the string "{texts}" in `body` where the list of texts goes')
            if self.steps.count("*") != 1:
                raise ValueError("http: batch mode needs one `*` in `score_path`, e.g. results.*.score")
        else:
            if not _contains(self.body, "{text}", exact=False):
                raise ValueError('http: `body` must contain "{text}" where the text goes')
            if "*" in self.steps:
                raise ValueError("http: `*` in score_path is for batch mode (batch_size > 1)")
        self.max_batch = self.batch_size if self.batch_size > 1 else 16
        self.media, self.media_field = media, media_field
        self._check_media()
        if self.media != "none":
            self.modalities = MODALITIES
        # resolve ${VAR} now, so a missing variable is a load-time status, not a run-time error
        self._url = expand_env(url, "http: url")
        self._headers = {k: expand_env(v, f"http: header {k}") for k, v in self.header_templates.items()}
        self._connect(qps=qps, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s)
        self.version = config_hash(self._scoring_config())

    def _check_media(self) -> None:
        if self.media not in MEDIA_MODES:
            raise ValueError(f"http: media must be one of {', '.join(MEDIA_MODES)}, not {self.media!r}")
        if self.media == "none":
            return
        if self.batch_size > 1:
            raise ValueError("http: media modes send one input per request; set batch_size = 1")
        if self.media == "base64" and not isinstance(self.body, dict) and not _contains(self.body, "{media}", True):
            raise ValueError('http: media = "base64" needs a JSON object body, or the string "{media}" in it')
        if self.media == "multipart" and not (isinstance(self.body, dict) and all(
                isinstance(v, (str, int, float)) for v in self.body.values())):
            raise ValueError('http: media = "multipart" needs a flat body of form fields, e.g. {"text": "{text}"}')

    def _scoring_config(self) -> dict[str, Any]:
        media = {} if self.media == "none" else {"media": self.media, "media_field": self.media_field}
        return {"url": redact_url(self.url_template), "method": self.method, "headers": sorted(self.header_templates),
                "body": self.body, "score_path": self.score_path, "label": self.label, "scale": self.scale,
                "batch_size": self.batch_size, **media}

    def config(self) -> dict[str, Any]:
        return {**self._scoring_config(), **self._transport}

    def _value(self, raw: Any) -> float:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            raise RemoteError(f"score_path {self.score_path!r} gave {raw!r}, not a number")
        value = raw / self.scale
        if not 0.0 <= value <= 1.0:
            raise RemoteError(f"score {raw!r} / scale {self.scale:g} = {value:g} is not a probability in [0, 1]; "
                              "set `scale`")
        return float(value)

    async def _call(self, body: Any) -> Any:
        return await self.client.request_json(self.method, self._url, headers=self._headers, body=body)

    async def _score_batch(self, texts: list[str]) -> list[LabelScores]:
        reply = await self._call(fill(self.body, texts=texts))
        star = self.steps.index("*")
        items = walk(reply, self.steps[:star], self.score_path)
        if not isinstance(items, list) or len(items) != len(texts):
            raise RemoteError(f"score_path {self.score_path!r}: expected a list of {len(texts)} results, "
                              f"got {type(items).__name__} of {len(items) if isinstance(items, list) else '?'}")
        return [{self.label: self._value(walk(item, self.steps[star + 1:], self.score_path))} for item in items]

    async def _score_one(self, text: str) -> LabelScores:
        reply = await self._call(fill(self.body, text=text))
        return {self.label: self._value(walk(reply, self.steps, self.score_path))}

    async def ascore(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = list(texts)
        # every request finishes before the first failure (in text order) fails the call
        out: list[LabelScores | None] = []
        if self.batch_size > 1:
            chunks = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
            for batch in await asyncio.gather(*(self._score_batch(c) for c in chunks), return_exceptions=True):
                if isinstance(batch, BaseException):
                    raise batch
                out.extend(batch)
        else:
            for one in await asyncio.gather(*(self._score_one(t) for t in texts), return_exceptions=True):
                if isinstance(one, BaseException):
                    raise one
                out.append(one)
        return out

    # --- media -------------------------------------------------------------------------------
    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        return asyncio.run_coroutine_threadsafe(self.ascore_media(list(inputs)), self._private_loop()).result()

    async def ascore_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        """What the engine awaits for media inputs (on its own loop, like `ascore`)."""
        inputs = list(inputs)
        if self.media == "none":  # the text alone, as a text-only API would see the comment
            scores = await self.ascore([i.text for i in inputs])
            return [MediaScore(s, {"ignored_media": True} if i.media else {}) for s, i in zip(scores, inputs)]
        parts = await asyncio.gather(*(self._score_media_one(i) for i in inputs), return_exceptions=True)
        out: list[MediaScore] = []
        for p, item in zip(parts, inputs):
            if isinstance(p, BaseException):
                raise p
            out.append(MediaScore(p, {"media_sent": [{"sha256": m.sha256, "mime": m.mime} for m in item.media]}))
        return out

    async def _score_media_one(self, item: MediaInput) -> LabelScores:
        if self.media == "base64":
            media = [{"mime": m.mime, "sha256": m.sha256, "data_b64": base64.b64encode(m.data).decode("ascii")}
                     for m in item.media]
            body = fill(self.body, text=item.text, media=media)
            if not _contains(self.body, "{media}", exact=True):
                body[self.media_field] = media
            reply = await self._call(body)
        else:
            fields = {k: str(fill(v, text=item.text)) for k, v in self.body.items()}

            def form() -> aiohttp.FormData:
                data = aiohttp.FormData()
                for k, v in fields.items():
                    data.add_field(k, v)
                for m in item.media:
                    data.add_field(self.media_field, m.data, content_type=m.mime, filename=m.sha256 + m.extension)
                return data
            reply = await self.client.request_json(self.method, self._url, headers=self._headers, form=form)
        return {self.label: self._value(walk(reply, self.steps, self.score_path))}


def create(**options: Any) -> HttpDetector:
    missing = [k for k in ("url", "score_path") if k not in options]
    if missing:
        raise DetectorUnavailable.needs_options("http", missing, 'set e.g. options = { url = "https://...", '
                                                'score_path = "$.result.toxicity" }')
    try:
        return HttpDetector(**options)
    except (TypeError, ValueError) as err:
        raise DetectorUnavailable("error", str(err), "fix the http detector's options in study.toml") from None
