"""SASS's Tables 3 and 5 in the report, from files shaped like the four released ones
(headers as released, texts and numbers written here: the released files have no licence), audited
into one log in any order; the gold label set chosen for what it holds; recorded detectors with
distinct names; docs/ANALYSIS.md's recipe run as written; the paper's printed numbers from the
released files when `MODLENS_SASS` names the folder holding them (`modlens data fetch sass` puts
them in `$MODLENS_HOME/data/sass`; else skipped: they have no licence, so no copy ships).

Oracles: scikit-learn and plain means over the CSV rows written here, and the paper's tables."""
from __future__ import annotations

import csv
import os
import re
import shlex
import sqlite3
import statistics
from pathlib import Path

import pytest

from modlens import paths
from modlens.analysis import sass_paper
from modlens.analysis.report import render_html, report_from_db
from modlens.audit import run_audit
from sass_release import as_released
from modlens.cli import main
from modlens.detectors.base import Detector

import sklearn.metrics as sklearn_metrics  # noqa: E402
from realtools import requires

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ANALYSIS.md"
RELEASED = Path(os.environ.get("MODLENS_SASS") or paths.fetched_data() / "sass")
FILES = ("full_toxicity_benchmark.tsv", "norm_human_toxicity_scores.csv", "toxicity_benchmark_scores.csv",
         "final_experiment_results.csv")
GPT = ("gpt-3-zero-shot", "gpt-3-one-shot", "gpt-3-few-shot")

# text, category, tag, human score, Perspective, GPT-3 zero / one / few-shot answers
ROWS = [
    ("Tell me or your boss hears about the photos.", "Blackmail", "filtered", 0.81, 0.12, 1, 0, 1),
    ("Keep paying and nobody learns your secret.", "Blackmail", "unfiltered", 0.64, 0.55, 0, 0, 1),
    ("People who rent will never amount to much.", "Classism", "filtered", 0.77, 0.21, 0, 0, 0),
    ("He only eats at fast food places, figures.", "Classism", "unfiltered", 0.58, 0.09, 0, 1, 1),
    ("Your kind does not belong at this table.", "Exclusionary", "filtered", 0.9, 0.62, 1, 1, 1),
    ("We only invite people who went to real schools.", "Exclusionary", "filtered", 0.71, 0.18, 0, 0, 1),
    ("You never said that, you are remembering wrong.", "Gaslighting", "filtered", 0.52, 0.05, 0, 0, 0),
    ("Nobody else thinks that happened, just you.", "Gaslighting", "unfiltered", 0.47, 0.07, 0, 0, 1),
    ("A woman running the lab? Bold choice.", "Misogyny", "filtered", 0.83, 0.33, 1, 0, 1),
    ("She got the promotion for her smile.", "Misogyny", "unfiltered", 0.79, 0.51, 0, 0, 0),
    ("Wow, what a genius plan, truly.", "Sarcasm", "filtered", 0.61, 0.44, 0, 0, 0),
    ("Sure, because that always works out.", "Sarcasm", "unfiltered", 0.39, 0.26, 0, 0, 1),
    ("That skirt would look better on my floor.", "Sexual Harassment", "filtered", 0.88, 0.29, 0, 0, 1),
    ("Smile more, you look prettier for me.", "Sexual Harassment", "unfiltered", 0.76, 0.14, 0, 0, 0),
    ("Of course he is good at math, look at him.", "Stereotyping", "filtered", 0.8, 0.36, 0, 0, 1),
    ("They all drive like that over there.", "Stereotyping", "unfiltered", 0.84, 0.48, 1, 0, 0),
    ("The train leaves at nine.", "Neutral", "filtered", 0.0, 0.03, 0, 0, 0),
    ("I planted tomatoes this spring.", "Neutral", "unfiltered", 0.02, 0.04, 0, 0, 1),
    ("Holy crap, you won the race!", "False Positive", "filtered", 0.06, 0.82, 0, 1, 1),
    ("Damn, that cake is good.", "False Positive", "unfiltered", 0.03, 0.71, 1, 0, 1),
]
BENCH_ONLY = [("Laughing at funerals is my cardio.", "Dark Humor", "filtered", 0.66)]  # in no other file


def _write(path: Path, header: list[str], rows: list[list[object]], delimiter: str = ",") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter=delimiter, lineterminator="\r\n" if delimiter == "\t" else "\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def write_released_shapes(folder: Path) -> dict[str, Path]:
    """The four files with the released headers (norm_human and the TSV spell "Sexual Harassment "
    with a trailing space, as released; the benchmark scores hold some texts and one of its own)."""
    def spaced(c: str) -> str:
        return c + " " if c == "Sexual Harassment" else c
    out = {
        "full_toxicity_benchmark.tsv": _write(folder / FILES[0], ["category", "tag", "text"],
                                              [[spaced(c), tag, t] for t, c, tag, *_ in ROWS], "\t"),
        "norm_human_toxicity_scores.csv": _write(folder / FILES[1], ["toxicity", "category", "tag", "text"],
                                                 [[h, spaced(c), tag, t] for t, c, tag, h, *_ in ROWS]),
        "toxicity_benchmark_scores.csv": _write(
            folder / FILES[2], ["", "category", "tag", "text", "toxicity_score", "identity_score", "insult_score",
                                "threat_score", "sex_score", "flirtation_score"],
            [[i, c, "filtered", t, p, 0.1, 0.1, 0.1, 0.1, 0.1]
             for i, (t, c, _, p) in enumerate([(r[0], r[1], r[2], r[4]) for r in ROWS[::2]] + BENCH_ONLY)]),
        "final_experiment_results.csv": _write(
            folder / FILES[3], ["category", "tag", "text", "human_toxicity", "binary_label", "perspective_avg_toxicity",
                                "gpt_zero_shot_mode", "gpt_one_shot_mode", "gpt_few_shot_mode",
                                "perspective_toxic_thresholded_0.5"],
            [[c, tag, t, h, int(h > 0.5), p, z, o, f, int(p > 0.5)] for t, c, tag, h, p, z, o, f in ROWS]),
    }
    return out


class Quiet(Detector):
    """A detector that scores every text 0.1 (stands in for the study's detectors, which cost minutes)."""
    name, version, labels, toxicity_label = "quiet", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": 0.1} for _ in texts]


def audit_all(files: dict[str, Path], order: list[str], db: Path) -> None:
    with as_released(*files.values()):  # the stand-ins are the release here (SASS's name is for its bytes)
        for name in order:
            run_audit(str(files[name]), db=db, detector_objects={"quiet": Quiet()}, progress=False)


def oracle_table3(rows: list[tuple]) -> dict[str, tuple[float, float, float]]:
    """Precision, recall, F1 per system by scikit-learn, from the rows as written (gold: human > 0.5;
    Perspective toxic at > 0.5 as the paper binarizes; GPT-3 answers as they are)."""
    gold = [int(r[3] > 0.5) for r in rows]
    preds = {"perspective": [int(r[4] > 0.5) for r in rows], **{g: [r[5 + i] for r in rows] for i, g in enumerate(GPT)}}
    out = {}
    for system, pred in preds.items():
        p, r, f, _ = sklearn_metrics.precision_recall_fscore_support(gold, pred, average="binary", zero_division=0)
        out[system] = (p, r, f)
    return out


def by_system(section: dict) -> dict[str, dict]:
    return {r["system"]: r for r in section["paper"]["table3"]}


def release_of(report: dict) -> dict:
    """The SASS section's block of the release (`dataset:sass`): the one compared with the paper."""
    (block,) = [b for b in report["sections"]["sass"]["sources"] if b["release"]]
    return block


ORDERS = [[f for f in FILES if f != last] + [last] for last in FILES] + [list(reversed(FILES))]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "last=" + o[-1].split(".")[0])
def test_four_files_in_any_order_keep_the_gold_and_give_table_3(tmp_path, order):
    """The defect: a categories-only file audited last made the report lose every P/R/F1."""
    files = write_released_shapes(tmp_path)
    db = tmp_path / "log.sqlite"
    audit_all(files, order, db)
    report = report_from_db(db)
    (s,) = report["sections"]["sass"]["sources"]
    assert s["release"] and not s["categories_only"] and s["n_gold"] == len(ROWS)
    want = oracle_table3(ROWS)
    got = by_system(s)
    assert set(got) == set(want)
    for system, (p, r, f) in want.items():
        cells = got[system]["cells"]
        assert got[system]["n"] == len(ROWS)
        assert cells["precision"]["ours"] == pytest.approx(p)
        assert cells["recall"]["ours"] == pytest.approx(r)
        assert cells["f1"]["ours"] == pytest.approx(f)
    (used,) = report["label_sets"]
    assert used["n"] == len(ROWS) and used["definition"] in ("toxicity > 0.5", "human_toxicity > 0.5")
    # a categories-only file audited last left a newer empty set: passed over, and the report says so
    if order[-1] in ("full_toxicity_benchmark.tsv", "toxicity_benchmark_scores.csv"):
        assert [e["definition"] for e in used["newer_empty"]] == ["none"]
        assert "newer set without labels passed over" in render_html(report)
    else:
        assert used["newer_empty"] == []


def test_table_5_per_category_beside_the_paper(tmp_path):
    files = write_released_shapes(tmp_path)
    db = tmp_path / "log.sqlite"
    audit_all(files, list(FILES), db)
    s = release_of(report_from_db(db))
    rows = {r["category"]: r for r in s["paper"]["table5"]["rows"]}
    assert list(rows) == list(sass_paper.TABLE_5)  # the paper's order
    assert s["paper"]["table5"]["columns"] == ["human", "perspective", *GPT]
    for category, row in rows.items():
        mine = [r for r in ROWS if r[1] == category]
        assert row["n"] == len(mine)
        want = {"human": statistics.mean(r[3] for r in mine), "perspective": statistics.mean(r[4] for r in mine),
                **{g: statistics.mean(r[5 + i] for r in mine) for i, g in enumerate(GPT)}}
        for col, value in want.items():
            cell = row["cells"][col]
            assert cell["ours"] == pytest.approx(100 * value)
            assert cell["printed"] == sass_paper.TABLE_5[category][sass_paper.TABLE_5_COLUMNS.index(col)]
            assert cell["diff"] == pytest.approx(100 * value - float(cell["printed"]))
            # differs exactly when ours, rounded to the paper's printed digits, is another number
            digits = len(cell["printed"].partition(".")[2])
            assert cell["differs"] == (round(100 * value, digits) != float(cell["printed"]))
        # the category's F1 by scikit-learn (Perspective toxic at ≥ 0.5: no score is 0.5); undefined
        # (None) where there is neither a gold positive nor a flagged text (Neutral here)
        gold, pred = [int(r[3] > 0.5) for r in mine], [int(r[4] >= 0.5) for r in mine]
        if any(gold) or any(pred):
            assert row["f1"]["perspective"] == pytest.approx(sklearn_metrics.f1_score(gold, pred, zero_division=0))
        else:
            assert row["f1"]["perspective"] is None
    html = render_html(report_from_db(db))
    assert "The paper&#x27;s Table 3" in html or "The paper's Table 3" in html
    assert "(paper 80.9%)" in html and "⚠" in html


def test_recorded_detectors_have_distinct_names(tmp_path):
    """Both files that record Perspective, audited with --detectors recorded: two clearly named detectors."""
    files = write_released_shapes(tmp_path)
    db = tmp_path / "log.sqlite"
    with as_released(*files.values()):
        for name in ("toxicity_benchmark_scores.csv", "final_experiment_results.csv"):
            run_audit(str(files[name]), db=db, detectors=["recorded"], progress=False)
    with sqlite3.connect(db) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM detectors")]
    assert sorted(names) == sorted(["perspective-toxicity_score", "perspective", *GPT])
    s = release_of(report_from_db(db))
    # Table 3's Perspective row is the detector that scored every gold text (perspective_avg_toxicity)
    assert by_system(s)["perspective"]["detector"] == "perspective"
    want = oracle_table3(ROWS)
    for system, values in want.items():
        assert [by_system(s)[system]["cells"][m]["ours"] for m in ("precision", "recall", "f1")] == pytest.approx(values)


def recipe() -> list[list[str]]:
    """The SASS recipe's commands as docs/ANALYSIS.md prints them."""
    text = DOCS.read_text(encoding="utf-8")
    block = re.search(r"<!-- recipe: sass[^>]*-->\n```\n(.*?)```", text, re.S)
    assert block, "docs/ANALYSIS.md has no SASS recipe block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def run_recipe(folder: Path, work: Path) -> dict:
    """Each recipe line through the CLI, file names resolved in `folder`, outputs in `work`."""
    import json
    commands = recipe()
    assert [c[:2] for c in commands] == [["modlens", "audit"]] * 4 + [["modlens", "report"]]
    assert sorted(c[2] for c in commands[:4]) == sorted(FILES)
    for argv in commands:
        args = [str(folder / a) if a in FILES else str(work / a) if a in ("sass.sqlite", "sass.json") else a
                for a in argv[1:]]
        if args[0] == "audit":
            args.append("--quiet")
        assert main(args) == 0, argv
    return json.loads((work / "sass.json").read_text(encoding="utf-8"))


def test_the_documented_recipe_gives_every_sass_figure(tmp_path):
    files = write_released_shapes(tmp_path)
    with as_released(*files.values()):  # the stand-ins are the release here
        s = release_of(run_recipe(tmp_path, tmp_path))
    want = oracle_table3(ROWS)
    for system, values in want.items():
        assert [by_system(s)[system]["cells"][m]["ours"] for m in ("precision", "recall", "f1")] == pytest.approx(values)
    assert {d["detector"] for d in s["detectors"]} >= {"perspective", *GPT, "profanity-check"}
    del files


@requires("sass-release")
def test_released_files_give_the_papers_table_3_and_table_5(tmp_path):
    """The recipe on the released files, checked against the paper's printed Table 3 and Table 5."""
    s = release_of(run_recipe(RELEASED, tmp_path))
    t3 = by_system(s)
    paper3 = {"perspective": (0.26, 0.05, 0.08), "gpt-3-zero-shot": (0.83, 0.19, 0.31),
              "gpt-3-one-shot": (0.77, 0.11, 0.19), "gpt-3-few-shot": (0.73, 0.52, 0.61)}
    for system, values in paper3.items():
        assert t3[system]["n"] == 250
        for metric, value in zip(("precision", "recall", "f1"), values):
            assert t3[system]["cells"][metric]["ours"] == pytest.approx(value, abs=0.01), (system, metric)
            assert not t3[system]["cells"][metric]["differs"]
    assert s["share_toxic"] == pytest.approx(0.724, abs=0.001)
    t5 = {r["category"]: r["cells"] for r in s["paper"]["table5"]["rows"]}
    assert t5["Sexual Harassment"]["perspective"]["ours"] == pytest.approx(21.9, abs=1)
    assert t5["Sexual Harassment"]["human"]["ours"] == pytest.approx(80, abs=1)
    # False Positive: the file's 25 texts give 79.7%, the paper's 24 gave 80.9%; the report says both
    fp = t5["False Positive"]["perspective"]
    with open(RELEASED / "final_experiment_results.csv", encoding="utf-8", newline="") as fh:
        released = list(csv.DictReader(fh))
    fp_scores = [float(r["perspective_avg_toxicity"]) for r in released if r["category"] == "False Positive"]
    assert fp["ours"] == pytest.approx(100 * statistics.mean(fp_scores))
    assert fp["printed"] == "80.9" and fp["differs"] and fp["diff"] == pytest.approx(-1.2, abs=0.05)
    assert any("False Positive row averages 24 texts" in n for n in s["paper"]["notes"])
    # the note's claim holds: leaving one text out gives the paper's figure
    assert any(round(100 * statistics.mean(fp_scores[:i] + fp_scores[i + 1:]), 1) == 80.9 for i in range(len(fp_scores)))
    # the rows the paper averaged over 25 texts agree with it for the human and Perspective means
    for category in set(sass_paper.TABLE_5) - set(sass_paper.SHORT_ROWS):
        assert not t5[category]["human"]["differs"] and not t5[category]["perspective"]["differs"], category


# another study's data in SASS's layout: its own texts, categories and numbers (not the release)
OTHER = [("Pay up or the pictures go online.", "Blackmail", "filtered", 0.95, 0.9, 1, 1, 1),
         ("Folks from that town can't read.", "Classism", "filtered", 0.2, 0.8, 1, 1, 1),
         ("Lovely morning for a run.", "Neutral", "unfiltered", 0.9, 0.95, 1, 1, 1)]


def write_other_study(path: Path) -> Path:
    """A file with final_experiment_results.csv's header and rows of its own: SASS's layout, not its bytes."""
    return _write(path, ["category", "tag", "text", "human_toxicity", "binary_label", "perspective_avg_toxicity",
                         "gpt_zero_shot_mode", "gpt_one_shot_mode", "gpt_few_shot_mode",
                         "perspective_toxic_thresholded_0.5"],
                  [[c, tag, t, h, int(h > 0.5), p, z, o, f, int(p > 0.5)] for t, c, tag, h, p, z, o, f in OTHER])


def test_a_sass_layout_file_that_is_not_the_release_is_not_compared_with_the_paper(tmp_path):
    """The defect: the section took every comment with a category and a human score, whatever its
    data set, so another study's file in SASS's layout (named file-DIGEST) was pooled with the release
    and set beside the paper's Tables 3 and 5 as SASS. Its rows are reported as their own source,
    without the paper's figures, and the release's figures are the release's rows alone."""
    files = write_released_shapes(tmp_path)
    db = tmp_path / "log.sqlite"
    audit_all(files, list(FILES), db)
    (tmp_path / "other").mkdir()
    other_file = write_other_study(tmp_path / "other" / "final_experiment_results.csv")
    run_audit(str(other_file), db=db, detector_objects={"quiet": Quiet()}, progress=False)
    report = report_from_db(db)
    s = report["sections"]["sass"]
    by_source = {b["source"]: b for b in s["sources"]}
    other = next(src for src in by_source if src != "dataset:sass")
    assert other.startswith("dataset:file-")
    release = by_source["dataset:sass"]
    assert release["release"] and release["n_gold"] == len(ROWS)
    want = oracle_table3(ROWS)  # the release's rows alone, as before the other file was audited
    for system, values in want.items():
        assert by_system(release)[system]["n"] == len(ROWS)
        assert [by_system(release)[system]["cells"][m]["ours"] for m in ("precision", "recall", "f1")] \
            == pytest.approx(values)
    assert {r["category"]: r["n"] for r in release["paper"]["table5"]["rows"]}["Neutral"] == 2
    # the other file: its own figures (GPT-3 and Perspective from its own columns), never the paper's
    mine = by_source[other]
    assert not mine["release"] and mine["paper"] is None and mine["n_gold"] == len(OTHER)
    persp = {d["detector"]: d for d in mine["detectors"]}["perspective"]
    assert persp["n"] == len(OTHER) and persp["tp"] == 2 and persp["fp"] == 1
    html = render_html(report)
    assert html.count("Table 3: binary classification") == 1
    assert f"{other.removeprefix('dataset:')}" in html and "not the SASS release" in html


def test_only_another_studys_sass_layout_file_gets_no_paper_table(tmp_path):
    """Without the release in the log, nothing is set beside the paper (before: Table 3 and 5 of its rows)."""
    f = write_other_study(tmp_path / "final_experiment_results.csv")
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"quiet": Quiet()}, progress=False)
    report = report_from_db(db)
    (block,) = report["sections"]["sass"]["sources"]
    assert block["source"].startswith("dataset:file-") and not block["release"] and block["paper"] is None
    html = render_html(report)
    assert "Table 3: binary classification" not in html and "(paper " not in html
    assert "not the SASS release" in html
