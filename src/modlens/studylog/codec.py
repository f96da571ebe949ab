"""How values are written into the study log: timestamps, canonical JSON (equal parameters give
equal strings, so they can be part of unique keys) and the texts' content hash."""
from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Sequence, cast


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# A chunk's texts are hashed by each step that writes them (registration, normalizations, the
# unscored lookup, the score rows): the hashes of recent short texts are kept, so each is computed
# once. Bounded in entries and in text length, so the memo holds at most a few MB.
HASH_MEMO_ENTRIES = 4096
HASH_MEMO_MAX_CHARS = 1024


@functools.lru_cache(maxsize=HASH_MEMO_ENTRIES)
def _short_text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    """sha256 of the exact text (UTF-8), the key of the `texts` table."""
    if len(text) <= HASH_MEMO_MAX_CHARS:
        return _short_text_hash(text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_hashes(texts: Iterable[str]) -> dict[str, str]:
    """{text: text_hash} of every distinct text, in order, each computed here and not through the
    memo above: for a caller that hashes a batch once and carries the hashes (an audit chunk's one
    lookup, `records.scores.seen_texts`), where the memo would only add its own upkeep."""
    sha256 = hashlib.sha256
    return {t: sha256(t.encode("utf-8")).hexdigest() for t in texts}


_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
Encoder = Callable[[Any, int], Sequence[str]]  # (value, indent level) -> the JSON text's parts


def c_encoder(*, sort_keys: bool, separators: tuple[str, str],
              default: Callable[[Any], Any] | None = None) -> Encoder | None:
    """The C encoder behind `json.dumps(value, ensure_ascii=False, sort_keys=..., separators=...,
    default=...)`, built once (None on a Python without the accelerator); `"".join(enc(value, 0))` is
    that string. `json.dumps` with options builds a new encoder at every call, which was a third of the
    cost of storing a score row. No circular-reference check (a shared marker dict would not be
    thread-safe): a self-containing value fails with RecursionError instead of ValueError."""
    if _C_MAKE_ENCODER is None:
        return None
    item_sep, key_sep = separators
    return cast(Encoder, _C_MAKE_ENCODER(None, default or json.JSONEncoder().default, json.encoder.encode_basestring,
                                         None, key_sep, item_sep, sort_keys, False, True))  # skipkeys off, NaN allowed


def json_dumper(*, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": "),
                default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """`json.dumps` with these options and `ensure_ascii=False`, its encoder built once (`c_encoder`)."""
    enc = c_encoder(sort_keys=sort_keys, separators=separators, default=default)
    if enc is None:
        return functools.partial(json.dumps, ensure_ascii=False, sort_keys=sort_keys, separators=separators,
                                 default=default)
    return lambda value: "".join(enc(value, 0))


# canonical JSON's encoder; hot loops call it directly: `"".join(CANONICAL_ENCODER(value, 0))` (records/scores.py)
CANONICAL_ENCODER = c_encoder(sort_keys=True, separators=(",", ":"), default=str)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, so equal parameters give equal strings (used in unique keys)."""
    if CANONICAL_ENCODER is None:  # a Python without the C accelerator
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "".join(CANONICAL_ENCODER(value, 0))


def optional_json(value: Any) -> str | None:
    """canonical_json, NULL for None."""
    return None if value is None else canonical_json(value)


def label_value(value: Any) -> str | None:
    """A label's stored value: strings as they are, anything else as canonical JSON."""
    return None if value is None else value if isinstance(value, str) else canonical_json(value)
