"""`texts`: every distinct text once, keyed by its sha256 (codec.text_hash)."""
from __future__ import annotations

from typing import Iterable

from modlens.studylog.codec import text_hash
from modlens.studylog.connection import TEXT_MEMO_MAX, LogConnection

TEXT_IDS = "SELECT text_hash, text_id FROM texts WHERE text_hash IN (SELECT value FROM json_each(?))"
INSERT_TEXT = "INSERT INTO texts (text_hash, text) VALUES (?, ?)"


def text_ids(db: LogConnection, texts: Iterable[str]) -> dict[str, int]:
    """{text: text_id} for every distinct text, inserting the missing ones in order of first
    appearance (so one call with many texts gives the ids that calls with one each would)."""
    memo = db.text_memo if db.conn.in_transaction else None  # texts this transaction already looked up
    uniq = list(dict.fromkeys(texts))
    todo = uniq if not memo else [t for t in uniq if t not in memo]
    for t in todo:
        if not isinstance(t, str):
            raise TypeError(f"text must be str, not {type(t).__name__}")
    if not todo:
        return {t: memo[t] for t in uniq} if memo else {}
    hashes = [text_hash(t) for t in todo]
    if db.conn.in_transaction:  # (no `locked()` block: its cost shows in row-at-a-time callers)
        by_hash = _ids_of_hashes(db, hashes, todo)
    else:
        with db.transaction():  # the lookup and the inserts under one write lock
            by_hash = _ids_of_hashes(db, hashes, todo)
    found = {t: by_hash[h] for h, t in zip(hashes, todo)}
    if memo is None:
        return found
    out = found if len(todo) == len(uniq) else {t: found[t] if t in found else memo[t] for t in uniq}
    if len(memo) + len(found) > TEXT_MEMO_MAX:
        memo.clear()
    memo.update(found)
    return out


def _ids_of_hashes(db: LogConnection, hashes: list[str], uniq: list[str]) -> dict[str, int]:
    by_hash = db.ids_by_key(TEXT_IDS, hashes)
    missing = [(h, t) for h, t in zip(hashes, uniq) if h not in by_hash]
    if missing:
        new_ids = db.insert_new("texts", INSERT_TEXT, missing)
        if new_ids is None:
            by_hash.update(db.ids_by_key(TEXT_IDS, [h for h, _ in missing]))
        else:
            by_hash.update(zip((h for h, _ in missing), new_ids))
    return by_hash


def text_id(db: LogConnection, text: str) -> int:
    return text_ids(db, [text])[text]


def text_of(db: LogConnection, text_id: int) -> str | None:
    text: str | None = db.scalar("SELECT text FROM texts WHERE text_id = ?", (text_id,))
    return text
