"""HTML entities back to the characters they stand for: "&amp;" -> "&", "&#8220;" -> "“",
"&#128557;" -> "😭". Tweets collected through the Twitter API (Davidson et al. 2017) keep
them, and a detector that scores "&#128557;" scores digits and punctuation, not the emoji.

As a pipeline step it is a `char` step (`fold`, token by token); readers of Twitter-sourced
files apply it to every text as they read (`unescape`), and the audit records the change as a
normalization (`html_unescape` at `VERSION`) from the file's text to the text it scores."""
from __future__ import annotations

import html
import re

from modlens.normalize.base import Edit, Normalized
from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Step

NAME = "html_unescape"
VERSION = "1"  # bump when what counts as an entity changes
# a whitespace token with an "&" in it (only those can change); the lookbehind tries token starts only,
# so a long token costs one pass forward and back, never a rescan from each of its characters
_ENTITY_TOKEN = re.compile(r"(?<!\S)\S*&\S*")


def unescape_token(token: str) -> str:
    """`token` with its entities decoded (once: "&amp;amp;" is the text "&amp;")."""
    return html.unescape(token) if "&" in token else token


class HtmlUnescape(Step):
    name = NAME
    kind = "char"

    def fold(self, token: str, lexicon: Lexicon) -> str:
        return unescape_token(token)


def unescape(text: str) -> Normalized:
    """The whole text with its entities decoded, one `Edit` per whitespace token that changed
    (spans in the original text), named and versioned like a normalizer's output."""
    if "&" not in text:  # no entity (most texts): readers call this for every row, so skip the token scan
        return Normalized(text, [], NAME, VERSION)
    pieces, edits, last = [], [], 0
    for m in _ENTITY_TOKEN.finditer(text):  # the tokens without "&" stay as they are
        token = m.group()
        new = html.unescape(token)
        if new != token:
            start, end = m.span()
            edits.append(Edit(start, end, token, new, NAME, 1.0))
            pieces += [text[last:start], new]
            last = end
    pieces.append(text[last:])
    return Normalized("".join(pieces), edits, NAME, VERSION)
