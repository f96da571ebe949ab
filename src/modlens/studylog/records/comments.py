"""`pages`, `comments`, `sightings` and `labels`: what was shown, where, to whom, and what is known
about it. A comment keeps the text, parent and first labels of its first sighting: sending it
again returns its id and changes nothing."""
from __future__ import annotations

import functools
import operator
from typing import Any, Iterable, Mapping, Sequence

from modlens.rows import CommentRow, LabelRow
from modlens.studylog.codec import label_value, now_iso
from modlens.studylog.connection import LogConnection
from modlens.studylog.page_address import canonical_page
from modlens.studylog.records.batch import MAX_PARAMS, insert_new, write_grouped, write_rows
from modlens.studylog.records.texts import text_ids

COMMENT_IDS = ("SELECT comment_key, comment_id FROM comments WHERE platform = ? "
               "AND comment_key IN (SELECT value FROM json_each(?))")
INSERT_COMMENT = (
    "INSERT INTO comments (platform, comment_key, page_id, parent_key, text_id, author_hash, time_shown, "
    "truncated, original_length, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
# a later visit may know the title the first one did not: fill gaps, never erase
UPSERT_PAGE = ("INSERT INTO pages (platform, page_key, url, title, first_seen) VALUES (?, ?, ?, ?, ?) "
               "ON CONFLICT (platform, page_key) DO UPDATE SET url = coalesce(pages.url, excluded.url), "
               "title = coalesce(pages.title, excluded.title)")
# a re-import of the same source corrects its value rather than duplicating it. Bound row by row
# (`executemany`): a chunk's rows as one JSON array through json_each cost a third more CPU, each
# `value ->> n` parsing the row's array again (bench/bench_audit_floor.py)
UPSERT_LABEL = ("INSERT INTO labels (comment_id, name, value, source) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (comment_id, name, source) DO UPDATE SET value = excluded.value")
INSERT_SIGHTING = "INSERT OR IGNORE INTO sightings (comment_id, session_id, seen_at, text_id) VALUES (?, ?, ?, ?)"


def ensure_pages(db: LogConnection, rows: Iterable[tuple[str, str, str | None, str | None]]) -> list[int]:
    """(platform, page_key, url, title) rows; one page_id per row, in order. Every page is kept as
    `page_address.canonical_page` gives it: an X or YouTube address without the author it names,
    whoever sent it (docs/DATA.md, `pages`)."""
    rows = [canonical_page(*row) for row in rows]
    with db.locked():
        now = now_iso()
        db.write_many(UPSERT_PAGE, [(platform, key, url, title, now) for platform, key, url, title in rows])
        return [db.scalar("SELECT page_id FROM pages WHERE platform = ? AND page_key = ?", (platform, key))
                for platform, key, _, _ in rows]


def ensure_page(db: LogConnection, platform: str, page_key: str, url: str | None, title: str | None) -> int:
    return ensure_pages(db, [(platform, page_key, url, title)])[0]


def add_comments(db: LogConnection, platform: str, rows: Iterable[CommentRow]) -> list[int]:
    """Comments of one platform: a key already in the log (or earlier in `rows`) keeps its first
    text and returns its id; a new one gets its text and its `first_labels`. One comment_id per
    row, in order."""
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows:
        return []
    for r in rows:
        if not isinstance(r.text, str):
            raise TypeError(f"text must be str, not {type(r.text).__name__}")
    keys = [r.key for r in rows]
    with db.transaction():
        uniq = list(dict.fromkeys(keys))
        ids = db.ids_by_key(COMMENT_IDS, uniq, (platform,))
        new: dict[str, CommentRow] = {}
        if not ids and len(uniq) == len(rows):  # all new, none twice (a dataset's chunk): no test per row
            new = dict(zip(keys, rows))
        else:
            for r in rows:
                if r.key not in ids and r.key not in new:
                    new[r.key] = r
        if new:
            tids = text_ids(db, [r.text for r in new.values()])
            now = now_iso()
            new_ids = insert_new(db, "comments", INSERT_COMMENT, [
                (platform, r.key, r.page_id, r.parent_key, tids[r.text], r.author_hash, r.time_shown,
                 1 if r.truncated else 0, len(r.text) if r.original_length is None else r.original_length, now)
                for r in new.values()])
            if new_ids is None:
                ids.update(db.ids_by_key(COMMENT_IDS, list(new), (platform,)))
            else:
                ids.update(zip(new, new_ids))
            labels = [(ids[key], name, value, source) for key, r in new.items() if r.first_labels
                      for name, (value, source) in r.first_labels.items()]
            if labels:
                add_labels(db, labels)
    return list(map(ids.__getitem__, keys))


def add_comment(db: LogConnection, platform: str, comment_key: str, page_id: int | None, text: str, *,
                parent_key: str | None = None, author_hash: str | None = None, time_shown: str | None = None,
                truncated: bool = False, original_length: int | None = None,
                first_labels: dict[str, tuple[Any, str]] | None = None) -> int:
    return add_comments(db, platform, [CommentRow(comment_key, text, page_id, parent_key, author_hash, time_shown,
                                                  truncated, original_length, first_labels)])[0]


def comment_id(db: LogConnection, platform: str, comment_key: str) -> int | None:
    found: int | None = db.scalar("SELECT comment_id FROM comments WHERE platform = ? AND comment_key = ?",
                                  (platform, comment_key))
    return found


def comment_ids(db: LogConnection, platform: str, comment_keys: Sequence[str]) -> dict[str, int]:
    """{comment_key: comment_id} of the keys that are in the log."""
    return db.ids_by_key(COMMENT_IDS, list(dict.fromkeys(comment_keys)), (platform,))


def comment_text(db: LogConnection, comment_id: int) -> str | None:
    text: str | None = db.scalar(
        "SELECT t.text FROM comments c JOIN texts t USING (text_id) WHERE c.comment_id = ?", (comment_id,))
    return text


def add_sightings(db: LogConnection, rows: Iterable[tuple[int, str] | tuple[int, str, str]]) -> None:
    """(comment_id, session_id[, text]) rows: the first sighting of a comment in a session is kept,
    with the text that session was sent (`sightings.text_id`: the comment keeps its first text, a site
    may show another session an edited one); a row without it records it unknown (NULL)."""
    rows = list(rows)
    now = now_iso()
    with db.transaction():
        ids = text_ids(db, [r[2] for r in rows if len(r) > 2])
        db.write_many(INSERT_SIGHTING, [(r[0], r[1], now, ids[r[2]] if len(r) > 2 else None) for r in rows])


def add_sighting(db: LogConnection, comment_id: int, session_id: str) -> None:
    add_sightings(db, [(comment_id, session_id)])


def add_labels(db: LogConnection, rows: Iterable[LabelRow]) -> None:
    """(comment_id, name, value, source) rows; a value that is not a string is stored as JSON."""
    # label_value inlined: a dataset audit writes five labels per comment, and the call was a tenth of them
    add_stored_labels(db, [(cid, name, value if value is None or isinstance(value, str) else label_value(value), source)
                           for cid, name, value, source in rows])


def add_stored_labels(db: LogConnection, rows: Sequence[tuple[int, str, str | None, str]]) -> None:
    """`add_labels` of rows whose values are already as it stores them (a string as it is, anything
    else `label_value`)."""
    if rows:
        write_rows(db, UPSERT_LABEL, rows)


# A run of at least this many comments in a row whose labels have the same names goes in with a
# statement of their shape (`add_labels_per_comment`), LABELS_COMMENTS_PER_STATEMENT comments to a
# statement; a shorter run, row by row (a statement of its own per shape would cost more than it saves).
# A statement of many rows keeps a statement journal (each page copied before its first change in
# it): 32 comments to a statement copy those pages a quarter as often as 8 did (Davidson, free
# detector: labels 3.85 -> 3.5 µs per row; 64: no better).
LABEL_RUN_MIN = 8
LABELS_COMMENTS_PER_STATEMENT = 32
# Names and source are written into those statements (and kept in their cache): a longer name or
# source, or names longer than this in all (a hostile file's column headers), go row by row, bound.
LABEL_LITERAL_MAX_CHARS = 256
LABEL_NAMES_MAX_CHARS = 4096
_STR_OR_NONE = frozenset((str, type(None)))


def _sql_text(value: str) -> str:
    """`value` as an SQL string literal (quotes doubled; SQLite has no other escape)."""
    return "'" + value.replace("'", "''") + "'"


@functools.lru_cache(maxsize=64)
def _labels_shape(names: tuple[str, ...], leave_out: str | None, source: str) -> tuple[tuple[str, ...], Any] | None:
    """For comments whose labels have these names, in this order: the names stored (all but
    `leave_out`) and the getter of their values in that order; None when a name cannot be an SQL
    literal (a NUL), none is left, one comment's would bind more than MAX_PARAMS, or the
    names or source are too long to write into a statement (`LABEL_LITERAL_MAX_CHARS`, `LABEL_NAMES_MAX_CHARS`)."""
    kept = tuple(n for n in names if n != leave_out)
    if (not kept or len(kept) >= MAX_PARAMS or len(source) > LABEL_LITERAL_MAX_CHARS
            or sum(map(len, kept)) > LABEL_NAMES_MAX_CHARS or max(map(len, kept)) > LABEL_LITERAL_MAX_CHARS
            or any("\x00" in n for n in (*kept, source))):
        return None
    return kept, operator.itemgetter(*kept) if len(kept) > 1 else (lambda labels: (labels[kept[0]],))


@functools.lru_cache(maxsize=64)
def _labels_sql(kept: tuple[str, ...], source: str, n_comments: int) -> str:
    """The statement that upserts the labels `kept` of `n_comments` comments as `UPSERT_LABEL` row by
    row would; its parameters, per comment: comment_id, then the values of `kept` in order."""
    src, width = _sql_text(source), len(kept) + 1
    rows = ", ".join(f"(?{j * width + 1}, {_sql_text(n)}, ?{j * width + i + 2}, {src})"
                     for j in range(n_comments) for i, n in enumerate(kept))
    return (f"INSERT INTO labels (comment_id, name, value, source) VALUES {rows} "
            "ON CONFLICT (comment_id, name, source) DO UPDATE SET value = excluded.value")


def add_labels_per_comment(db: LogConnection, source: str, rows: Iterable[tuple[int, Mapping[str, Any]]],
                           leave_out: str | None = None) -> None:
    """(comment_id, {name: value}) rows: each label but `leave_out` stored as `add_labels` stores
    (comment_id, name, value, source), the same rows in the same order. A run of comments whose
    labels have the same names (a dataset's items) goes in with statements of a VALUES row per label
    and comment, names and source written in them: the comment id and values bound, no tuple per
    label (Davidson's five: 9.9 -> 6.6 µs per comment a statement each, building the rows included)."""
    run: list[tuple[Any, ...]] = []  # (comment_id, *values) of the current run
    shape: tuple[tuple[str, ...], Any] | None = None
    names: tuple[str, ...] | None = None
    flat: list[tuple[int, str, str | None, str]] = []  # rows of short runs, row by row

    def end_run() -> None:
        if not run or shape is None:
            return
        kept = shape[0]
        if len(run) < LABEL_RUN_MIN:
            flat.extend((r[0], n, v, source) for r in run for n, v in zip(kept, r[1:]))
        else:
            add_stored_labels(db, flat)
            flat.clear()
            per = max(1, min(LABELS_COMMENTS_PER_STATEMENT, MAX_PARAMS // (len(kept) + 1)))
            write_grouped(db, _labels_sql(kept, source, per), _labels_sql(kept, source, 1), run, per)
        run.clear()

    for cid, labels in rows:
        these = tuple(labels)
        if these != names:
            end_run()
            names, shape = these, _labels_shape(these, leave_out, source)
        if shape is None:  # nothing to store, or names that go row by row
            flat.extend((cid, n, label_value(v), source) for n, v in labels.items() if n != leave_out)
            continue
        values = shape[1](labels)
        if not _STR_OR_NONE.issuperset(map(type, values)):  # stored as `add_labels` stores them
            values = tuple(map(label_value, values))
        run.append((cid, *values))
    end_run()
    add_stored_labels(db, flat)


def add_label(db: LogConnection, comment_id: int, name: str, value: Any, source: str) -> None:
    add_labels(db, [(comment_id, name, value, source)])
