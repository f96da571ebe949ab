"""Survey platforms' result CSVs as `modlens rate` reads them, recognized by their headers and read
through the dataset readers (byte-order mark, `;` or tab, `--encoding`):

- Amazon Mechanical Turk's batch results: `WorkerId`, `AssignmentStatus`, `Input.<column of
  tasks.csv>`, `Answer.<form field>`; rejected assignments are left out.
- Qualtrics' CSV download: three header rows (export names, question texts, `{"ImportId": …}`);
  the two under the names are dropped. The worker is the embedded `PROLIFIC_PID` or `workerId`
  where the survey recorded one, else Qualtrics' `ResponseId`.
- Prolific: answers come from the survey that hosted the study, with `PROLIFIC_PID` from the study
  URL; Prolific's own export names it `Participant id`.
- Anything else with a worker column and `item<N>_<question>` answers (`form.html`'s pasted rows).

The assignment is in `Input.assignment` or `assignment` (a slot such as `t01-r2`, or a task id);
answers in `[Answer.]item<N>_<question>`, N the 1-based position in that unit's order.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from modlens.datasets.base import DatasetError, read_rows
from modlens.study.assignment import Plan
from modlens.study.crowd import LS_JSON, POTATO_FIX, Answer, CrowdError, questions, task_and_order
from modlens.studylog import csvcells

# first non-empty wins: a platform's own worker id before a survey tool's response id
WORKER_COLUMNS = ("WorkerId", "workerId", "worker_id", "PROLIFIC_PID", "Participant id", "participant_id",
                  "ResponseId")
ASSIGNMENT_COLUMNS = ("Input.assignment", "assignment")
QUALTRICS_IMPORT_ID = '{"ImportId"'


def _column(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    return next((str(row[c]).strip() for c in names if str(row.get(c) or "").strip()), None)


def platform_rows(path: Path, rows: list[dict[str, Any]]) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """(platform, [(line number, row)]) of the rows that hold answers; other tools' CSV exports refused."""
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
        return "mturk", [(n, r) for n, r in numbered if str(r.get("AssignmentStatus") or "") != "Rejected"]
    if "PROLIFIC_PID" in header or "Participant id" in header:
        return "prolific", numbered
    return "csv", numbered


def read_survey(path: Path, plan: Plan, encoding: str | None = None) -> list[Answer]:
    try:
        rows = read_rows(path, encoding=encoding)
    except DatasetError as err:
        raise CrowdError(err.message, err.fix) from None
    if not rows:
        raise CrowdError(f"{path}: no rows")
    # Mechanical Turk copies tasks.csv's cells into `Input.<column>`: modlens's `'` before a formula character comes off
    rows = [{k: csvcells.restore(v) if str(k).startswith("Input.") else v for k, v in row.items()} for row in rows]
    platform, numbered = platform_rows(path, rows)
    names = {q.name for q in questions(plan.study)}
    out = []
    for n, row in numbered:
        worker, unit = _column(row, WORKER_COLUMNS), _column(row, ASSIGNMENT_COLUMNS)
        if worker is None or unit is None:
            raise CrowdError(f"{path}:{n}: needs a worker id ({' / '.join(WORKER_COLUMNS)}) and an assignment "
                             f"({' / '.join(ASSIGNMENT_COLUMNS)}); read as {platform}")
        found = task_and_order(plan, unit)
        order = found[1] if found else []
        per: dict[int, dict[str, str]] = {}
        for col, value in row.items():
            head, _, question = str(col or "").removeprefix("Answer.").partition("_")
            if head.startswith("item") and head[4:].isdigit() and question in names and str(value or "").strip():
                per.setdefault(int(head[4:]), {})[question] = str(value).strip()
        for pos in range(1, max([len(order), *per]) + 1 if (order or per) else 1):
            ref = order[pos - 1] if pos <= len(order) else f"#{pos}"
            out.append(Answer(worker, unit, ref, per.get(pos, {}), f"{path.name}:{n} item{pos}"))
    return out
