"""Item sets, assignments and crowd imports without a daemon (issue 27): `modlens sample` by deciles
and by label, seeded; `study assign` reproducible and checked by `study check`; a Potato project
exported and its annotation output (files built here, in the shape Potato 2.12.1 writes them) imported; refused
answers import nothing; the Table 11 decisions of `modlens rate`. The end-to-end design with real
processes is tests/test_itemset_study.py."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from modlens.cli import main
from modlens.study import assignment, itemset
from modlens.study.folder import init_folder, load
from modlens.studylog.store import StudyLog

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def make_log(path: Path) -> None:
    with StudyLog(path) as log:
        det = log.ensure_detector("toy", "1", "toxic", 0.5, {})
        for platform in ("news", "youtube"):
            page = log.ensure_page(platform, f"{platform}-p", None, None)
            for n in range(30):
                text = f"{platform} comment {n} " + " ".join(WORDS[: 1 + n % 9])
                cid = log.add_comment(platform, f"{platform}-{n}", page, text)
                log.add_score(text, det, {"toxic": n / 30}, n / 30, 1.0, None)
                log.add_label(cid, "kind", "a" if n % 3 else "b", "test")
        log.add_comment(platform, "too-long", page, " ".join(["word"] * 80))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_sample_by_deciles_and_by_label_is_seeded_and_within_limits(tmp_path: Path) -> None:
    make_log(tmp_path / "log.sqlite")
    data = itemset.draw(tmp_path / "log.sqlite", per_platform=10, detector="toy", seed=1)
    for platform in ("news", "youtube"):
        assert data["params"]["counts"][platform] == {f"{k / 10:.1f}-{(k + 1) / 10:.1f}": 1 for k in range(10)}
    assert all("too-long" != i["comment_key"] for i in data["items"])
    assert data == itemset.draw(tmp_path / "log.sqlite", per_platform=10, detector="toy", seed=1)
    assert data["items"] != itemset.draw(tmp_path / "log.sqlite", per_platform=10, detector="toy", seed=2)["items"]
    assert data["params"]["detector"] == {"name": "toy", "version": "1"}
    by_label = itemset.draw(tmp_path / "log.sqlite", per_platform=6, label="kind", platforms=["news"], max_words=5)
    assert by_label["params"]["counts"] == {"news": {"a": 3, "b": 3}}
    assert all(len(i["text"].split()) <= 5 for i in by_label["items"])
    with pytest.raises(itemset.ItemSetError, match="only 30 comments"):
        itemset.draw(tmp_path / "log.sqlite", per_platform=40, detector="toy")
    with pytest.raises(itemset.ItemSetError, match="it has: toy@1"):
        itemset.draw(tmp_path / "log.sqlite", per_platform=4, detector="other")


def study_with_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = tmp_path / "study"
    init_folder(folder, "crowd-study")
    make_log(tmp_path / "log.sqlite")
    code, out = run(capsys, "sample", "--db", tmp_path / "log.sqlite", "--out", folder, "--detector", "toy",
                    "--per-platform", "6")
    assert code == 0, out
    code, out = run(capsys, "study", "assign", folder, "--raters", "2", "--items-per-task", "4", "--gold-per-task", "2")
    assert code == 0 and "3 tasks" in out and "6 assignments" in out, out
    return folder


def test_assignment_is_reproducible_and_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    study = load(folder)
    made = json.loads((folder / assignment.FILE).read_text())
    again = assignment.make(itemset.read(folder / itemset.FILE), study, raters=2, items_per_task=4, gold_per_task=2)
    assert made == again
    orders = [tuple(a["order"]) for a in made["assignments"] if a["task"] == "t01"]
    assert len(orders) == 2 and sorted(orders[0]) == sorted(orders[1])
    assert run(capsys, "study", "check", folder)[0] == 0
    made["tasks"][0]["items"].pop()
    (folder / assignment.FILE).write_text(json.dumps(made))
    code, out = run(capsys, "study", "check", folder)
    assert code != 0 and "in no task" in out and "its order is not its task's items" in out, out


def test_potato_round_trip_refusals_and_reimport(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    db = tmp_path / "log.sqlite"
    assert run(capsys, "study", "export-tasks", folder, "--format", "potato", "--out", tmp_path / "potato")[0] == 0
    config = yaml.safe_load((tmp_path / "potato" / "config.yaml").read_text())
    names = [s["name"] for s in config["annotation_schemes"]]
    assert names == ["formality", "respectfulness", "stereotypes", "vs_hard", "vs_extreme"]
    instances = [json.loads(line) for line in (tmp_path / "potato" / "data" / "items.jsonl").read_text().splitlines()]
    out_dir = tmp_path / "potato" / "annotation_output"

    def annotate(user: str, task: str, level: str = "formal", vs: tuple[str, str] = ("less", "less")) -> None:
        """user_state.json as Potato 2.12.1 writes it (tests/test_potato_real.py runs Potato itself)."""
        state = {}
        for inst in instances:
            if inst["task"] != task:
                continue
            labels = {"formality": level, "respectfulness": "respectful", "stereotypes": "not present",
                      "vs_hard": vs[0], "vs_extreme": vs[1]}
            if "gold:gold-insult" in inst["id"]:
                labels["vs_hard"], labels["vs_extreme"] = "more", "same"
            state[inst["id"]] = [[{"schema": q, "name": c}, c] for q, c in labels.items()]
        (out_dir / user).mkdir(parents=True, exist_ok=True)
        (out_dir / user / "user_state.json").write_text(json.dumps({"user_id": user,
                                                                   "instance_id_to_label_to_value": state}))

    annotate("ann1", "t01")
    annotate("ann2", "t01", level="very sloppy")      # not a level of formality
    code, out = run(capsys, "rate", out_dir, "--db", db, "--study", folder)
    assert code != 0 and "answer(s) refused, nothing imported" in out and "'very sloppy' is not one of" in out, out
    assert sqlite3.connect(db).execute("SELECT count(*) FROM ratings").fetchone() == (0,)

    annotate("ann2", "t01", vs=("less", "more"))          # every answer inconsistent: 6 of 6 problems
    code, out = run(capsys, "rate", out_dir, "--db", db, "--study", folder)
    assert code == 0 and "2 workers, 12 ratings imported" in out, out
    assert "accept  potato:ann1  task t01 (potato)" in out and "reject  potato:ann2  task t01 (potato)" in out, out
    code, out = run(capsys, "rate", out_dir, "--db", db, "--study", folder)
    assert "0 ratings imported, 12 already in the log" in out, out
    rows = sqlite3.connect(db).execute("SELECT rater_id, task, decision FROM rater_reviews ORDER BY rater_id").fetchall()
    assert rows == [("potato:ann1", "t01", "accept"), ("potato:ann2", "t01", "reject")]


@pytest.mark.parametrize(("counts", "decision"), [
    # (inconsistent gold, wrong gold, inconsistent responses) -> seed 003, Table 11, row by row
    ((0, 0, 2), "accept"), ((0, 0, 3), "accept"), ((0, 1, 1), "accept"), ((0, 1, 2), "accept"), ((0, 2, 0), "accept"),
    ((0, 2, 1), "accept_unused"), ((0, 2, 2), "reject"), ((1, 0, 1), "accept"), ((1, 0, 2), "accept_unused"),
    ((1, 1, 0), "accept"), ((1, 1, 1), "accept_unused"), ((1, 2, 0), "accept_unused"), ((1, 2, 1), "reject"),
    ((2, 0, 0), "accept_unused"), ((2, 0, 1), "accept_unused"), ((2, 0, 2), "reject"), ((2, 1, 0), "accept_unused"),
    ((2, 1, 1), "reject"),
])
def test_decisions_follow_table_11(counts: tuple[int, int, int], decision: str) -> None:
    from modlens.analysis.raters import rubric
    from modlens.study.acceptance import DECISION

    assert DECISION[rubric(*counts)] == decision


def test_a_survey_csv_saved_by_excel_reads_as_the_plain_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Survey exports pass through a spreadsheet: a byte-order mark and `;`, or Latin-1 with its
    `--encoding`, give the same answers as the plain UTF-8 CSV (the dataset readers' file handling);
    Latin-1 undeclared is one line naming the line and the fix, not a decoding traceback."""
    from modlens.study.crowd import CrowdError
    from modlens.study.survey import read_survey

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    first = sorted(plan.assignments)[0]
    header = ["WorkerId", "Input.assignment", "Answer.item1_vs_hard", "Note"]
    row = ["W-1", first, "more", "très grossier"]
    plain = tmp_path / "plain.csv"
    plain.write_text(",".join(header) + "\n" + ",".join(row) + "\n", encoding="utf-8")
    excel = tmp_path / "excel.csv"
    excel.write_bytes(b"\xef\xbb\xbf" + (";".join(header) + "\r\n" + ";".join(row) + "\r\n").encode("utf-8"))
    latin = tmp_path / "latin.csv"
    latin.write_bytes((";".join(header) + "\r\n" + ";".join(row) + "\r\n").encode("latin-1"))

    def seen(answers: list) -> list:
        return [(a.worker, a.assignment, a.ref, a.answers) for a in answers]

    want = seen(read_survey(plain, plan))
    assert want and want[0][:2] == ("W-1", first) and want[0][3] == {"vs_hard": "more"}
    assert seen(read_survey(excel, plan)) == want
    assert seen(read_survey(latin, plan, encoding="latin-1")) == want
    with pytest.raises(CrowdError, match=r"latin.csv: line 2: not UTF-8 text ") as err:
        read_survey(latin, plan)
    assert err.value.fix is not None and "--encoding" in err.value.fix


def test_a_missing_export_is_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 3, as the README's exit-code table says for a file the command needs."""
    folder = study_with_set(tmp_path, capsys)
    code, out = run(capsys, "rate", tmp_path / "missing.csv", "--study", folder, "--db", tmp_path / "log.sqlite")
    assert code == 3 and "missing.csv" in out, out


def _answer_cells(plan: assignment.Plan, unit: str, prefix: str = "") -> dict[str, str]:
    """The form's answer fields for every comment of a slot: the anchor answers of "not toxic"."""
    order = plan.assignments[unit]["order"]
    cells = {}
    for pos in range(1, len(order) + 1):
        cells.update({f"{prefix}item{pos}_formality": "formal", f"{prefix}item{pos}_respectfulness": "respectful",
                      f"{prefix}item{pos}_stereotypes": "not present", f"{prefix}item{pos}_vs_hard": "less",
                      f"{prefix}item{pos}_vs_extreme": "less"})
    return cells


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    import csv

    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def test_survey_platforms_as_they_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Qualtrics' three header rows, Mechanical Turk's batch results (a rejected assignment left
    out) and a survey carrying Prolific's `PROLIFIC_PID` read as the answers they hold; each is
    recognized by its header (columns as the platforms name them)."""
    from modlens.study.survey import platform_rows, read_survey

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    r1, r2 = "t01-r1", "t01-r2"
    answers = _answer_cells(plan, r1)
    # Qualtrics: export names, question texts, ImportId objects, then one response per row
    names = ["StartDate", "EndDate", "Status", "ResponseId", "Finished", "PROLIFIC_PID", "assignment", *answers]
    texts = ["Start Date", "End Date", "Response Type", "Response ID", "Finished", "PROLIFIC_PID", "assignment",
             *[f"Comment {k.split('_')[0][4:]} - {k.split('_', 1)[1]}" for k in answers]]
    import_ids = [json.dumps({"ImportId": n}) for n in ("startDate", "endDate", "status", "_recordId", "finished")] + [
        json.dumps({"ImportId": "PROLIFIC_PID"}), json.dumps({"ImportId": "assignment"}),
        *[json.dumps({"ImportId": f"QID{n}"}) for n in range(len(answers))]]
    response = ["2024-05-01 10:00:00", "2024-05-01 10:12:00", "IP Address", "R_1abcDEF", "True", "5f8e0c1d2b",
                r1, *answers.values()]
    qualtrics = _write_csv(tmp_path / "qualtrics.csv", [names, texts, import_ids, response])
    got = read_survey(qualtrics, plan)
    assert platform_rows(qualtrics, [dict(zip(names, r)) for r in (texts, import_ids, response)])[0] == "qualtrics"
    assert {(a.worker, a.assignment) for a in got} == {("5f8e0c1d2b", r1)} and len(got) == 6
    assert all(a.answers["vs_hard"] == "less" for a in got)

    # Mechanical Turk's batch results: one row per assignment, Input.* and Answer.* columns
    mturk_head = ["HITId", "HITTypeId", "Title", "AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds",
                  "Input.assignment", "Input.task", *[f"Answer.{k}" for k in answers], "Approve", "Reject"]
    mturk = _write_csv(tmp_path / "Batch_123_batch_results.csv", [
        mturk_head,
        ["3H1", "3T", "Rate comments", "3A1", "A1WORKER", "Submitted", "300", r1, "t01", *answers.values(), "", ""],
        ["3H2", "3T", "Rate comments", "3A2", "A2WORKER", "Rejected", "20", r2, "t01", *_answer_cells(plan, r2).values(),
         "", "bot"]])
    got = read_survey(mturk, plan)
    assert {(a.worker, a.assignment) for a in got} == {("A1WORKER", r1)} and len(got) == 6

    # Prolific: its "Participant id" column beside the survey's answers
    prolific = _write_csv(tmp_path / "prolific.csv", [["Participant id", "assignment", *answers],
                                                      ["60a1b2c3", r1, *answers.values()]])
    assert {a.worker for a in read_survey(prolific, plan)} == {"60a1b2c3"}
    code, out = run(capsys, "rate", qualtrics, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0 and "1 workers, 6 ratings imported" in out and "accept  survey:5f8e0c1d2b  task t01" in out, out


def test_one_worker_in_two_slots_of_a_task_is_reported_and_counted_once(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A platform that lists one HIT per slot lets one worker take both slots of a task: the import
    says so, and the review and the coverage count that worker once for the task."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    head = ["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "Input.assignment",
            *[f"Answer.{k}" for k in _answer_cells(plan, "t01-r1")]]
    rows = [[f"3H{n}", f"3A{n}", "A1WORKER", "Submitted", unit, *_answer_cells(plan, unit).values()]
            for n, unit in enumerate(("t01-r1", "t01-r2", "t02-r1"))]
    mturk = _write_csv(tmp_path / "Batch_9_batch_results.csv", [head, *rows])
    code, out = run(capsys, "rate", mturk, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0, out
    assert ("1 workers filled several slots of one task; each counts once there, so those tasks have a rater "
            "fewer than planned: worker A1WORKER: t01-r1, t01-r2 (task t01)") in out, out
    assert [line.split()[2:4] for line in out.splitlines() if "survey:A1WORKER" in line] == [
        ["task", "t01"], ["task", "t02"]]  # one review per task, not one per slot
    assert "0 of 12 items have 2 raters in accepted tasks" in out, out  # t01's two slots are one rater


def test_other_exports_are_refused_naming_the_one_to_choose(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Potato annotation history or CSV export, and Label Studio's JSON-MIN and CSV exports (the
    shapes their real exports have, tests/test_labelstudio_real.py and test_potato_real.py check
    them against the tools), get one line and the export to choose; nothing is written."""
    folder = study_with_set(tmp_path, capsys)
    db = tmp_path / "log.sqlite"
    history = tmp_path / "ann1" / "annotation_history.jsonl"
    history.parent.mkdir()
    history.write_text(json.dumps({"action_id": "x", "user_id": "ann1", "instance_id": "t01::i001",
                                   "action_type": "add_label", "schema_name": "formality"}) + "\n")
    minimal = tmp_path / "project-1-min.json"
    minimal.write_text(json.dumps([{"id": 1, "text": "a", "task": "t01", "ref": "i001", "formality": "formal",
                                    "annotator": 1, "annotation_id": 1, "lead_time": 2.5}]))
    ls_csv = _write_csv(tmp_path / "project-1.csv", [["annotation_id", "annotator", "formality", "id", "ref", "task"],
                                                     ["1", "1", "formal", "1", "i001", "t01"]])
    potato_csv = _write_csv(tmp_path / "annotations.csv", [["instance_id", "user_id", "formality.formal"],
                                                           ["t01::i001", "ann1", "formal"]])
    for path, words in ((history, "annotation history"), (minimal, "JSON-MIN export"),
                        (ls_csv, "Label Studio's CSV export"), (potato_csv, "Potato's CSV/TSV export")):
        code, out = run(capsys, "rate", path, "--db", db, "--study", folder)
        assert code == 2 and words in out and ("export the project as JSON" in out or "-f jsonl" in out), out
    assert sqlite3.connect(db).execute("SELECT count(*) FROM ratings").fetchone() == (0,)


def test_a_closed_pipe_ends_quietly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`modlens rate … | head -1`: the reader leaves after the first line; no traceback."""
    import subprocess
    import sys

    folder = study_with_set(tmp_path, capsys)
    cmd = f"{sys.executable} -m modlens rate --db {tmp_path / 'log.sqlite'} --study {folder} | head -c 1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert done.stderr == "" and done.returncode == 0, done.stderr
