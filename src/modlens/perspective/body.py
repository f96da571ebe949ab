"""Reading a Perspective request body: bounded first, then JSON, then Perspective's lenient form.

Google's front end took object keys written as bare names, and Perspective's own documented curl
sample sends them (`{comment: {text: "…"}, requestedAttributes: {TOXICITY: {}}}`). The order holds
for every body: its size is bounded by the server (aiohttp's `client_max_size`), then it must be
UTF-8, then its nesting is counted without decoding it (the listener policy the socket keeps,
`protocol.parse.json_depth_exceeds`, so a 100k-deep body never recurses), and only then is it
decoded: by `json.loads`, and when that refuses it, by the small reader below, which is JSON plus
bare-name keys and nothing more (no eval, no other extension). Every string, keys included, must
be Unicode text: a lone surrogate (`"\\ud800"`) could not be logged, stored or scored.
"""
from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from modlens.perspective.errors import PerspectiveError, invalid
from modlens.protocol.messages import MAX_JSON_DEPTH
from modlens.protocol.parse import is_valid_text, json_depth_exceeds

PREFIX = "Invalid JSON payload received."

_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_LITERALS = {"true": True, "false": False, "null": None}


def decode(raw: bytes) -> Any:
    """The body's value, or a PerspectiveError (400 INVALID_ARGUMENT) saying what is wrong. No
    body at all is the empty message, as Google's HTTP/JSON front end read it: the request is then
    refused by its missing fields ("Comment must be specified.", COMMENT_EMPTY), an answer with a
    `details` entry that clients probing a key with an empty POST (PyPerspective) read."""
    if not raw:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise invalid(f"{PREFIX} The body is not UTF-8 ({err.reason} at byte {err.start}).") from None
    if json_depth_exceeds(text):
        raise invalid(f"{PREFIX} Nested deeper than {MAX_JSON_DEPTH} levels.")
    if not text.strip():
        raise invalid(f"{PREFIX} The body is empty.")
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = _Lenient(text).document()
        except ValueError as err:
            raise invalid(f"{PREFIX} {err}") from None
    _check_unicode(value)
    return value


class _Lenient:
    """JSON whose object keys may also be bare names. Recursive, but only over bodies whose depth
    `decode` has already bounded."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def document(self) -> Any:
        value = self.value()
        if self._peek():
            self._fail("Unexpected text after the JSON value")
        return value

    def _peek(self) -> str:
        space = _SPACE.match(self.text, self.pos)
        if space is not None:  # always: the pattern matches ""
            self.pos = space.end()
        return self.text[self.pos:self.pos + 1]

    def _fail(self, what: str) -> NoReturn:
        snippet = self.text[self.pos:self.pos + 20]
        raise ValueError(f"{what} at position {self.pos}" + (f": {snippet!r}" if snippet else " (end of body)"))

    def _take(self, pattern: re.Pattern[str]) -> str | None:
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def _string(self) -> str:
        token = self._take(_STRING)
        if token is None:
            self._fail("Unterminated string or a control character in it")
        value: str = json.loads(token)
        return value

    def value(self) -> Any:
        c = self._peek()
        if c == "{":
            return self._object()
        if c == "[":
            return self._array()
        if c == '"':
            return self._string()
        number = self._take(_NUMBER)
        if number is not None:
            return float(number) if any(ch in number for ch in ".eE") else int(number)
        name = self._take(_NAME)
        if name in _LITERALS:
            return _LITERALS[name]
        self._fail("Expected a value" if name is None else f"Unexpected name {name!r} where a value goes")

    def _key(self) -> str:
        if self._peek() == '"':
            return self._string()
        name = self._take(_NAME)
        if name is None:
            self._fail("Expected a field name")
        return name

    def _object(self) -> dict[str, Any]:
        self.pos += 1
        out: dict[str, Any] = {}
        if self._peek() == "}":
            self.pos += 1
            return out
        while True:
            key = self._key()
            if self._peek() != ":":
                self._fail("Expected : after a field name")
            self.pos += 1
            out[key] = self.value()
            c = self._peek()
            self.pos += 1
            if c == "}":
                return out
            if c != ",":
                self.pos -= 1
                self._fail("Expected , or } after key:value pair")

    def _array(self) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        if self._peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            c = self._peek()
            self.pos += 1
            if c == "]":
                return out
            if c != ",":
                self.pos -= 1
                self._fail("Expected , or ] after an element")


def _check_unicode(value: Any) -> None:
    """Refuse a lone surrogate in any string or key, naming where it is."""
    todo: list[tuple[Any, str]] = [(value, "")]
    while todo:
        item, path = todo.pop()
        if isinstance(item, str):
            if not is_valid_text(item):
                raise _surrogate(path)
        elif isinstance(item, dict):
            for key, sub in item.items():
                where = f"{path}.{key}" if path else key
                if not is_valid_text(key):
                    raise _surrogate(ascii(where)[1:-1])
                todo.append((sub, where))
        elif isinstance(item, list):
            todo.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item))


def _surrogate(path: str) -> PerspectiveError:
    return invalid(f"Invalid value at '{path or '(body)'}': not Unicode text (a lone surrogate such as "
                   "\\ud800); send the text as UTF-8.")
