"""Survey platforms' result CSVs as `modlens rate` reads them, recognized by their headers and read
through the dataset readers (byte-order mark, `;` or tab, `--encoding`):

- Amazon Mechanical Turk's batch results: `WorkerId`, `AssignmentStatus`, `Input.<column of
  tasks.csv>`, `Answer.<form field>`; only Submitted and Approved assignments are work.
- Qualtrics' CSV download with choice text: three header rows (export names, question texts,
  `{"ImportId": …}`); the two under the names are dropped. The worker is the embedded
  `PROLIFIC_PID` or `workerId` where the survey recorded one, else Qualtrics' `ResponseId`.
  Previews, test responses and spam (`Status`, `DistributionChannel`) are no work; an unfinished
  response (`Finished` False) keeps its answered comments. A numeric-values download is refused.
- Prolific: answers come from the survey that hosted the study, with `PROLIFIC_PID` from the study
  URL; Prolific's own export names it `Participant id`, beside the submission's `Status` (only
  APPROVED and AWAITING REVIEW are work).

Rows that carry no valid work are counted by kind (`no_valid_work`), never imported, never a
reason to refuse the rest.
- Anything else with a worker column and `item<N>_<question>` answers (`form.html`'s pasted rows).

The assignment is in `Input.assignment` or `assignment` (a slot such as `t01-r2`, or a task id);
answers in `[Answer.]item<N>_<question>`, N the 1-based position in that unit's order.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from modlens.datasets.base import DatasetError, read_rows
from modlens.study.assignment import Plan
from modlens.study.crowd import LS_JSON, POTATO_FIX, Answer, CrowdError, Tally, questions, task_and_order
from modlens.studylog import csvcells

# first non-empty wins: a platform's own worker id before a survey tool's response id
WORKER_COLUMNS = ("WorkerId", "workerId", "worker_id", "PROLIFIC_PID", "Participant id", "participant_id",
                  "ResponseId")
ASSIGNMENT_COLUMNS = ("Input.assignment", "assignment")
QUALTRICS_IMPORT_ID = '{"ImportId"'


def _column(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    return next((str(row[c]).strip() for c in names if str(row.get(c) or "").strip()), None)


# each platform's own word for a row's work: which rows hold work to import (docs/MULTI.md, "Row statuses")
PROLIFIC_VALID = ("APPROVED", "AWAITING REVIEW")       # Prolific's submission `Status`
MTURK_VALID = ("Submitted", "Approved")                # Mechanical Turk's `AssignmentStatus`
PLATFORM_NAMES = {"prolific": "Prolific", "mturk": "Mechanical Turk", "qualtrics": "Qualtrics"}


def no_valid_work(platform: str, row: dict[str, Any]) -> str | None:
    """Why a row carries no valid work, as the platform says it ("Prolific Status RETURNED"), or None.
    Prolific: a submission that is not approved or awaiting review (rejected, returned, timed out,
    screened out, still reserved or active); Mechanical Turk: an assignment neither submitted nor
    approved; Qualtrics: a preview, a test response or spam (`Status`, `DistributionChannel`). An
    unfinished Qualtrics response is work: its answered comments count, the rest are misses."""
    if platform == "prolific":
        status = str(row.get("Status") or "").strip()
        return None if not status or status.upper() in PROLIFIC_VALID else f"Prolific Status {status}"
    if platform == "mturk":
        status = str(row.get("AssignmentStatus") or "").strip()
        return None if not status or status in MTURK_VALID else f"Mechanical Turk AssignmentStatus {status}"
    if platform == "qualtrics":
        status = str(row.get("Status") or "").strip()
        channel = str(row.get("DistributionChannel") or "").strip().lower()
        if "Spam" in status:
            return f"Qualtrics Status {status}"
        if "Preview" in status or channel == "preview":
            return "Qualtrics preview (Status Survey Preview / DistributionChannel preview)"
        if status == "Survey Test" or channel == "test":
            return "Qualtrics test response (Status Survey Test / DistributionChannel test)"
    return None


def _numeric_qualtrics(path: Path, rows: list[tuple[int, dict[str, Any]]], plan: Plan) -> None:
    """A Qualtrics download with numeric values (Status 0, Finished 1, answers as choice numbers) is
    refused in one line: modlens reads answers as the choices' text."""
    choices = {q.name: set(q.choices) for q in questions(plan.study)}
    for n, row in rows:
        status, finished = str(row.get("Status") or "").strip(), str(row.get("Finished") or "").strip()
        coded = [v for col, v in row.items() if str(v or "").strip().isdigit()
                 and str(v).strip() not in choices.get(str(col).partition("_")[2], {str(v).strip()})]
        if status.isdigit() or finished in ("0", "1") or coded:
            raise CrowdError(f"{path}:{n}: a Qualtrics export with numeric values (Status {status!r}, Finished "
                             f"{finished!r}{', answers such as ' + repr(coded[0]) if coded else ''}); modlens reads "
                             "the answers' choice text",
                             fix="download the data again as CSV with \"Use choice text\" (Data & Analysis > "
                                 "Export & Import > Export data)")


def platform_rows(path: Path, rows: list[dict[str, Any]]) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """(platform, [(line number, row)]) of the rows that hold answers, every row's status unread
    (`no_valid_work` reads it); other tools' CSV exports refused."""
    header = set(rows[0]) if rows else set()
    if {"annotation_id", "annotator"} <= header:
        raise CrowdError(f"{path}: Label Studio's CSV export", fix=LS_JSON)
    if {"instance_id", "user_id"} <= header:
        raise CrowdError(f"{path}: Potato's CSV/TSV export", fix=POTATO_FIX)
    numbered = list(enumerate(rows, 2))
    if "ResponseId" in header or "ResponseID" in header:
        # Qualtrics: the question-text row, then the ImportId row, before the first response
        top = [n for n, row in numbered[:2] if any(str(v).startswith(QUALTRICS_IMPORT_ID) for v in row.values())]
        return "qualtrics", numbered[top[0] - 1:] if top else numbered
    if "WorkerId" in header and "HITId" in header:
        return "mturk", numbered
    if "PROLIFIC_PID" in header or "Participant id" in header:
        return "prolific", numbered
    return "csv", numbered


def read_survey(path: Path, plan: Plan, encoding: str | None = None, tally: Tally | None = None) -> list[Answer]:
    """The answers of the valid rows; rows without valid work (`no_valid_work`, or no worker id or
    assignment) are counted in `tally`, never a reason to refuse the others."""
    try:
        rows = read_rows(path, encoding=encoding)
    except DatasetError as err:
        raise CrowdError(err.message, err.fix) from None
    if not rows:
        raise CrowdError(f"{path}: no rows")
    # Mechanical Turk copies tasks.csv's cells into `Input.<column>`: modlens's `'` before a formula character comes off
    rows = [{k: csvcells.restore(v) if str(k).startswith("Input.") else v for k, v in row.items()} for row in rows]
    platform, numbered = platform_rows(path, rows)
    header = set(rows[0])
    if not header & set(WORKER_COLUMNS) or not header & set(ASSIGNMENT_COLUMNS):
        raise CrowdError(f"{path}: needs a worker id column ({' / '.join(WORKER_COLUMNS)}) and an assignment column "
                         f"({' / '.join(ASSIGNMENT_COLUMNS)}); read as {platform}",
                         fix="export the results of the survey that recorded `assignment` (docs/MULTI.md)")
    if platform == "qualtrics":
        _numeric_qualtrics(path, numbered, plan)
    tally = tally if tally is not None else Tally()
    tally.records = "rows"
    names = {q.name for q in questions(plan.study)}
    out = []
    unfinished = unanswered = 0
    for n, row in numbered:
        why = no_valid_work(platform, row)
        worker, unit = _column(row, WORKER_COLUMNS), _column(row, ASSIGNMENT_COLUMNS)
        if why is None and (worker is None or unit is None):
            why = f"{PLATFORM_NAMES.get(platform, 'survey')} row without a worker id or an assignment"
        if why is not None:
            tally.skipped[why] += 1
            if worker is not None and unit is not None:
                tally.no_work.append((worker, unit, why))
            continue
        assert worker is not None and unit is not None
        found = task_and_order(plan, unit)
        order = found[1] if found else []
        per: dict[int, dict[str, str]] = {}
        for col, value in row.items():
            head, _, question = str(col or "").removeprefix("Answer.").partition("_")
            if head.startswith("item") and head[4:].isdigit() and question in names and str(value or "").strip():
                per.setdefault(int(head[4:]), {})[question] = str(value).strip()
        positions = range(1, max([len(order), *per]) + 1 if (order or per) else 1)
        for pos in positions:
            ref = order[pos - 1] if pos <= len(order) else f"#{pos}"
            out.append(Answer(worker, unit, ref, per.get(pos, {}), f"{path.name}:{n} item{pos}"))
        if platform == "qualtrics" and str(row.get("Finished") or "").strip().lower() == "false":
            unfinished += 1
            unanswered += sum(pos not in per for pos in positions)
    if unfinished:
        tally.notes.append(f"{unfinished} unfinished response{'s' if unfinished > 1 else ''} (Finished False): "
                           f"{'its' if unfinished == 1 else 'their'} {unanswered} unanswered comments count as missed")
    return out
