"""Item sets, assignments and crowd imports without a daemon: `modlens sample` by deciles
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
    units = {u["unit"]: (u["task"], u["ref"]) for u in json.loads((folder / "crowd-key.json").read_text())["units"]}

    def annotate(user: str, task: str, level: str = "formal", vs: tuple[str, str] = ("less", "less")) -> None:
        """user_state.json as Potato 2.12.1 writes it (tests/test_potato_real.py runs Potato itself)."""
        state = {}
        for inst in instances:
            if inst["task"] != task:
                continue
            labels = {"formality": level, "respectfulness": "respectful", "stereotypes": "not present",
                      "vs_hard": vs[0], "vs_extreme": vs[1]}
            if units[inst["id"]][1] == "gold:gold-insult":   # the coordinator's key: raters see opaque ids
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
    # (inconsistent gold, wrong gold, inconsistent responses) -> the Perspective study, Table 11, row by row
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
    # t01's two slots are one rater: its items have 1, not the 2 planned; t03 was not rated
    assert ("raters per item in accepted tasks: 8 of 12 items have 1 rater, 4 of 12 items have 0 raters; planned 2 "
            "(--raters): 0 as planned, 0 over-collected, 12 under-collected (i001; i002; i003; i004; i005 …)") in out, out


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


def _statuses(out: str) -> str:
    """The import's line about rows it left out."""
    return next((line for line in out.splitlines() if line.startswith("skipped")), "")


def test_prolific_statuses_only_valid_work_is_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Prolific export (its `Participant id` and `Status` beside the survey's answers): APPROVED and
    AWAITING REVIEW submissions are imported; REJECTED, RETURNED, TIMED-OUT and SCREENED OUT rows
    carry no valid work (returned and timed-out ones have no answers at all): each kind is skipped and
    counted, none stops the import, and only the valid workers reach the log and the review."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    good = _answer_cells(plan, "t01-r1")
    bad = {k: ("more" if k.endswith("vs_hard") else v) for k, v in _answer_cells(plan, "t01-r2").items()}
    head = ["Submission id", "Participant id", "Status", "Started at", "Completed at", "assignment", *good]
    rows = [["s1", "60aa", "APPROVED", "2026-01-01T10:00", "2026-01-01T10:09", "t01-r1", *good.values()],
            ["s2", "60bb", "REJECTED", "2026-01-01T10:00", "2026-01-01T10:02", "t01-r2", *bad.values()],
            ["s3", "60cc", "RETURNED", "2026-01-01T10:00", "", "", *[""] * len(good)],
            ["s4", "60dd", "TIMED-OUT", "2026-01-01T10:00", "", "", *[""] * len(good)],
            ["s5", "60ee", "AWAITING REVIEW", "2026-01-01T10:00", "2026-01-01T10:11", "t02-r1",
             *_answer_cells(plan, "t02-r1").values()],
            ["s6", "60ff", "SCREENED OUT", "2026-01-01T10:00", "2026-01-01T10:01", "", *[""] * len(good)]]
    export = _write_csv(tmp_path / "prolific_export.csv", [head, *rows])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0, out
    assert "2 workers, 12 ratings imported" in out, out
    assert _statuses(out) == ("skipped 4 rows that carry no valid work: 1 Prolific Status REJECTED, "
                              "1 Prolific Status RETURNED, 1 Prolific Status SCREENED OUT, "
                              "1 Prolific Status TIMED-OUT"), out
    raters = {r for (r,) in sqlite3.connect(tmp_path / "log.sqlite").execute("SELECT DISTINCT rater_id FROM ratings")}
    assert raters == {"survey:60aa", "survey:60ee"}
    assert "60bb" not in out and "60cc" not in out


def _qualtrics(path: Path, plan: assignment.Plan, responses: list[dict[str, str]]) -> Path:
    """A Qualtrics CSV download with choice text: export names, question texts, ImportId objects."""
    answers = _answer_cells(plan, "t01-r1")
    names = ["StartDate", "EndDate", "Status", "Progress", "Finished", "ResponseId", "DistributionChannel",
             "PROLIFIC_PID", "assignment", *answers]
    texts = ["Start Date", "End Date", "Response Type", "Progress", "Finished", "Response ID", "Distribution Channel",
             "PROLIFIC_PID", "assignment", *[f"Comment {k.split('_')[0][4:]} - {k.split('_', 1)[1]}" for k in answers]]
    ids = [json.dumps({"ImportId": n}) for n in names]
    return _write_csv(path, [names, texts, ids, *[[r.get(n, "") for n in names] for r in responses]])


def test_qualtrics_preview_unfinished_and_half_answered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Qualtrics' own columns decide: a preview (Status "Survey Preview", DistributionChannel preview)
    and a spam response are skipped and counted; an unfinished response (Finished False) keeps the
    comments it completed and its other comments count as missed; a comment answered in part (one
    anchor question blank) is missed, not a reason to refuse the file."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    base = {"StartDate": "2026-01-01 10:00:00", "EndDate": "2026-01-01 10:10:00", "Status": "IP Address",
            "Progress": "100", "Finished": "True", "DistributionChannel": "anonymous"}
    full = _answer_cells(plan, "t01-r1")
    half = {**_answer_cells(plan, "t02-r1"), "item3_vs_extreme": ""}
    unfinished = {k: v for k, v in _answer_cells(plan, "t03-r1").items() if int(k.split("_")[0][4:]) <= 2}
    responses = [
        {**base, "ResponseId": "R_good", "PROLIFIC_PID": "p-good", "assignment": "t01-r1", **full},
        {**base, "Status": "Survey Preview", "DistributionChannel": "preview", "ResponseId": "R_preview",
         "assignment": "t01-r2", **full},
        {**base, "Status": "Spam", "ResponseId": "R_spam", "PROLIFIC_PID": "p-spam", "assignment": "t01-r2", **full},
        {**base, "ResponseId": "R_half", "PROLIFIC_PID": "p-half", "assignment": "t02-r1", **half},
        {**base, "Progress": "40", "Finished": "False", "ResponseId": "R_unfinished", "PROLIFIC_PID": "p-unfinished",
         "assignment": "t03-r1", **unfinished},
    ]
    export = _qualtrics(tmp_path / "qualtrics.csv", plan, responses)
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0, out
    # 6 + 5 (one comment half answered) + 2 (an unfinished response's first two comments)
    assert "3 workers, 13 ratings imported, 0 already in the log" in out, out
    assert "1 comment answered in part (counted as missed)" in out, out
    assert "1 unfinished response (Finished False): its 4 unanswered comments count as missed" in out, out
    assert _statuses(out) == ("skipped 2 rows that carry no valid work: 1 Qualtrics Status Spam, "
                              "1 Qualtrics preview (Status Survey Preview / DistributionChannel preview)"), out
    raters = {r for (r,) in sqlite3.connect(tmp_path / "log.sqlite").execute("SELECT DISTINCT rater_id FROM ratings")}
    assert raters == {"survey:p-good", "survey:p-half", "survey:p-unfinished"}
    reviews = dict(sqlite3.connect(tmp_path / "log.sqlite").execute(
        "SELECT rater_id, missed FROM rater_reviews WHERE rater_id LIKE 'survey:%'").fetchall())
    assert reviews == {"survey:p-good": 0, "survey:p-half": 1, "survey:p-unfinished": 4}


def test_a_numeric_qualtrics_export_is_one_error_naming_choice_text(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    numeric = {k: str(n % 3 + 1) for n, k in enumerate(_answer_cells(plan, "t01-r1"))}
    export = _qualtrics(tmp_path / "numeric.csv", plan, [
        {"Status": "0", "Progress": "100", "Finished": "1", "ResponseId": "R_1", "DistributionChannel": "anonymous",
         "PROLIFIC_PID": "p1", "assignment": "t01-r1", **numeric}])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 2, out
    assert "numeric values" in lines[0] and "choice text" in lines[1], out
    assert sqlite3.connect(tmp_path / "log.sqlite").execute("SELECT count(*) FROM ratings").fetchone() == (0,)


def test_no_export_shows_raters_which_comments_are_gold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Label Studio's task data, Potato's instances and the survey's task table name each comment by
    an opaque id: no field, column, value or file name marks a gold comment. The key that does is
    written into the study folder for the coordinator, and an import reads the ids back."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    gold_keys = [g.key for g in plan.study.gold]
    for fmt in ("labelstudio", "potato", "survey"):
        code, out = run(capsys, "study", "export-tasks", folder, "--format", fmt, "--out", tmp_path / fmt)
        assert code == 0 and "crowd-key.json" in out, out
        for f in (tmp_path / fmt).rglob("*"):
            assert "gold" not in f.name.lower(), f
            if f.is_file():
                text = f.read_text(encoding="utf-8")
                assert "gold" not in text.lower() and not any(k in text for k in gold_keys), (f, fmt)
    key = json.loads((folder / "crowd-key.json").read_text())["units"]
    assert sum(u["gold"] for u in key) == sum(len(t["gold"]) for t in plan.tasks.values())
    tasks = json.loads((tmp_path / "labelstudio" / "tasks.json").read_text())
    assert {t["data"]["unit"] for t in tasks} == {u["unit"] for u in key}
    assert all(set(t["data"]) == {"text", "task", "position", "unit"} for t in tasks)


@pytest.mark.parametrize(("gold_per_task", "wrong", "decision"), [
    (3, 2, "accept"),     # Table 11 as printed: (0, 2, 0) -> approve, use
    (2, 2, "reject"),     # both of 2 gold wrong: 3 of 3 on the table's scale, which it rejects
    (2, 1, "accept"),     # one of 2: 2 of 3 on the table's scale, (0, 2, 0) -> approve, use
])
def test_the_acceptance_rule_follows_the_tasks_gold_count(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          gold_per_task: int, wrong: int, decision: str) -> None:
    """Table 11 was printed for 3 gold in 15: with --gold-per-task 2 its counts are scaled (rounded
    up), so a rater who got both gold comments wrong is not accepted; `study assign` says which rule."""
    from crowd_real import ANCHORS

    folder = tmp_path / "study"
    init_folder(folder, "gold-study")
    make_log(tmp_path / "log.sqlite")
    assert run(capsys, "sample", "--db", tmp_path / "log.sqlite", "--out", folder, "--detector", "toy",
               "--per-platform", "6")[0] == 0
    code, out = run(capsys, "study", "assign", folder, "--raters", "1", "--items-per-task", "12", "--gold-per-task",
                    str(gold_per_task))
    assert code == 0 and ("as printed" if gold_per_task == 3 else "scaled") in out, out
    plan = assignment.Plan.load(folder, load(folder))
    cells = _answer_cells(plan, "t01-r1")
    gold = {plan.study.gold[n].key: dict(plan.study.gold[n].expected) for n in range(len(plan.study.gold))}
    for pos, ref in enumerate(plan.assignments["t01-r1"]["order"], 1):
        if ref.startswith("gold:"):
            expected = gold[ref[5:]]
            right = ANCHORS[expected["toxicity"]]
            # a consistent pair of the opposite level: a wrong gold answer, not an inconsistent one
            given = right if wrong == 0 else ANCHORS["not toxic" if expected["toxicity"] == "toxic" else "toxic"]
            cells.update({f"item{pos}_{q}": v for q, v in expected.items() if q != "toxicity"})
            cells[f"item{pos}_vs_hard"], cells[f"item{pos}_vs_extreme"] = given
            wrong -= 1 if given != right else 0
    export = _write_csv(tmp_path / "results.csv", [["worker_id", "assignment", *cells], ["w1", "t01-r1", *cells.values()]])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0, out
    line = next(line for line in out.splitlines() if "survey:w1" in line)
    assert line.split()[0] == decision, out


def test_label_studio_and_potato_states_say_who_did_valid_work(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Label Studio: a skipped (`was_cancelled`) annotation is counted, not imported; one another user
    opened and updated later (`updated_by`, `updated_at`) is credited to that user, while one the
    admin created on a worker's behalf (its `updated_by`, no later change) stays the worker's.
    Potato: a declared machine annotator (`origin`) and a user its prestudy screened out
    (`prestudy_passed` false) are counted, not imported. Built in the shapes the tools write
    (tests/test_labelstudio_real.py and test_potato_real.py run them)."""
    from crowd_real import answers
    from modlens.study.units import unit_map

    folder = study_with_set(tmp_path, capsys)
    db = tmp_path / "log.sqlite"
    plan = assignment.Plan.load(folder, load(folder))
    assert run(capsys, "study", "export-tasks", folder, "--format", "labelstudio", "--out", tmp_path / "ls")[0] == 0
    tasks = [t for t in json.loads((tmp_path / "ls" / "tasks.json").read_text()) if t["data"]["task"] == "t01"]
    units = unit_map(plan)

    def result(ref: str) -> list[dict]:
        return [{"from_name": q, "to_name": "text", "type": "choices", "value": {"choices": [c]}}
                for q, c in answers(plan, ref, _levels(plan)).items()]

    t0, t1 = "2026-01-01T10:00:00.100000Z", "2026-01-01T10:00:00.300000Z"
    export = []
    for n, task in enumerate(tasks, 1):
        ref = units[task["data"]["unit"]][1]
        anns = [{"id": n * 10, "completed_by": 5, "updated_by": 1, "created_at": t0, "updated_at": t1,
                 "result": result(ref), "was_cancelled": False},     # made by the admin (user 1) for worker 5
                {"id": n * 10 + 1, "completed_by": 6, "updated_by": 6, "created_at": t0, "updated_at": t0,
                 "result": result(ref), "was_cancelled": False},
                {"id": n * 10 + 2, "completed_by": 7, "updated_by": 7, "created_at": t0, "updated_at": t0,
                 "result": [], "was_cancelled": True}]
        if n == 1:   # worker 8 opened worker 6's annotation a minute later and pressed Update
            anns[1].update(updated_by=8, updated_at="2026-01-01T10:01:00Z")
        export.append({"id": n, "data": task["data"], "annotations": anns})
    ls_file = tmp_path / "ls-export.json"
    ls_file.write_text(json.dumps(export))
    code, out = run(capsys, "rate", ls_file, "--db", db, "--study", folder)
    assert code == 0, out
    assert "3 workers, 12 ratings imported" in out, out
    assert _statuses(out) == "skipped 6 annotations that carry no valid work: 6 Label Studio was_cancelled (skipped)", out
    assert ("1 annotation last updated by another user than completed_by: credited to the one who updated it "
            "(updated_by)") in out, out
    per_rater = dict(sqlite3.connect(db).execute("SELECT rater_id, count(*) FROM ratings GROUP BY rater_id").fetchall())
    assert per_rater == {"labelstudio:5": 6, "labelstudio:6": 5, "labelstudio:8": 1}

    assert run(capsys, "study", "export-tasks", folder, "--format", "potato", "--out", tmp_path / "potato")[0] == 0
    instances = [json.loads(line) for line in (tmp_path / "potato" / "data" / "items.jsonl").read_text().splitlines()]
    out_dir = tmp_path / "potato" / "annotation_output"
    for user, extra in (("person", {}), ("llm-1", {"origin": {"kind": "machine", "id": "llm-1", "version": "1"}}),
                        ("screened", {"prestudy_passed": False})):
        state = {inst["id"]: [[{"schema": q, "name": c}, c] for q, c in
                              answers(plan, units[inst["id"]][1], _levels(plan)).items()]
                 for inst in instances if inst["task"] == "t02"}
        (out_dir / user).mkdir(parents=True)
        (out_dir / user / "user_state.json").write_text(json.dumps({"user_id": user, **extra,
                                                                   "instance_id_to_label_to_value": state}))
    code, out = run(capsys, "rate", out_dir, "--db", db, "--study", folder)
    assert code == 0 and "1 workers, 6 ratings imported" in out, out
    assert _statuses(out) == ("skipped 2 user states that carry no valid work: 1 Potato origin: a machine annotator, "
                              "1 Potato prestudy_passed false (screened out)"), out


def _levels(plan: assignment.Plan) -> dict[str, str]:
    """Every item's comment key -> "not toxic" (crowd_real.answers' planted levels for this set)."""
    return {plan.comment(ref)[1]: "not toxic" for ref in plan.items}


def test_raters_per_item_are_those_collected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A queue that gave a unit to more annotators than --raters asked: `modlens rate` reports the
    raters each item got (3, not the planned 2) and names the over- and under-collected items."""
    from crowd_real import answers
    from modlens.study.units import unit_map

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    assert run(capsys, "study", "export-tasks", folder, "--format", "potato", "--out", tmp_path / "potato")[0] == 0
    units = unit_map(plan)
    instances = [json.loads(line) for line in (tmp_path / "potato" / "data" / "items.jsonl").read_text().splitlines()]
    out_dir = tmp_path / "potato" / "annotation_output"
    t01 = [i["id"] for i in instances if i["task"] == "t01"]
    first_item = next(iid for iid in t01 if not units[iid][1].startswith("gold:"))
    for user, ids in (("a", t01), ("b", t01), ("c", t01), ("d", [i for i in t01 if i != first_item])):
        state = {iid: [[{"schema": q, "name": c}, c] for q, c in answers(plan, units[iid][1], _levels(plan)).items()]
                 for iid in ids}
        (out_dir / user).mkdir(parents=True)
        (out_dir / user / "user_state.json").write_text(json.dumps({"user_id": user,
                                                                   "instance_id_to_label_to_value": state}))
    code, out = run(capsys, "rate", out_dir, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0 and "0 reject" in out, out
    over = sorted(units[iid][1] for iid in t01 if iid != first_item and not units[iid][1].startswith("gold:"))
    assert (f"raters per item in accepted tasks: 3 of 12 items have 4 raters, 1 of 12 items has 3 raters, "
            f"8 of 12 items have 0 raters; planned 2 (--raters): 0 as planned, 4 over-collected "
            f"({'; '.join(sorted(over + [units[first_item][1]]))}), 8 under-collected") in out, out


def _survey_cells(plan: assignment.Plan, unit: str, blank: tuple[int, ...] = ()) -> dict[str, str]:
    """A survey row's answers to every comment of a slot, right on gold (crowd_real.answers); the
    comments at the positions in `blank` left unanswered."""
    from crowd_real import answers
    from modlens.study import crowd

    cells = {}
    for pos, ref in enumerate(plan.assignments[unit]["order"], 1):
        given = answers(plan, ref, _levels(plan))
        cells.update({f"item{pos}_{q.name}": "" if pos in blank else given[q.name] for q in crowd.questions(plan.study)})
    return cells


def test_raters_per_item_count_only_the_comments_rated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A survey row that leaves one item blank is still an accepted task (a miss is one inconsistent
    response): the item it left has one rater in the log, and the collection line says 1, not the 2
    planned, as every item's count is the log's raters of it in accepted tasks."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    order = plan.assignments["t01-r2"]["order"]
    blank = next(pos for pos, ref in enumerate(order, 1) if not ref.startswith("gold:"))
    head = ["worker_id", "assignment", *_survey_cells(plan, "t01-r1")]
    export = _write_csv(tmp_path / "survey.csv", [head, ["W1", "t01-r1", *_survey_cells(plan, "t01-r1").values()],
                                                  ["W2", "t01-r2", *_survey_cells(plan, "t01-r2", (blank,)).values()]])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0 and "2 accept" in out and "1 of 6 unrated" in out, out
    with StudyLog(tmp_path / "log.sqlite", readonly=True) as log:
        rated = {ref: len({r["rater_id"] for r in log.query("SELECT rater_id FROM ratings WHERE comment_id = ?",
                                                            (log.comment_id(*plan.comment(ref)),))})
                 for ref in plan.tasks["t01"]["items"]}
    assert rated[order[blank - 1]] == 1 and sorted(rated.values()) == [1, 2, 2, 2], rated
    under = sorted([order[blank - 1], *plan.tasks["t02"]["items"], *plan.tasks["t03"]["items"]])
    assert ("raters per item in accepted tasks: 3 of 12 items have 2 raters, 1 of 12 items has 1 rater, "
            "8 of 12 items have 0 raters; planned 2 (--raters): 3 as planned, 0 over-collected, "
            f"9 under-collected ({'; '.join(under[:5])} …)") in out, out


def test_a_submission_twice_in_one_file_is_said_so_not_already_in_the_log(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """One worker's slot twice in one export (a survey taken again, a row pasted twice), into a log
    that held no rating: nothing was "already in the log" and nothing "changed since the last
    import". The import says the file repeats answers, keeps each worker's first answer to a
    comment, and the log holds one rating per worker and comment."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    first = _survey_cells(plan, "t01-r1")
    again = {k: ("informal" if k.endswith("_formality") else v) for k, v in first.items()}
    head = ["worker_id", "assignment", *first]
    export = _write_csv(tmp_path / "survey.csv", [head, ["W1", "t01-r1", *first.values()],
                                                  ["W2", "t01-r2", *_survey_cells(plan, "t01-r2").values()],
                                                  ["W1", "t01-r1", *first.values()],
                                                  ["W2", "t01-r2", *again.values()]])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0, out
    assert "2 workers, 12 ratings imported, 0 already in the log, 0 empty answers" in out, out
    assert "changed since the last import" not in out, out
    assert ("12 answers repeat the same worker's answer to the same comment earlier in this file (6 of them "
            "differ from it): the first is kept: survey.csv:4 item1 (W1)") in out, out
    rows = sqlite3.connect(tmp_path / "log.sqlite").execute(
        "SELECT rater_id, count(*), count(DISTINCT comment_id) FROM ratings GROUP BY rater_id").fetchall()
    assert rows == [("survey:W1", 6, 6), ("survey:W2", 6, 6)]
    stored = {json.loads(v)["formality"] for (v,) in sqlite3.connect(tmp_path / "log.sqlite").execute(
        "SELECT values_json FROM ratings WHERE rater_id = 'survey:W2'")}
    assert "informal" not in stored and stored == {v for k, v in first.items() if k.endswith("_formality")}
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder,
                    "--on-change", "replace")
    assert "0 ratings imported, 12 already in the log" in out and "changed since the last import" not in out, out


def test_a_submission_rejected_on_the_platform_after_its_import_is_rejected(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Prolific submissions imported while AWAITING REVIEW, one then REJECTED on Prolific (not paid:
    not data) and the export imported again: the row is skipped, and the ratings the first import
    stored must not stay in the review and the report as accepted work. Its task is rejected, saying
    so; a review without a file keeps it so; the report's human section leaves its ratings out, naming
    why; and APPROVED again, the task is judged by Table 11 again."""
    from modlens.analysis import data as analysis_data
    from modlens.analysis.human import usable_ratings

    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    db = tmp_path / "log.sqlite"
    head = ["Submission id", "Participant id", "Status", "assignment", *_survey_cells(plan, "t01-r1")]

    def export(status: str) -> Path:
        return _write_csv(tmp_path / f"prolific_{status}.csv", [
            head, ["s1", "60aa", "AWAITING REVIEW", "t01-r1", *_survey_cells(plan, "t01-r1").values()],
            ["s2", "60bb", status, "t01-r2", *_survey_cells(plan, "t01-r2").values()]])

    code, out = run(capsys, "rate", export("AWAITING REVIEW"), "--db", db, "--study", folder)
    assert code == 0 and "2 workers, 12 ratings imported" in out and "2 accept," in out, out
    code, out = run(capsys, "rate", export("REJECTED"), "--db", db, "--study", folder)
    assert code == 0, out
    assert "skipped 1 rows that carry no valid work: 1 Prolific Status REJECTED" in out, out
    assert ("1 submissions imported before carry no valid work now: their tasks are rejected, their ratings kept "
            "in the log unused: survey:60bb task t01 (Prolific Status REJECTED)") in out, out
    assert "reject  survey:60bb  task t01 (survey): rejected on the platform (Prolific Status REJECTED)" in out, out

    def decisions() -> dict[str, str]:
        return dict(sqlite3.connect(db).execute("SELECT rater_id, decision FROM rater_reviews").fetchall())

    assert decisions() == {"survey:60aa": "accept", "survey:60bb": "reject"}
    code, out = run(capsys, "rate", "--db", db, "--study", folder)   # the review alone keeps the platform's word
    assert code == 0 and decisions() == {"survey:60aa": "accept", "survey:60bb": "reject"}, out
    usable = usable_ratings(analysis_data.load(db))
    assert {r["rater_id"] for r in usable.valid} == {"survey:60aa"}
    assert usable.excluded["submission rejected on the crowd platform"] == 4, usable.excluded  # its 4 items; gold apart
    code, out = run(capsys, "rate", export("APPROVED"), "--db", db, "--study", folder)
    assert code == 0 and decisions() == {"survey:60aa": "accept", "survey:60bb": "accept"}, out
    assert "carry no valid work now" not in out, out


def test_a_survey_row_that_answered_only_gold_is_reviewed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker whose row answers the gold comments and leaves every item blank did the slot's task
    and missed its items: the review judges that task (rejected: every item a miss) instead of
    leaving the worker out of the decisions the import prints."""
    folder = study_with_set(tmp_path, capsys)
    plan = assignment.Plan.load(folder, load(folder))
    order = plan.assignments["t01-r2"]["order"]
    items = tuple(pos for pos, ref in enumerate(order, 1) if not ref.startswith("gold:"))
    head = ["worker_id", "assignment", *_survey_cells(plan, "t01-r1")]
    export = _write_csv(tmp_path / "survey.csv", [head, ["W1", "t01-r1", *_survey_cells(plan, "t01-r1").values()],
                                                  ["W2", "t01-r2", *_survey_cells(plan, "t01-r2", items).values()]])
    code, out = run(capsys, "rate", export, "--db", tmp_path / "log.sqlite", "--study", folder)
    assert code == 0 and "2 workers, 8 ratings imported" in out, out
    assert "reject  survey:W2  task t01 (survey): 0 inconsistent gold, 0 wrong gold, 4 inconsistent responses " \
           "(4 of 6 unrated)" in out, out
    assert "reviewed 2 rater tasks: 1 accept, 0 accept_unused, 1 reject" in out, out
