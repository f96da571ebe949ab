"""`texts`: every distinct text once, keyed by its sha256 (codec.text_hash)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from modlens.studylog.codec import text_hash
from modlens.studylog.connection import TEXT_MEMO_MAX, LogConnection
from modlens.studylog.records.batch import insert_new

TEXT_IDS = "SELECT text_hash, text_id FROM texts WHERE text_hash IN (SELECT value FROM json_each(?))"
# OR IGNORE although the texts are known new (`_ids_of_hashes`: looked up under the write lock): a
# statement of many rows that may abort midway keeps a statement journal, a copy of each page before
# its first change, and the hash index's random keys touch a page per row (32 rows to a statement:
# 2.1 µs per text with it, 1.4 without; one row to a statement, 1.9). A row it did leave out would
# make `insert_new` read the ids back by hash
INSERT_TEXT = "INSERT OR IGNORE INTO texts (text_hash, text) VALUES (?, ?)"


def log_state(db: LogConnection) -> tuple[int, int]:
    """What changes whenever the log's rows may have: SQLite's `data_version` (another connection,
    in this process or another, committed) and this connection's `total_changes` (it wrote, whether
    or not it kept what it wrote)."""
    return db.conn.execute("PRAGMA data_version").fetchone()[0], db.conn.total_changes


@dataclass
class Seen:
    """Texts as a lookup made before the transaction that writes them found them (an audit looks a
    chunk's texts up once, with their scores, before its compute): their hashes, the ids of those in
    the log, and the log's state then (`log_state`). `known` makes it the transaction's knowledge
    when nothing was written since."""
    state: tuple[int, int]
    hashes: dict[str, str]                             # text -> text_hash, every text looked up
    ids: dict[str, int] = field(default_factory=dict)  # text -> text_id, of those in the log then


def known(db: LogConnection, seen: Seen) -> bool:
    """Inside a write transaction: what `seen` found is taken as this transaction's lookup (ids into
    its memo, the missing texts inserted without asking again) if the log's state is the one `seen`
    looked at, so nobody (this connection, another process) wrote between; else nothing (the texts
    are looked up under the write lock, as always). Whether it was taken."""
    memo = db.text_memo
    if memo is None or not db.conn.in_transaction or log_state(db) != seen.state:
        return False
    if len(memo) + len(seen.ids) > TEXT_MEMO_MAX:
        memo.clear()
    memo.update(seen.ids)
    ids = seen.ids  # (`seen` is used up: its hashes become the absent set, which inserts empty)
    db.text_absent = {t: h for t, h in seen.hashes.items() if t not in ids} if ids else seen.hashes
    return True


def carried(seen: Seen, since: tuple[int, int], memo: Mapping[str, int], now: tuple[int, int]) -> bool:
    """`seen` brought past a transaction of this connection that began at the state it was made in
    (`since`, read under the write lock) and committed at `now`, having looked up or added the texts
    of `memo` (its `text_memo`): those of them `seen` found missing get their ids, and `now` becomes its
    state, so the next transaction takes it (`known`) if nothing is written before. Where an overlapped
    audit's chunk n+1 was looked up before chunk n was recorded, its lookup outlives chunk n's COMMIT.
    False, and `seen` left stale (refused), when it was made at another state: something wrote in
    between. A text the memo lost (emptied past TEXT_MEMO_MAX) stays marked missing, and its insert
    leaves it out (INSERT OR IGNORE), so its id is read back by hash: never a second row."""
    if seen.state != since:
        return False
    ids, get = seen.ids, memo.get
    for t in seen.hashes:
        if t not in ids and (tid := get(t)) is not None:
            ids[t] = tid
    seen.state = now
    return True


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
    absent = db.text_absent if memo is not None else None  # (`known`: the texts this transaction knows missing)
    if absent:
        get = absent.get
        hashes = [get(t) or text_hash(t) for t in todo]
    else:
        hashes = [text_hash(t) for t in todo]
    if db.conn.in_transaction:  # (no `locked()` block: its cost shows in row-at-a-time callers)
        by_hash = _ids_of_hashes(db, hashes, todo, absent)
    else:
        with db.transaction():  # the lookup and the inserts under one write lock
            by_hash = _ids_of_hashes(db, hashes, todo, None)
    found = {t: by_hash[h] for h, t in zip(hashes, todo)}
    if memo is None:
        return found
    out = found if len(todo) == len(uniq) else {t: found[t] if t in found else memo[t] for t in uniq}
    if len(memo) + len(found) > TEXT_MEMO_MAX:
        memo.clear()
    memo.update(found)
    return out


def _ids_of_hashes(db: LogConnection, hashes: list[str], uniq: list[str],
                   absent: dict[str, str] | None) -> dict[str, int]:
    """{hash: text_id} of `uniq` (their `hashes`), inserting the missing ones in order; `absent`: the
    texts known to be missing (`known`), not looked up, and no longer absent once inserted."""
    if absent:
        ask = [h for h, t in zip(hashes, uniq) if t not in absent]
        by_hash = db.ids_by_key(TEXT_IDS, ask) if ask else {}
    else:
        by_hash = db.ids_by_key(TEXT_IDS, hashes)
    missing = [(h, t) for h, t in zip(hashes, uniq) if h not in by_hash]
    if absent:
        pop = absent.pop
        for _, t in missing:
            pop(t, None)
    if missing:
        new_ids = insert_new(db, "texts", INSERT_TEXT, missing)
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
