"""SASS in full (the released file layouts, the per-category table with intervals in the
paper's order, filtered vs unfiltered, Perspective from recorded scores) and multi-class gold
(Davidson's three classes: the confusion table and per-class recall). The SASS files are built
here with the released column names; the repository does not ship SASS."""

import pytest

from modlens import paths
from modlens.analysis import labelled, sass
from modlens.analysis.data import load
from modlens.analysis.report import render_html, report_from_db
from modlens.analysis.sections.sass import SECTION as SASS_SECTION
from modlens.audit import AuditError, run_audit
from sass_release import as_released
from modlens.cli import main
from modlens.datasets.registry import load as load_dataset
from modlens.detectors.base import Detector
from csv_files import write_csv as write

# text, category, tag, human score (norm_human_toxicity_scores.csv `toxicity`),
# Perspective's score (toxicity_benchmark_scores.csv `toxicity_score`)
ROWS = [
    ("Do it or I tell everyone what you did.", "Blackmail", "Filtered", 0.9, 0.12),
    ("Pay me and your secret stays safe.", "Blackmail", "Unfiltered", 0.8, 0.61),
    ("Poor people choose to be poor.", "Classism", "Filtered", 0.7, 0.2),
    ("You're imagining things again.", "Gaslighting", "Unfiltered", 0.6, 0.1),
    ("You look too pretty to be an engineer.", "Sex. Harass.", "Filtered", 0.85, 0.3),
    ("Women just can't drive.", "Stereotyping", "Filtered", 0.75, 0.7),
    ("Their hair is long.", "Neutral", "Unfiltered", 0.0, 0.05),
    ("Nice weather today.", "Neutral", "Filtered", 0.05, 0.02),
    ("That wave was so freaking huge.", "False Positive", "Filtered", 0.1, 0.8),
    ("Oh great, another genius idea.", "Sarcasm", "Unfiltered", 0.4, 0.55),
]


class Marker(Detector):
    """Flags a text when it holds one of its words (so each category's recall is known)."""
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, words, name="marker"):
        self.name, self.version, self.words = name, "test-1", words

    def score(self, texts):
        return [{"toxicity": 0.9 if any(w in t for w in self.words) else 0.1} for t in texts]




def released(tmp_path):
    bench = write(tmp_path / "toxicity_benchmark_scores.csv", ["text", "category", "tag", "toxicity_score"],
                  [(t, c, tag, p) for t, c, tag, _, p in ROWS])
    human = write(tmp_path / "norm_human_toxicity_scores.csv", ["text", "category", "tag", "toxicity"],
                  [(t, c, tag, h) for t, c, tag, h, _ in ROWS])
    return bench, human


def test_released_layouts_are_recognized(tmp_path):
    bench, human = released(tmp_path)
    assert load_dataset(str(bench)).name.startswith("file-")  # SASS's layout, not its released bytes
    with as_released(bench, human):
        b, h = load_dataset(str(bench)), load_dataset(str(human))
    # named after its column: final_experiment_results.csv's perspective_avg_toxicity is `perspective`
    assert b.name == "sass" and b.recorded_scores == {"perspective-toxicity_score": [["text", "toxicity_score"]]}
    assert b.items[0].labels["perspective_recorded"] == "0.12" and "toxic" not in b.items[0].labels
    assert h.name == "sass" and [i.labels["toxic"] for i in h.items] == ["1" if r[3] > 0.5 else "0" for r in ROWS]
    assert h.gold == "toxicity > 0.5"
    # the paper's rule spelled out as a --label works on the same file
    g = load_dataset(str(human), label="toxicity>0.5")
    assert [i.labels["toxic"] for i in g.items] == [i.labels["toxic"] for i in h.items]
    # `toxicity` in a file whose columns are not the released human-score file's is no human score,
    # whatever the file's name says (the name decides nothing)
    other = write(tmp_path / "human_scores.csv", ["text", "category", "toxicity", "tag", "source"],
                  [(t, c, h, tag, "x") for t, c, tag, h, _ in ROWS])
    assert "human_score" not in load_dataset(str(other), "sass").items[0].labels


def test_recorded_on_a_file_without_scores_says_how_to_fix(tmp_path, capsys):
    _, human = released(tmp_path)
    with pytest.raises(AuditError, match="records no detector scores") as err:
        run_audit(str(human), db=tmp_path / "l.sqlite", detectors=["recorded"], progress=False)
    assert "--detectors" in err.value.fix
    assert main(["audit", str(human), "--db", str(tmp_path / "l.sqlite"), "--detectors", "recorded", "--quiet"]) != 0
    assert "fix:" in capsys.readouterr().err


def test_sass_per_category_table_with_perspective_from_recorded_scores(tmp_path):
    bench, human = released(tmp_path)
    db = tmp_path / "log.sqlite"
    with as_released(bench, human):  # the two files stand in for the release: one data set, scores per text
        run_audit(str(bench), db=db, detectors=["recorded"], progress=False)
        run_audit(str(human), db=db, detector_objects={"marker": Marker(["secret", "pretty", "wave"])},
                  progress=False, reader_options={"label": "toxicity>0.5"})
    section = sass.analyze(load(db))
    (s,) = section["sources"]
    assert s["source"] == "dataset:sass" and not s["categories_only"] and s["n_gold"] == len(ROWS)
    # the paper's order (Table 5), "Sex. Harass." read as Sexual Harassment, others after
    assert s["categories"] == ["Blackmail", "Classism", "Gaslighting", "Sarcasm", "Sexual Harassment",
                               "Stereotyping", "Neutral", "False Positive"]
    by = {d["detector"]: d for d in s["detectors"]}
    assert set(by) == {"marker", "perspective-toxicity_score"}
    gold = [r[3] > 0.5 for r in ROWS]
    persp = by["perspective-toxicity_score"]
    pred = [r[4] >= 0.5 for r in ROWS]
    tp = sum(p and g for p, g in zip(pred, gold))
    assert (persp["tp"], persp["fp"], persp["fn"]) == (tp, sum(p and not g for p, g in zip(pred, gold)),
                                                       sum(g and not p for p, g in zip(pred, gold)))
    cats = {c["category"]: c for c in by["marker"]["by_category"]}
    assert list(cats) == s["categories"]
    bm = cats["Blackmail"]
    assert bm["n"] == 2 and bm["positives"] == 2 and bm["metrics"]["recall"]["value"] == 0.5
    assert bm["metrics"]["recall"]["ci"] is not None and bm["flagged"] == 1
    assert cats["Sexual Harassment"]["metrics"]["recall"]["value"] == 1.0
    assert cats["Neutral"]["metrics"]["recall"]["value"] is None and cats["Neutral"]["flagged"] == 0
    # filtered vs unfiltered, overall and per category
    assert set(by["marker"]["by_split"]) == {"filtered", "unfiltered"}
    assert set(bm["splits"]) == {"filtered", "unfiltered"} and bm["splits"]["unfiltered"]["metrics"]["recall"]["value"] == 1
    html = SASS_SECTION.render(section)
    assert "categories only" not in html and "Blackmail" in html and "<svg" in html
    assert html.index("Blackmail") < html.index("Neutral") < html.index("False Positive")


def test_sass_categories_only_without_gold(tmp_path):
    bench, _ = released(tmp_path)
    db = tmp_path / "log.sqlite"
    with as_released(bench):
        run_audit(str(bench), db=db, detectors=["recorded"], progress=False)
    section = sass.analyze(load(db))
    (s,) = section["sources"]
    assert s["categories_only"] and s["detectors"][0]["detector"] == "perspective-toxicity_score"
    assert "categories only" in SASS_SECTION.render(section)


# --- multi-class gold ----------------------------------------------------------------------------

def test_davidson_three_classes_give_a_confusion_table_and_per_class_recall(tmp_path):
    f = tmp_path / "labeled_data.csv"
    rows = [(i, 3, 0, 0, 0, c, f"tweet {i} {'hate' if c == 0 else 'rude' if c == 1 else 'calm'}")
            for i, c in enumerate([0] * 10 + [1] * 20 + [2] * 30)]
    write(f, ["", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"], rows)
    db = tmp_path / "d.sqlite"
    run_audit(str(f), db=db, fmt="davidson", detector_objects={"m": Marker(["hate", "tweet 15 ", "tweet 45 "])},
              progress=False)
    out = labelled.analyze(load(db))
    (src,) = out["sources"]
    (d,) = src["detectors"]
    cls = d["classes"]
    assert cls["label"] == "class"
    table = {r["class"]: r for r in cls["rows"]}
    assert list(table) == ["hate_speech", "offensive_language", "neither"]
    assert (table["hate_speech"]["n"], table["hate_speech"]["toxic"]) == (10, 10)
    assert table["offensive_language"]["toxic"] == 1 and table["neither"]["toxic"] == 1
    assert table["hate_speech"]["recall"] == 1.0 and table["offensive_language"]["recall"] == pytest.approx(1 / 20)
    assert table["neither"]["gold"] == "0" and table["neither"]["recall"] is None
    assert table["neither"]["share_toxic"] == pytest.approx(1 / 30)
    html = render_html(report_from_db(db))
    assert "predicted toxic" in html and "offensive_language" in html


def test_binary_gold_has_no_class_table(tmp_path):
    f = write(tmp_path / "mine.csv", ["text", "toxic"], [(f"t {i} {'bad' if i % 2 else ''}", i % 2) for i in range(40)])
    db = tmp_path / "b.sqlite"
    run_audit(str(f), db=db, detector_objects={"m": Marker(["bad"])}, progress=False)
    (d,) = labelled.analyze(load(db))["sources"][0]["detectors"]
    assert d["classes"] is None


def test_shipped_davidson_keeps_its_classes(tmp_path):
    data = paths.shipped_data()
    db = tmp_path / "d.sqlite"
    run_audit(str(data / "davidson"), db=db, detector_objects={"m": Marker(["bitch", "nigg", "fag"])},
              progress=False, limit=600)
    (src,) = labelled.analyze(load(db))["sources"]
    rows = {r["class"]: r for r in src["detectors"][0]["classes"]["rows"]}
    assert set(rows) == {"hate_speech", "offensive_language", "neither"}
    assert sum(r["n"] for r in rows.values()) == src["n"] == 600


# --- the report frame ----------------------------------------------------------------------------

def test_header_names_only_what_the_log_holds_and_sections_are_numbered_from_one():
    from modlens.analysis.report import counts_line, numbered
    empty = {"comments": 0, "ratings": 0, "variants": 0, "platforms": {}}
    assert counts_line(empty) == "No comments, ratings or variants in this log."
    assert counts_line({**empty, "comments": 1, "platforms": {"youtube": 1}, "variants": 3}) == \
        "1 comment on youtube (1); 3 variants."
    assert numbered(["sass", "labelled", "fusion"]) == {"sass": "1. SASS categories",
                                                         "labelled": "2. Detectors on labelled data",
                                                         "fusion": "3. Semantic fusion (DUO): error finding rate"}
