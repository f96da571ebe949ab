"""Gold label sets: each (source, definition) is one set, and a gold label is a comment's value
in a set. A new definition (`modlens audit --label …`) adds a set; a set is never rewritten (a
value already stored stays), so a report made with a set can always be made again. An audit run
records the set its items' gold labels went to (`audit_runs.label_set_id`).

The gold label is the item label named `toxic` (`GOLD`): registration stores it here and every
other label in `labels` (`chunks/register.py`)."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from modlens.studylog.codec import label_value, now_iso
from modlens.studylog.connection import LogConnection
from modlens.studylog.records.batch import write_rows

GOLD = "toxic"
# the definition of the set migration 4 (schema.py) moves a source's older `toxic` labels into
LEGACY_DEFINITION = "as recorded before label sets (schema 3)"


def ensure_label_set(db: LogConnection, source: str, definition: str) -> int:
    """The id of the set (source, definition), created when new."""
    with db.transaction():
        db.write("INSERT OR IGNORE INTO label_sets (source, definition, created_at) VALUES (?, ?, ?)",
                 (source, definition, now_iso()))
        return int(db.scalar("SELECT label_set_id FROM label_sets WHERE source = ? AND definition = ?",
                             (source, definition)))


def run_label_set(db: LogConnection, run_id: int, source: str, definition: str) -> int:
    """The set (source, definition), recorded as the run's; its id."""
    with db.transaction():
        set_id = ensure_label_set(db, source, definition)
        db.write("UPDATE audit_runs SET label_set_id = ? WHERE run_id = ?", (set_id, run_id))
    return set_id


# bound row by row (`executemany`), as labels are (records/comments.py)
INSERT_GOLD = "INSERT OR IGNORE INTO gold_labels (label_set_id, comment_id, value) VALUES (?, ?, ?)"


def add_gold_labels(db: LogConnection, label_set_id: int, rows: Iterable[tuple[int, Any]]) -> None:
    """(comment_id, value) rows into the set. A comment that already has a value in the set keeps
    it: a set is never rewritten."""
    # label_value inlined, as in `add_labels`
    bound = [(label_set_id, cid, value if value is None or isinstance(value, str) else label_value(value))
             for cid, value in rows]
    if bound:
        write_rows(db, INSERT_GOLD, bound)


# --- reads -------------------------------------------------------------------------------------
def _dicts(db: LogConnection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cursor = db.conn.execute(sql, params)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row)) for row in cursor]


def label_sets(db: LogConnection) -> list[dict[str, Any]]:
    """Every set with its number of labels (`n`, `positives`) and the latest run that recorded it
    (`last_run`, None for a set no run recorded: older logs' migrated labels, merged bundles)."""
    return _dicts(
        db, "SELECT s.label_set_id, s.source, s.definition, s.created_at, "
        "(SELECT count(*) FROM gold_labels g WHERE g.label_set_id = s.label_set_id) AS n, "
        "(SELECT count(*) FROM gold_labels g WHERE g.label_set_id = s.label_set_id AND g.value = '1') AS positives, "
        "(SELECT max(run_id) FROM audit_runs r WHERE r.label_set_id = s.label_set_id) AS last_run "
        "FROM label_sets s ORDER BY s.source, s.label_set_id")


def gold_labels(db: LogConnection, label_set_ids: Sequence[int]) -> list[dict[str, Any]]:
    """(label_set_id, comment_id, value) of these sets, in the order of `label_set_ids`."""
    out: list[dict[str, Any]] = []
    for set_id in label_set_ids:
        out += _dicts(db, "SELECT label_set_id, comment_id, value FROM gold_labels WHERE label_set_id = ? "
                         "ORDER BY comment_id", (set_id,))
    return out
