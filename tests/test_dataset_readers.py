"""Dataset readers on files nobody prepared for modlens: layout detection with its note, SASS's
released column names, gold labels from `--label`, only recognized columns stored, Parquet, and
streaming (a file is consumed chunk by chunk, `--limit` stops reading)."""
import json
import sqlite3

import pytest
from sklearn.metrics import f1_score

from modlens.audit import AuditError, run_audit
from modlens.cli import main
from modlens.datasets import registry
from modlens.datasets.base import DatasetError
from modlens.datasets.gold import GoldSpec
from modlens.detectors.base import Detector


class LengthDetector(Detector):
    """Deterministic: longer texts look more toxic."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


def labels_in_log(db, name):
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT value FROM labels WHERE name = ? ORDER BY comment_id", (name,))]
    finally:
        con.close()


def gold_in_log(db):
    """(definition, [value, ...]) of the log's one gold label set."""
    con = sqlite3.connect(db)
    try:
        (set_id, definition), = con.execute("SELECT label_set_id, definition FROM label_sets").fetchall()
        return definition, [r[0] for r in con.execute("SELECT value FROM gold_labels WHERE label_set_id = ? "
                                                      "ORDER BY comment_id", (set_id,))]
    finally:
        con.close()


def count(db, table):
    con = sqlite3.connect(db)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


# --- SASS as released ------------------------------------------------------------------------
SASS_ROWS = [  # text, category, tag, human_toxicity, perspective_avg_toxicity
    ("You look too pretty to be an engineer.", "Sexual Harassment", "filtered", 0.81, 0.21),
    ("Their hair is long.", "Neutral", "unfiltered", 0.02, 0.05),
    ("Women just can't drive.", "Stereotyping", "filtered", 0.74, 0.62),
    ("Poor people choose to be poor.", "Classism", "filtered", 0.66, 0.31),
    ("You're imagining things again.", "Gaslighting", "unfiltered", 0.58, 0.08),
    ("Oh great, another genius idea.", "Sarcasm", "unfiltered", 0.41, 0.55),
    ("Nice weather today.", "Neutral", "filtered", 0.01, 0.02),
    ("Do it or I tell everyone.", "Blackmail", "filtered", 0.9, 0.48),
]


def write_sass(path, rows=SASS_ROWS, sep=","):
    lines = [sep.join(["text", "category", "tag", "human_toxicity", "perspective_avg_toxicity"])]
    lines += [sep.join(f'"{t}"' if sep == "," else t for t in (text, cat, tag, str(h), str(p)))
              for text, cat, tag, h, p in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_released_sass_columns_are_detected_without_format(tmp_path, capsys):
    f = write_sass(tmp_path / "data.csv")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "recorded"]) == 0
    out = capsys.readouterr()
    assert "modlens audit: read data.csv as sass (columns human_toxicity, perspective_avg_toxicity, tag, category)" \
        in out.err
    result = json.loads(out.out)
    assert result["format"] == "sass" and result["n_items"] == 8 and "perspective" in result["detectors"]
    d = registry.load(str(f))
    assert [i.labels["filtered"] for i in d.items[:2]] == ["filtered", "unfiltered"]
    assert [i.labels["toxic"] for i in d.items] == ["1" if h > 0.5 else "0" for *_, h, _ in SASS_ROWS]
    assert d.items[0].labels["human_score"] == "0.81" and d.items[0].labels["perspective_recorded"] == "0.21"


def test_sass_perspective_f1_is_reproducible_from_the_recorded_scores(tmp_path, capsys):
    """The report's Perspective F1 is sklearn's F1 of (perspective_avg_toxicity >= 0.5) against
    (human_toxicity > 0.5); `recorded` is the same detector, version included, as the explicit
    cached spec."""
    f = write_sass(tmp_path / "sass.tsv", sep="\t")
    db1, db2 = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    r1 = run_audit(str(f), db=db1, detectors=["recorded"], progress=False)
    r2 = run_audit(str(f), db=db2, detectors=[f"cached:{f}:text=perspective_avg_toxicity:perspective"], progress=False)
    assert r1.detectors == r2.detectors and r1.format == "sass"
    capsys.readouterr()
    assert main(["report", "--db", str(db1), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (block,) = report["sections"]["sass"]["sources"]
    (det,) = block["detectors"]
    gold = [h > 0.5 for *_, h, _ in SASS_ROWS]
    pred = [p >= 0.5 for *_, p in SASS_ROWS]
    assert det["detector"] == "perspective" and det["f1"] == pytest.approx(f1_score(gold, pred))


def test_sass_tsv_without_human_scores_is_categories_only(tmp_path, capsys):
    f = tmp_path / "sass_categories.tsv"
    f.write_text("text\tcategory\ttag\nYou look too pretty.\tSexual Harassment\tfiltered\n"
                 "Nice day.\tNeutral\tunfiltered\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check"]) == 0
    err = capsys.readouterr().err
    assert "as sass (columns tag, category; no human scores: categories only)" in err
    assert "categories only" in err.split("\n")[1]
    assert labels_in_log(db, "category") == ["Sexual Harassment", "Neutral"]
    assert labels_in_log(db, "toxic") == [] and labels_in_log(db, "human_score") == []


def test_sass_human_score_outside_unit_range_is_an_error(tmp_path):
    f = write_sass(tmp_path / "s.csv", [("a", "Neutral", "filtered", 7.0, 0.1)])
    with pytest.raises(DatasetError, match=r"row 2: human_toxicity = 7 is outside \[0, 1\]") as err:
        registry.load(str(f))
    assert err.value.fix is not None and err.value.fix.startswith("rescale the column")


def test_recorded_needs_a_file_that_records_scores(tmp_path):
    f = tmp_path / "plain.csv"
    f.write_text("text,toxic\nhello,0\n")
    with pytest.raises(AuditError, match="records no detector scores"):
        run_audit(str(f), db=tmp_path / "l.sqlite", detectors=["recorded"], progress=False)
    with pytest.raises(AuditError, match="records scores of perspective only"):
        run_audit(str(write_sass(tmp_path / "s.csv")), db=tmp_path / "l.sqlite", detectors=["recorded:google"],
                  progress=False)


def test_noisyhate_recorded_perspective_matches_table4(data_dir, tmp_path):
    db = tmp_path / "nh.sqlite"
    run_audit("noisyhate", db=db, detectors=["recorded"], progress=False)
    from modlens.analysis.report import report_from_db

    (det,) = report_from_db(db)["sections"]["robustness"]["detectors"]
    row = next(r for r in det["rows"] if r["type"] == "all")
    assert det["detector"] == "perspective" and round(row["acc_clean"], 3) == 0.816


# --- detection of every built-in layout ------------------------------------------------------
@pytest.mark.parametrize("header, fmt, why", [
    ("clean,perturbed,position,clean_word,perturbed_word,types", "noisyhate", "columns clean, perturbed, perturbed_word"),
    ("case_id,functionality,test_case,label_gold", "hatecheck", "columns case_id, test_case, label_gold"),
    ("id,count,class,tweet", "davidson", "columns tweet, class"),
    ("Text,Category,Human", "sass", "columns Human, Category"),
    ("text,category,rater_1,rater_2", "sass", "columns rater_1, rater_2, category"),
    ("comment_text,toxic,platform", "csv", "text column comment_text"),
    ("body,score", "csv", "no built-in layout's columns"),
])
def test_detect_names_the_layout_and_the_columns_that_gave_it_away(tmp_path, header, fmt, why):
    f = tmp_path / "f.csv"
    f.write_text(header + "\n")
    got_fmt, got_why = registry.detect(f)
    assert got_fmt == fmt and got_why.startswith(why)


def test_detection_reads_only_the_header(tmp_path):
    """A file whose second line is not even valid for its layout is still detected from the header."""
    f = tmp_path / "big.jsonl"
    f.write_text('{"text": "a", "toxic": 1}\n{broken\n')
    assert registry.detect(f)[0] == "jsonl"
    with pytest.raises(DatasetError, match="big.jsonl:2: not valid JSON"):
        list(registry.load(str(f)).iter_items())


def test_shipped_layouts_get_a_note(data_dir):
    for name, fmt in (("noisyhate", "noisyhate"), ("hatecheck", "hatecheck")):
        d = registry.load(str(data_dir / registry.SHORTHANDS[name]))
        assert d.format == fmt and d.notes[0].startswith(f"read {d.path.name} as {fmt} (columns")
    assert registry.load("davidson").notes[0] == "read labeled_data.csv as davidson (shorthand davidson)"


# --- gold labels -----------------------------------------------------------------------------
def test_label_spec_forms():
    assert GoldSpec.parse("toxic").value("Yes", "r") == "1" and GoldSpec.parse("toxic").value("neither", "r") == "0"
    assert GoldSpec.parse("toxic").value("", "r") is None
    cls = GoldSpec.parse("class=0,1")
    assert [cls.value(v, "r") for v in ("0", "1", "2", 1.0, 2)] == ["1", "1", "0", "1", "0"]
    assert GoldSpec.parse("label=hateful").value("non-hateful", "r") == "0"
    assert [GoldSpec.parse("toxicity>=0.5").value(v, "r") for v in ("0.5", 0.49, "0.9")] == ["1", "0", "1"]
    assert GoldSpec.parse("none").column == ""
    with pytest.raises(DatasetError, match=r"row 7: toxic = 'maybe' is neither") as err:
        GoldSpec.parse("toxic").value("maybe", "row 7")
    assert err.value.fix is not None and err.value.fix.startswith("--label toxic=VALUE")


def test_a_recognized_label_column_is_the_gold_label_and_other_columns_are_not_stored(tmp_path, capsys):
    f = tmp_path / "comments.csv"
    f.write_text("id,text,label,platform,target,likes,created\n"
                 "a1,you idiot,toxic,reddit,women,5,2020\nb2,hello there,non-toxic,youtube,,0,2021\n")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check"]) == 0
    err = capsys.readouterr().err
    assert "read comments.csv as csv (text column text" in err
    assert "gold label recognized: toxic = label" in err
    assert "labels stored: toxic, label, platform, target, id; other columns are not stored" in err
    con = sqlite3.connect(db)
    stored = {n for (n,) in con.execute("SELECT DISTINCT name FROM labels")}
    assert stored == {"label", "platform", "target", "id"}  # not likes, created; `toxic` is a gold label
    assert gold_in_log(db) == ("label (1/true/yes/toxic/hateful… vs 0/false/no/neither…)", ["1", "0"])
    assert labels_in_log(db, "target") == ["women"]
    # --label-cols adds columns; '*' keeps every one
    d = registry.load(str(f), label_cols=["likes"])
    assert d.items[0].labels["likes"] == "5" and "created" not in d.items[0].labels
    assert set(registry.load(str(f), label_cols=["*"]).items[0].labels) == {
        "toxic", "label", "platform", "target", "id", "likes", "created"}


def test_label_option_maps_any_column(tmp_path, capsys):
    f = tmp_path / "d.jsonl"
    f.write_text('{"text": "a", "class": 0}\n{"text": "b", "class": 1}\n{"text": "c", "class": 2}\n')
    assert [i.labels["toxic"] for i in registry.load(str(f), label="class=0,1").items] == ["1", "1", "0"]
    with pytest.raises(DatasetError, match=r"row 3: class = 2 is neither a toxic value") as err:
        list(registry.load(str(f)).iter_items())  # recognized column `class`, but 2 is not in the vocabulary
    assert err.value.fix is not None and "--label class=VALUE" in err.value.fix
    assert "toxic" not in registry.load(str(f), label="none").items[0].labels
    with pytest.raises(DatasetError, match="missing column.*nope"):
        registry.load(str(f), label="nope")
    db = tmp_path / "l.sqlite"
    assert main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check",
                 "--label", "class=0"]) == 0
    assert "gold label: toxic = class in {0}" in capsys.readouterr().err
    assert gold_in_log(db) == ("class in {0}", ["1", "0", "0"])


def test_davidson_keeps_its_own_gold_label_and_takes_label_for_hate_only(data_dir):
    d = registry.load("davidson")
    assert sum(i.labels["toxic"] == "1" for i in d.iter_items()) == 1430 + 19190
    hate_only = registry.load("davidson", label="class=0")
    assert sum(i.labels["toxic"] == "1" for i in hate_only.iter_items()) == 1430
    assert "gold label: toxic = class in {0}" in hate_only.notes


def test_hatecheck_label_option_and_noisyhate_refusal(data_dir):
    hc = registry.load("hatecheck", label="label_gold=hateful")
    assert sum(i.labels["toxic"] == "1" for i in hc.items) == sum(i.labels["label_gold"] == "hateful" for i in hc.items)
    with pytest.raises(DatasetError, match="NoisyHate declares its gold label"):
        registry.load("noisyhate", label="toxic")


# --- Parquet ---------------------------------------------------------------------------------
def test_parquet_is_read_in_batches_with_only_the_needed_columns(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 10_000
    table = pa.table({"text": [f"comment {i}" for i in range(n)], "toxicity": [(i % 10) / 10 for i in range(n)],
                      "identity": ["muslim" if i % 3 == 0 else None for i in range(n)],
                      "funny": [0.0] * n})
    f = tmp_path / "civil.parquet"
    pq.write_table(table, f, row_group_size=n)  # one row group: batching is the reader's doing
    d = registry.load(str(f), label="toxicity>=0.5")
    assert d.format == "parquet" and d.size == n
    first = d.items[:3]
    assert [i.labels for i in first] == [{"toxic": "0", "toxicity": 0.0, "identity": "muslim"},
                                         {"toxic": "0", "toxicity": 0.1}, {"toxic": "0", "toxicity": 0.2}]
    assert sum(i.labels["toxic"] == "1" for i in d.items) == n // 2
    db = tmp_path / "l.sqlite"
    assert main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check", "--limit", "50",
                 "--label", "toxicity>=0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["n_items"] == 50 and count(db, "comments") == 50


# --- streaming -------------------------------------------------------------------------------
def write_big_csv(path, n, bad_row=None):
    """n rows; row `bad_row` (1-based) has a gold label no vocabulary knows."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("text,toxic\n")
        for i in range(1, n + 1):
            fh.write(f"comment number {i},{'maybe' if i == bad_row else i % 2}\n")
    return path


def test_a_large_csv_is_consumed_chunk_by_chunk(tmp_path):
    """The reader yields its first item without reading the file (a bad last row is not met), the
    audit logs chunk after chunk before meeting it. The fixed file is a source of its own (items are keyed
    by the file's content hash when it has no id column), and none of its texts already in the log is scored
    again."""
    n = 20_000
    f = write_big_csv(tmp_path / "big.csv", n, bad_row=n)
    d = registry.load(str(f))
    stream = d.iter_items()
    assert next(stream).text == "comment number 1"
    stream.close()
    db = tmp_path / "log.sqlite"
    with pytest.raises(AuditError, match=rf"big.csv: row {n}: toxic = 'maybe'.*19968 items before it are in the log"):
        run_audit(str(f), db=db, detector_objects={"len": LengthDetector()}, chunk_size=128, progress=False)
    assert count(db, "run_items") == 19_968  # every full chunk before the bad row
    write_big_csv(f, n)  # fixed: rows are keyed by the file's content, so the new version is a source of its own
    again = run_audit(str(f), db=db, detector_objects={"len": LengthDetector()}, chunk_size=128, progress=False)
    assert not again.resumed and again.n_items == n and count(db, "comments") == n + 19_968
    assert again.n_scored == n - 19_968  # the texts logged before the fix are not scored again


def test_limit_stops_reading_early(tmp_path):
    f = write_big_csv(tmp_path / "big.csv", 5_000, bad_row=4_000)
    chunks = []
    res = run_audit(str(f), db=tmp_path / "l.sqlite", detector_objects={"len": LengthDetector()}, limit=300,
                    chunk_size=100, progress=False, on_chunk=chunks.append)
    assert res.n_items == 300 and chunks == [100, 200, 300]  # the bad row 4000 was never read


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_reading_a_large_file_does_not_hold_it_in_memory(tmp_path, suffix):
    """Peak memory while streaming a ~16 MB file stays far below its size (a reader that loads the
    file, as before, peaks above it)."""
    import tracemalloc

    f = tmp_path / f"big{suffix}"
    filler = "x" * 500
    with open(f, "w", encoding="utf-8") as fh:
        if suffix == ".csv":
            fh.write("text,toxic,platform\n")
            fh.writelines(f"comment {i} {filler},{i % 2},site{i % 7}\n" for i in range(30_000))
        else:
            fh.writelines(json.dumps({"text": f"comment {i} {filler}", "toxic": i % 2, "platform": f"site{i % 7}"}) + "\n"
                          for i in range(30_000))
    size = f.stat().st_size
    tracemalloc.start()
    try:
        n = n_toxic = 0
        for item in registry.load(str(f)).iter_items():
            n += 1
            n_toxic += item.labels["toxic"] in ("1", 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 30_000 and n_toxic == 15_000 and size > 15_000_000
    assert peak < size / 8, f"peak {peak} bytes while reading a {size}-byte file"


# --- files as researchers have them ----------------------------------------------------------
def audit_cli(f, db, *extra):
    return main(["audit", str(f), "--db", str(db), "--quiet", "--detectors", "profanity-check", *extra])


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark; before, the first column was '\\ufefftext'."""
    f = tmp_path / "excel.csv"
    f.write_bytes("text,label\nyou idiot,1\nhello there,0\n".encode("utf-8-sig"))
    d = registry.load(str(f))
    assert [i.text for i in d.items] == ["you idiot", "hello there"] and d.items[0].labels["toxic"] == "1"
    assert "encoding utf-8 (byte-order mark)" in d.notes


def test_latin1_needs_a_declared_encoding_and_the_error_names_the_file_and_the_fix(tmp_path, capsys):
    f = tmp_path / "windows.csv"
    f.write_bytes("text,label\nhello,0\ncaf\u00e9 idiot,1\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"windows.csv: line 3: not UTF-8 text \(byte 0xe9\)$") as err:
        registry.load(str(f))
    assert err.value.fix is not None and err.value.fix.startswith("--encoding cp1252")
    d = registry.load(str(f), encoding="latin-1")
    assert [i.text for i in d.items] == ["hello", "caf\u00e9 idiot"] and "encoding latin-1 (--encoding)" in d.notes
    db = tmp_path / "l.sqlite"
    assert audit_cli(f, db) == 2
    err = capsys.readouterr().err
    assert "windows.csv: line 3: not UTF-8 text" in err and "fix: --encoding cp1252" in err
    assert audit_cli(f, db, "--encoding", "latin-1") == 0 and count(db, "comments") == 2


def test_a_non_utf8_byte_far_down_the_file_names_its_line(tmp_path):
    f = tmp_path / "late.csv"
    f.write_bytes(b"text,label\n" + b"".join(b"row %d,0\n" % i for i in range(9000)) + b"caf\xe9,1\n")
    with pytest.raises(DatasetError, match=r"late.csv: line 9002: not utf-8 text") as err:
        list(registry.load(str(f)).iter_items())
    assert err.value.fix is not None and "--encoding" in err.value.fix


def test_semicolon_separated_files_are_sniffed(tmp_path):
    f = tmp_path / "european.csv"
    f.write_text('text;label\nyou idiot;1\n"hello, there";0\n', encoding="utf-8")
    d = registry.load(str(f))
    assert [(i.text, i.labels["toxic"]) for i in d.items] == [("you idiot", "1"), ("hello, there", "0")]
    assert any(n.startswith("delimiter ';'") for n in d.notes)


def test_an_unterminated_quote_is_an_error_with_its_line(tmp_path, capsys):
    f = tmp_path / "broken.csv"
    f.write_text('text,label\nhello,0\n"you idiot,1\nthird,0\nfourth,1\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"broken.csv: line 3: a quote opened here is never closed$") as err:
        list(registry.load(str(f)).iter_items())
    assert err.value.fix is not None and err.value.fix.startswith("close the quote")
    assert audit_cli(f, tmp_path / "l.sqlite") == 2
    assert "broken.csv: line 3: a quote opened here is never closed" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "text,label\n", "text,label"])
def test_empty_and_header_only_files_are_the_same_error(tmp_path, capsys, content):
    f = tmp_path / "nothing.csv"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=r"nothing.csv: no rows to read ") as err:
        registry.load(str(f))
    assert err.value.fix is not None and err.value.fix.startswith("give a file with a header")
    assert audit_cli(f, tmp_path / "l.sqlite") == 2
    assert "nothing.csv: no rows to read" in capsys.readouterr().err


@pytest.mark.parametrize("data, what", [(b"\x00\x01\x02text\x00" * 50, "a binary file"),
                                        (b"PK\x03\x04" + b"\x00" * 100, "a ZIP archive"),
                                        (b"PAR1" + b"\x00" * 100, "a Parquet file")])
def test_binary_files_are_refused_with_their_name(tmp_path, capsys, data, what):
    f = tmp_path / "data.csv"
    f.write_bytes(data)
    with pytest.raises(DatasetError, match=rf"data.csv: {what}") as err:
        registry.load(str(f))
    assert err.value.fix and "fix:" not in str(err.value)
    assert audit_cli(f, tmp_path / "l.sqlite") == 2
    err = capsys.readouterr().err
    assert f"data.csv: {what}" in err and "fix:" in err and "codec" not in err


def test_davidson_tweets_are_html_unescaped_and_the_step_is_recorded(tmp_path):
    f = tmp_path / "labeled_data.csv"
    f.write_text(',count,hate_speech,offensive_language,neither,class,tweet\n'
                 '0,3,0,3,0,1,"&#8220;@user: you &amp; your ugly face &#128557;&#8221;"\n'
                 '1,3,0,0,3,2,plain tweet\n', encoding="utf-8")
    d = registry.load(str(f))
    assert d.format == "davidson" and d.text_steps == ["html_unescape"]
    assert [i.text for i in d.items] == ["\u201c@user: you & your ugly face \U0001f62d\u201d", "plain tweet"]
    raw = registry.load(str(f), html_unescape=False)
    assert raw.items[0].text.startswith("&#8220;@user") and raw.text_steps == []
    db = tmp_path / "l.sqlite"
    res = run_audit(str(f), db=db, detector_objects={"len": LengthDetector()}, progress=False)
    con = sqlite3.connect(db)
    (source, normalizer, result, edits), = con.execute(
        "SELECT st.text, n.normalizer, rt.text, n.edits_json FROM normalizations n "
        "JOIN texts st ON st.text_id = n.source_text_id JOIN texts rt ON rt.text_id = n.result_text_id").fetchall()
    assert source.startswith("&#8220;@user") and normalizer == "html_unescape" and result == d.items[0].text
    assert {e["step"] for e in json.loads(edits)} == {"html_unescape"}
    # the detectors scored the decoded text, and the run says which steps read it
    scored = {t for (t,) in con.execute("SELECT t.text FROM scores s JOIN texts t ON t.text_id = s.text_id")}
    assert d.items[0].text in scored and source not in scored
    (params,) = con.execute("SELECT params_json FROM audit_runs WHERE run_id = ?", (res.run_id,)).fetchone()
    assert json.loads(params)["text_steps"] == ["html_unescape"]
