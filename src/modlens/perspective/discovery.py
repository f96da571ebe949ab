"""The discovery document Google's API clients build the service from (`discovery#restDescription`).

`googleapiclient.discovery.build("commentanalyzer", "v1alpha1", discoveryServiceUrl=URL,
developerKey=KEY)` fetches it and sends its calls to `rootUrl` + `servicePath` + each method's
`path`; `rootUrl` is this server (the address the client reached), so a client needs only a
different `discoveryServiceUrl`. The schemas restate Perspective's documented fields.
"""
from __future__ import annotations

from typing import Any

SERVICE, VERSION = "commentanalyzer", "v1alpha1"
# where clients fetch it: Google's per-service path and the generic discovery service's path
PATHS = ("/$discovery/rest", f"/discovery/v1/apis/{SERVICE}/{VERSION}/rest")


def _obj(properties: dict[str, Any], description: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": "object", "description": description, "properties": properties, **extra}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": name}


S = {"type": "string"}
B = {"type": "boolean"}
SCHEMAS: dict[str, Any] = {
    "TextEntry": _obj({"text": S, "type": {"type": "string", "enum": ["TEXT_TYPE_UNSPECIFIED", "PLAIN_TEXT", "HTML"]}},
                      "A comment or other text.", id="TextEntry"),
    "Context": _obj({"entries": {"type": "array", "items": _ref("TextEntry")},
                     "articleAndParentComment": _ref("ArticleAndParentComment")}, id="Context"),
    "ArticleAndParentComment": _obj({"article": _ref("TextEntry"), "parentComment": _ref("TextEntry")},
                                    id="ArticleAndParentComment"),
    "AttributeParameters": _obj({"scoreType": S, "scoreThreshold": {"type": "number", "format": "float"}},
                                id="AttributeParameters"),
    "AnalyzeCommentRequest": _obj({
        "comment": _ref("TextEntry"), "context": _ref("Context"),
        "requestedAttributes": {"type": "object", "additionalProperties": _ref("AttributeParameters")},
        "languages": {"type": "array", "items": S}, "doNotStore": B, "spanAnnotations": B,
        "dropUnsupportedAttributes": B, "clientToken": S, "sessionId": S, "communityId": S,
        "calibrated": {**B, "description": "modlens: map scores onto Perspective's scale (fitted calibrations)"},
    }, "Score a comment.", id="AnalyzeCommentRequest"),
    "Score": _obj({"value": {"type": "number", "format": "float"}, "type": S}, id="Score"),
    "SpanScore": _obj({"begin": {"type": "integer", "format": "int32"}, "end": {"type": "integer", "format": "int32"},
                       "score": _ref("Score")}, id="SpanScore"),
    "AttributeScores": _obj({"summaryScore": _ref("Score"), "spanScores": {"type": "array", "items": _ref("SpanScore")},
                             "detector": {"type": "object", "description": "modlens: the detector and version"}},
                            id="AttributeScores"),
    "AnalyzeCommentResponse": _obj({
        "attributeScores": {"type": "object", "additionalProperties": _ref("AttributeScores")},
        "languages": {"type": "array", "items": S}, "detectedLanguages": {"type": "array", "items": S},
        "clientToken": S}, id="AnalyzeCommentResponse"),
    "SuggestCommentScoreRequest": _obj({
        "comment": _ref("TextEntry"), "context": _ref("Context"),
        "attributeScores": {"type": "object", "additionalProperties": _ref("AttributeScores")},
        "languages": {"type": "array", "items": S}, "clientToken": S, "sessionId": S, "communityId": S},
        id="SuggestCommentScoreRequest"),
    "SuggestCommentScoreResponse": _obj({"requestedLanguages": {"type": "array", "items": S},
                                         "detectedLanguages": {"type": "array", "items": S}, "clientToken": S},
                                        id="SuggestCommentScoreResponse"),
}


def _method(name: str, request: str, response: str, description: str) -> dict[str, Any]:
    path = f"{VERSION}/comments:{name}"
    return {"id": f"{SERVICE}.comments.{name}", "path": path, "flatPath": path, "httpMethod": "POST",
            "parameters": {}, "parameterOrder": [], "request": _ref(request), "response": _ref(response),
            "description": description}


def document(root_url: str) -> dict[str, Any]:
    """The discovery document for a server reached at `root_url` (ending in '/')."""
    return {
        "kind": "discovery#restDescription", "discoveryVersion": "v1", "id": f"{SERVICE}:{VERSION}",
        "name": SERVICE, "version": VERSION, "title": "Perspective Comment Analyzer API (modlens, local detectors)",
        "description": "Perspective's comments:analyze and comments:suggestscore, answered by modlens's local, "
                       "versioned detectors.",
        "protocol": "rest", "rootUrl": root_url, "servicePath": "", "baseUrl": root_url, "basePath": "/",
        "batchPath": "batch",
        "parameters": {
            "key": {"type": "string", "location": "query",
                    "description": "the pairing token or the key from `modlens pair --api-key`"},
            "alt": {"type": "string", "location": "query", "default": "json", "enum": ["json"]},
            "prettyPrint": {"type": "boolean", "location": "query", "default": "true"},
            "fields": {"type": "string", "location": "query"},
        },
        "schemas": SCHEMAS,
        "resources": {"comments": {"methods": {
            "analyze": _method("analyze", "AnalyzeCommentRequest", "AnalyzeCommentResponse",
                               "Analyzes the provided text and returns scores for the requested attributes."),
            "suggestscore": _method("suggestscore", "SuggestCommentScoreRequest", "SuggestCommentScoreResponse",
                                    "Suggest comment scores as training data."),
        }}},
    }
