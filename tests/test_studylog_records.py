"""The record layer (studylog/records/): one function per table group serves one row and many,
sessions end with how they ended, and the plain record types live in a leaf module."""
from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

from modlens.rows import CommentRow
from modlens.studylog.codec import label_value
from modlens.studylog.records import batch, comments
from modlens.studylog.store import StudyLog

SRC = Path(__file__).resolve().parents[1] / "src" / "modlens"


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(("." * node.level) + (node.module or ""))
    return found


def test_record_types_live_in_a_leaf_module():
    assert not {m for m in imports_of(SRC / "rows.py") if m.startswith(("modlens", "."))}
    media = imports_of(SRC / "studylog" / "records" / "media.py")
    assert not {m for m in media if m.startswith(("modlens.fusion", "modlens.media"))}, media


def test_only_the_record_layer_writes_sql_in_the_study_log_package():
    statement = re.compile(r"\b(INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|REPLACE INTO)\b")
    for name in ("store.py", "connection.py", "writer.py", "codec.py", "migrate.py", "../exchange/merge.py"):
        text = (SRC / "studylog" / name).read_text(encoding="utf-8")
        assert not statement.search(text), (name, statement.search(text))


def session_log(path: Path) -> StudyLog:
    log = StudyLog(path)
    log.ensure_study("s1", "one", {})
    log.ensure_study("s2", "two", {})
    return log


def test_end_session_says_who_ended_it(tmp_path):
    with session_log(tmp_path / "log.sqlite") as log:
        log.start_session("a", "s1", "r", "ext", "1", 1)
        log.end_session("a")
        first = log.query("SELECT ended_at, ended_by FROM sessions")[0]
        log.end_session("a", ended_by="shutdown")  # an ended session keeps its end
        assert log.query("SELECT ended_at, ended_by FROM sessions")[0] == first
        assert first["ended_by"] == "client" and first["ended_at"]


def test_sessions_left_open_by_a_crash_close_at_their_last_activity(tmp_path):
    with session_log(tmp_path / "log.sqlite") as log:
        for sid, study in (("quiet", "s1"), ("seen", "s1"), ("rated", "s1"), ("other", "s2"), ("done", "s1")):
            log.start_session(sid, study, "r", "ext", "1", 1)
        cid = log.add_comment("p", "k", None, "a comment")
        log.add_sighting(cid, "seen")
        log.add_sighting(cid, "rated")
        log.add_rating("s1", "r", "x1", "rated", cid, {"toxic": "yes"}, None, None, False, 10)
        log.end_session("done")
        # timestamps set apart so "last activity" is unambiguous
        log.conn.execute("UPDATE sessions SET started_at = '2024-01-01T00:00:00.000+00:00'")
        log.conn.execute("UPDATE sightings SET seen_at = '2024-01-01T00:05:00.000+00:00'")
        log.conn.execute("UPDATE ratings SET created_at = '2024-01-01T00:09:00.000+00:00'")
        done = log.query("SELECT ended_at, ended_by FROM sessions WHERE session_id = 'done'")[0]

        assert log.close_open_sessions("s1") == 3
        got = {r["session_id"]: (r["ended_at"], r["ended_by"]) for r in log.query("SELECT * FROM sessions")}
        assert got["quiet"] == ("2024-01-01T00:00:00.000+00:00", "recovery")
        assert got["seen"] == ("2024-01-01T00:05:00.000+00:00", "recovery")
        assert got["rated"] == ("2024-01-01T00:09:00.000+00:00", "recovery")
        assert got["other"] == (None, None)  # another study's session is not this daemon's
        assert got["done"] == (done["ended_at"], done["ended_by"])


def test_one_row_and_many_are_the_same_function(tmp_path):
    rows_ = [CommentRow("a", "text a", first_labels={"via": ("reply", "ext")}), CommentRow("b", "text b"),
             CommentRow("a", "text a again", first_labels={"via": ("other", "ext")})]
    with StudyLog(tmp_path / "many.sqlite") as many, StudyLog(tmp_path / "one.sqlite") as one:
        got_many = comments.add_comments(many, "p", rows_)
        got_one = [comments.add_comments(one, "p", [r])[0] for r in rows_]
        assert got_many == got_one == [1, 2, 1]
        for log in (many, one):  # the first sighting's text and labels stay
            assert log.comment_text(1) == "text a"
            assert log.query("SELECT comment_id, name, value FROM labels") == [
                {"comment_id": 1, "name": "via", "value": "reply"}]
        assert many.add_comment("p", "c", None, "text c", first_labels={"via": ("top", "ext")}) == 3
        assert many.comment_ids("p", ["a", "c", "missing"]) == {"a": 1, "c": 3}


def test_label_rows_store_every_value_whole_and_an_upsert_corrects_it(tmp_path):
    """Label and gold rows are bound row by row: a value holding a NUL (which SQLite's JSON
    functions would cut) arrives whole, values that are not strings as canonical JSON, in order, and
    a later batch's upsert still corrects an earlier value."""
    from modlens.studylog.records import labels as gold

    values = ["plain", "with\x00nul", {"k": [1, "x\x00"]}, 7, None, "ünï"]
    with StudyLog(tmp_path / "l.sqlite") as log:
        ids = comments.add_comments(log, "p", [CommentRow(f"c{i}", f"text {i}") for i in range(len(values))])
        rows = [(cid, "n", v, "src") for cid, v in zip(ids, values)]
        comments.add_labels(log, rows[:3])
        comments.add_labels(log, rows[3:])
        comments.add_labels(log, [(ids[0], "n", "corrected", "src")])
        got = [r["value"] for r in log.query("SELECT value FROM labels ORDER BY comment_id")]
        assert got == ["corrected", "with\x00nul", label_value(values[2]), "7", None, "ünï"]
        set_id = gold.ensure_label_set(log, "src", "def")
        gold.add_gold_labels(log, set_id, [(ids[0], "a\x00b"), (ids[1], 1)])
        gold.add_gold_labels(log, set_id, [(ids[1], 0), (ids[2], "yes")])  # a stored value stays
        assert [(r["comment_id"], r["value"]) for r in log.query(
            "SELECT comment_id, value FROM gold_labels ORDER BY comment_id")] == [
            (ids[0], "a\x00b"), (ids[1], "1"), (ids[2], "yes")]


def test_labels_per_comment_store_the_rows_and_order_that_add_labels_does(tmp_path):
    """One statement per comment for runs of same-named labels, row by row otherwise: every case
    writes exactly the rows, values and rowids of `add_labels` (runs long and short, names reordered,
    a quote and a NUL in names, values that are not strings, a comment twice, a label already there)."""
    same = [(i, {"class": f"c{i}", "toxic": "1", "raters": str(i), "it's": None}) for i in range(1, 13)]
    rows = [*same,
            (13, {"raters": "3", "class": "x"}),                       # the same names in another order: short run
            (14, {"a\x00b": "nul", "toxic": "0"}),                      # a name no SQL literal can hold
            (15, {"toxic": "1"}),                                       # nothing but the left-out label
            *[(16 + i, {"n": i, "f": 0.5, "b": True, "d": {"k": [1, 2]}}) for i in range(9)],  # not strings: JSON
            *[(25 + i, {f"l{j}": f"{i}-{j}" for j in range(200)}) for i in range(9)],  # 4 comments a statement
            *[(34 + i, {f"m{j}": "v" for j in range(1000)}) for i in range(8)],  # more than one statement binds
            (3, {"class": "again", "toxic": "1", "raters": "9", "it's": "now"}),  # a comment twice: upserted
            *[(i, {"class": f"c{i}", "it's": "x"}) for i in range(1, 36)]]  # a statement of 32 and a remainder
    source = "dataset:o'brien"

    def stored(how) -> list[tuple]:
        with StudyLog(tmp_path / f"{how}.sqlite") as log:
            ids = log.add_comments_many("p", [CommentRow(f"k{i}", f"t{i}") for i in range(1, 42)])
            assert ids == list(range(1, 42))
            log.add_labels_many([(5, "class", "before", source)])  # a label already logged gets the new value
            with log.transaction():
                if how == "rows":
                    log.add_labels_many([(cid, n, v, source) for cid, labels in rows for n, v in labels.items()
                                         if n != "toxic"])
                else:  # a SQLite built with the old limit on parameters: no statement binds more
                    log.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, batch.MAX_PARAMS)
                    log.add_labels_per_comment(source, rows, "toxic")
            return log.conn.execute("SELECT rowid, * FROM labels ORDER BY rowid").fetchall()

    want = stored("rows")
    assert stored("per_comment") == want
    assert (16, "d", label_value({"k": [1, 2]}), source) in [r[1:] for r in want]


def test_many_rows_per_statement_write_what_executemany_writes(tmp_path):
    """`records.batch.write_rows`: the rows, their order, conflict handling and changed-row count of
    `executemany`, with whole statements of ROWS_PER_STATEMENT rows and a remainder."""
    import pytest

    from modlens.studylog.records import scores

    n = batch.ROWS_PER_STATEMENT * 2 + 5

    def written(how: str) -> tuple[int, int, list[tuple]]:
        with StudyLog(tmp_path / f"{how}.sqlite") as log:
            det = log.ensure_detector("d", "1", "toxicity", None, {})
            ids = log.text_ids([f"t{i}" for i in range(n)])
            log.add_score("t3", det, None, None, 1.0, "an error")   # replaced by the good score below
            log.add_score("t4", det, {"toxicity": 0.9}, 0.9, 1.0, None)  # kept: a good score stays
            rows = [(ids[f"t{i}"], det, '{"toxicity":0.1}', 0.1, 2.0, None if i % 7 else "boom", "now")
                    for i in range(n)]
            sql = "INSERT OR IGNORE INTO run_items (run_id, comment_id) VALUES (?, ?)"
            run = log.start_run("d", None, {})
            comments_ = log.add_comments_many("p", [CommentRow(f"k{i}", f"t{i}") for i in range(n)])
            with log.transaction():
                if how == "batch":
                    batch.write_rows(log, scores.UPSERT_SCORE, rows)
                    changed = batch.write_rows(log, sql, [(run, c) for c in [*comments_, *comments_[:9]]])
                else:
                    log.conn.executemany(scores.UPSERT_SCORE, rows)
                    changed = log.conn.executemany(sql, [(run, c) for c in [*comments_, *comments_[:9]]]).rowcount
            with pytest.raises(Exception) as wrong:  # a row of the wrong width fails as executemany's would
                with log.transaction():
                    batch.write_rows(log, sql, [(run, 1)] * 31 + [(run,)] + [(run, 1)] * 9)
            return changed, len(str(wrong.value)) > 0, log.conn.execute(
                "SELECT rowid, text_id, detector_id, labels_json, toxicity, latency_ms, error, created_at = 'now' "
                "FROM scores ORDER BY rowid").fetchall()

    assert written("batch") == written("executemany")


def test_new_rows_get_the_ids_sqlite_gave_them_or_none_when_one_was_left_out(tmp_path):
    """`records.batch.insert_new` with many rows to a statement (`write_rows`, texts' `INSERT OR
    IGNORE`): the ids the rows got, consecutive after the table's last; where a row was left out
    (its hash already there) or the one row was, None, so the caller reads the ids back by key."""
    from modlens.studylog.codec import text_hash
    from modlens.studylog.records import texts

    n = batch.ROWS_PER_STATEMENT * 2 + 3
    rows = [(text_hash(f"t{i}"), f"t{i}") for i in range(n)]
    with StudyLog(tmp_path / "t.sqlite") as log:
        assert log.text_ids(["before"]) == {"before": 1}
        with log.transaction():
            assert batch.insert_new(log, "texts", texts.INSERT_TEXT, rows[:-1]) == list(range(2, n + 1))
            assert batch.insert_new(log, "texts", texts.INSERT_TEXT, rows[5:]) is None  # t5.. are there
            assert batch.insert_new(log, "texts", texts.INSERT_TEXT, rows[:1]) is None  # one row, there already
        stored = log.conn.execute("SELECT text_id, text FROM texts ORDER BY text_id").fetchall()
        assert stored == [(1, "before"), *((i + 2, f"t{i}") for i in range(n))]
        assert log.text_ids([f"t{i}" for i in range(n)]) == {f"t{i}": i + 2 for i in range(n)}


def test_label_names_too_long_for_a_statement_go_row_by_row(tmp_path):
    """A hostile file's headers never make a statement's text: a label name or source longer than
    LABEL_LITERAL_MAX_CHARS, or names longer than LABEL_NAMES_MAX_CHARS in all, are bound row by row
    (the same rows as `add_labels`); a name at the bound is still written into the statement."""
    limit = comments.LABEL_LITERAL_MAX_CHARS
    at_bound, too_long = "a" * limit, "b" * (limit + 1)
    many = {f"{'c' * 200}{j:02d}": "v" for j in range(comments.LABEL_NAMES_MAX_CHARS // 200 + 1)}
    cases = {"at the bound": ("src", {at_bound: "x", "class": "y"}), "one too long": ("src", {too_long: "x", "class": "y"}),
             "many long names": ("src", many), "a long source": ("s" * (limit + 1), {"class": "y"})}
    for case, (source, labels) in cases.items():
        rows = [(cid, dict(labels)) for cid in range(1, comments.LABEL_RUN_MIN + 2)]
        with StudyLog(tmp_path / f"{len(source)}-{len(labels)}-{len(max(labels, key=len))}.sqlite") as log:
            log.add_comments_many("p", [CommentRow(f"k{i}", f"t{i}") for i in range(1, len(rows) + 1)])
            sql: list[str] = []  # the statements' text, before their parameters are bound
            write_many = log.write_many
            log.write_many = lambda statement, params, sql=sql, write_many=write_many: (  # type: ignore[method-assign]
                sql.append(statement) or write_many(statement, params))
            with log.transaction():
                log.add_labels_per_comment(source, rows)
            stored = log.conn.execute("SELECT rowid, * FROM labels ORDER BY rowid").fetchall()
        assert stored == [(i + 1, *row) for i, row in enumerate(
            (cid, n, v, source) for cid, named in rows for n, v in named.items())], case
        longest = max([*labels, source], key=len)
        assert any(longest in s for s in sql) == (case == "at the bound"), case
