"""Perspective's request bodies, checked field by field; every refusal is a `PerspectiveError`
in Perspective's shape. A field the request's message type lacks is refused first, as Google's
parser refused it ("Unknown name"); the field names come from the discovery document's schemas
(`discovery.SCHEMAS`), the one description of Perspective's messages."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Collection

from modlens.datasets.base import blank_reason
from modlens.perspective.attributes import KNOWN
from modlens.perspective.discovery import SCHEMAS
from modlens.perspective.errors import PerspectiveError, field_violations, invalid, unknown_names
from modlens.perspective.spans import utf16_len

SCORE_TYPES = ("PROBABILITY",)
TEXT_TYPE = "type.googleapis.com/google.commentanalyzer.v1alpha1.TextEntry.TextType"
TEXT_TYPES = SCHEMAS["TextEntry"]["properties"]["type"]["enum"]  # listed in their numbers' order


@dataclass
class Requested:
    score_type: str = "PROBABILITY"
    score_threshold: float | None = None


@dataclass
class AnalyzeRequest:
    text: str
    attributes: dict[str, Requested]
    languages: list[str] = field(default_factory=list)
    do_not_store: bool = False
    span_annotations: bool = False
    drop_unsupported: bool = False
    client_token: str | None = None
    session_id: str | None = None
    community_id: str | None = None
    calibrated: bool | None = None  # modlens extension: None -> the study's `perspective.calibrate`


@dataclass
class SuggestRequest:
    text: str
    scores: dict[str, float]  # attribute -> the suggested summary score
    languages: list[str] = field(default_factory=list)
    client_token: str | None = None
    session_id: str | None = None
    community_id: str | None = None
    spans: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)  # attribute -> (begin, end, score)


def _unknown_names(value: Any, schema: dict[str, Any], where: str, found: list[tuple[str, str]]) -> None:
    """Append (where, name) for each key of `value` that `schema` does not name. An object schema
    without `properties` (a map such as `requestedAttributes`, or `detector`) takes any key."""
    schema = SCHEMAS.get(schema.get("$ref", ""), schema)
    if isinstance(value, dict) and schema.get("type") == "object":
        fields, each = schema.get("properties"), schema.get("additionalProperties")
        for name, sub in value.items():
            inner = f"{where}.{name}" if where else name
            if fields is not None and name in fields:
                _unknown_names(sub, fields[name], inner, found)
            elif each is not None:
                _unknown_names(sub, each, inner, found)
            elif fields is not None:
                found.append((where, name))
    elif isinstance(value, list) and schema.get("type") == "array":
        for i, sub in enumerate(value):
            _unknown_names(sub, schema["items"], f"{where}[{i}]", found)


def _known_fields_only(body: dict[str, Any], message: str) -> None:
    found: list[tuple[str, str]] = []
    _unknown_names(body, SCHEMAS[message], "", found)
    if found:
        raise unknown_names(found[:20])


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"Invalid JSON payload received. {where}: expected an object.")
    return value


def _optional_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(f"Invalid value at '{name}': expected a string.")
    return value


def _bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise invalid(f"Invalid value at '{name}' ({type(value).__name__}): expected true or false.")
    return value


def _languages(body: dict[str, Any]) -> list[str]:
    langs = body.get("languages") or []
    if not isinstance(langs, list) or not all(isinstance(x, str) and x.strip() for x in langs):
        raise invalid("Invalid value at 'languages': expected a list of language codes such as [\"en\"].")
    return langs


def _text(body: dict[str, Any], max_bytes: int) -> str:
    comment = _object(body.get("comment"), "comment") if "comment" in body else None
    if comment is None:
        raise invalid("Comment must be specified.", "COMMENT_EMPTY")
    _plain_text(comment.get("type"))
    text = comment.get("text")
    if text is not None and not isinstance(text, str):
        raise invalid("Invalid value at 'comment.text': expected a string.")
    # whitespace only (zero-width spaces included) is empty, as the live daemon and every audit
    # treat it (`blank_reason`): no detector's answer on it is a score of the comment
    if not text or blank_reason(text) is not None:
        raise invalid("Comment must be non-empty.", "COMMENT_EMPTY")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise invalid(f"Comment text too long: {size} bytes, at most {max_bytes} are accepted.", "COMMENT_TOO_LONG")
    return text


def _plain_text(kind: Any) -> None:
    """`comment.type`: Perspective documented PLAIN_TEXT and HTML and scored PLAIN_TEXT only. The
    detectors here read markup as words, so HTML is refused rather than scored as if it were the
    comment. Google's JSON parser read an enum's number as the name it numbers (1 is PLAIN_TEXT);
    a value that is no TextType, by name or number, is refused as that parser refused it."""
    if isinstance(kind, int) and not isinstance(kind, bool) and 0 <= kind < len(TEXT_TYPES):
        kind = TEXT_TYPES[kind]
    if kind == "HTML":
        raise invalid("comment.type HTML is not supported: only PLAIN_TEXT comments are scored "
                      "(send the comment's text without its markup).")
    if kind is None or kind in TEXT_TYPES:
        return
    raise field_violations([("comment.type", f"Invalid value at 'comment.type' ({TEXT_TYPE}), {json.dumps(kind)}")])


def _unknown(name: str, known: Collection[str]) -> PerspectiveError:
    """Perspective's names are upper case and so are the response's keys: another case is an
    unknown attribute (Perspective's message, then a hint), never silently upper-cased."""
    hint = f" (attribute names are upper case: {name.upper()})" if name.upper() in known else ""
    return invalid(f"Unknown attribute: {name}{hint}", "INVALID_ATTRIBUTE", attribute=name)


def parse_analyze(body: Any, max_bytes: int, known: Collection[str] = KNOWN) -> AnalyzeRequest:
    """`known`: the attribute names accepted (Perspective's and those study.toml adds)."""
    body = _object(body, "request body")
    _known_fields_only(body, "AnalyzeCommentRequest")
    text = _text(body, max_bytes)
    raw = body.get("requestedAttributes")
    if not raw:
        raise invalid("Must specify at least one attribute to analyze (requestedAttributes).",
                      "NO_REQUESTED_ATTRIBUTES")
    raw = _object(raw, "requestedAttributes")
    attributes: dict[str, Requested] = {}
    for name, params in raw.items():
        if name not in known:
            raise _unknown(name, known)
        params = _object(params if params is not None else {}, f"requestedAttributes.{name}")
        score_type = params.get("scoreType") or "PROBABILITY"
        if score_type not in SCORE_TYPES:
            raise invalid(f"Unsupported scoreType {score_type!r} for {name}: only PROBABILITY is available.",
                          "INVALID_SCORE_TYPE", attribute=name)
        threshold = params.get("scoreThreshold")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not 0 <= threshold <= 1):
            raise invalid(f"Invalid scoreThreshold for {name}: expected a number from 0 to 1.", attribute=name)
        attributes[name] = Requested(score_type, None if threshold is None else float(threshold))
    calibrated = body.get("calibrated")
    if calibrated is not None and not isinstance(calibrated, bool):
        raise invalid("Invalid value at 'calibrated': expected true or false.")
    return AnalyzeRequest(
        text=text, attributes=attributes, languages=_languages(body), do_not_store=_bool(body, "doNotStore"),
        span_annotations=_bool(body, "spanAnnotations"), drop_unsupported=_bool(body, "dropUnsupportedAttributes"),
        client_token=_optional_str(body, "clientToken"), session_id=_optional_str(body, "sessionId"),
        community_id=_optional_str(body, "communityId"), calibrated=calibrated)


def parse_suggest(body: Any, max_bytes: int, known: Collection[str] = KNOWN) -> SuggestRequest:
    body = _object(body, "request body")
    _known_fields_only(body, "SuggestCommentScoreRequest")
    text = _text(body, max_bytes)
    raw = _object(body.get("attributeScores") or {}, "attributeScores")
    if not raw:
        raise invalid("Must specify at least one attribute score (attributeScores).", "NO_REQUESTED_ATTRIBUTES")
    scores: dict[str, float] = {}
    spans: dict[str, list[tuple[int, int, float]]] = {}
    length = utf16_len(text)
    for name, entry in raw.items():
        if name not in known:
            raise _unknown(name, known)
        entry = _object(entry, f"attributeScores.{name}")
        # a summary, spans (each scoring a part of the comment), or both; at least one of them
        if entry.get("summaryScore") is not None or not entry.get("spanScores"):
            scores[name] = _suggested(entry.get("summaryScore"), f"attributeScores.{name}.summaryScore", name)
        listed = entry.get("spanScores") or []
        if not isinstance(listed, list):
            raise invalid(f"Invalid value at 'attributeScores.{name}.spanScores': expected a list.", attribute=name)
        for i, span in enumerate(listed):
            where = f"attributeScores.{name}.spanScores[{i}]"
            span = _object(span, where)
            begin, end = span.get("begin"), span.get("end")
            if (not isinstance(begin, int) or not isinstance(end, int) or isinstance(begin, bool)
                    or isinstance(end, bool) or not 0 <= begin < end <= length):
                raise invalid(f"{where}: begin and end must be set, UTF-16 offsets with 0 <= begin < end <= {length} "
                              "(the comment's length).", attribute=name)
            spans.setdefault(name, []).append((begin, end, _suggested(span.get("score"), f"{where}.score", name)))
    return SuggestRequest(text, scores, _languages(body), _optional_str(body, "clientToken"),
                          _optional_str(body, "sessionId"), _optional_str(body, "communityId"), spans)


def _suggested(score: Any, where: str, name: str) -> float:
    """A suggested Score's value: 0 to 1, of type PROBABILITY (the type assumed when none is given)."""
    score = _object(score if score is not None else {}, where)
    value, kind = score.get("value"), score.get("type") or "PROBABILITY"
    if kind not in SCORE_TYPES:
        raise invalid(f"Unsupported score type {kind!r} at {where}: only PROBABILITY is available.",
                      "INVALID_SCORE_TYPE", attribute=name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise invalid(f"{where}.value: expected a number from 0 to 1.", attribute=name)
    return float(value)
