"""Crowd platforms, both ways: an item-set study's assignments exported as Label Studio tasks and
labeling config, as a Potato project, and as a CSV plus a self-contained HTML form for survey
platforms (Amazon Mechanical Turk, Prolific); their exports read back as ratings (docs/MULTI.md).

The questions are the study's: one single-choice question per attribute (toxicity only in
`direct` mode), and in `anchors` mode the two anchor comparisons `vs_hard` and `vs_extreme`
(more / less / same). Every rated comment is identified by its assignment id and order entry
(`assignment.py`), so each worker's ratings are grouped into the task the acceptance rules judge.

Reading back (`read_answers`): Label Studio's JSON export (tasks with `annotations[]`, each with
`completed_by` and `result[]` of `choices`; cancelled annotations are skipped), Potato's
annotation output (`<output dir>/<user>/annotated_instances.jsonl`, one JSON object per line with
`id` and `label_annotations`), and the survey CSV (one row per submitted assignment: a worker id
column `WorkerId`, `worker_id`, `PROLIFIC_PID` or `participant_id`, the assignment in
`Input.assignment` or `assignment`, answers in `Answer.item<N>_<question>` or `item<N>_<question>`,
N the 1-based position in the assignment's order). Each worker becomes rater `<format>:<worker>`.
"""
from __future__ import annotations

import csv
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from modlens.config import StudyConfig
from modlens.datasets.base import DatasetError, read_rows
from modlens.study.assignment import GOLD, Plan

FORMATS = ("labelstudio", "potato", "survey")
ANCHOR_QUESTIONS = ("vs_hard", "vs_extreme")
COMPARISONS = ["more", "less", "same"]
SEP = "::"   # Potato instance id: <assignment>::<order entry>
WORKER_COLUMNS = ("WorkerId", "worker_id", "PROLIFIC_PID", "participant_id")
ASSIGNMENT_COLUMNS = ("Input.assignment", "assignment")


class CrowdError(ValueError):
    """A file that cannot be read as the format named, with what to fix."""


@dataclass(frozen=True)
class Question:
    name: str
    label: str
    choices: list[str]


def questions(study: StudyConfig) -> list[Question]:
    anchors = study.toxicity_mode == "anchors"
    out = [Question(a.name, f"{a.label}: {a.definition}", list(a.levels)) for a in study.attributes
           if not (anchors and a.name == "toxicity")]
    if anchors:
        hard = next(a for a in study.anchors if a.role == "hard_to_say")
        extreme = next(a for a in study.anchors if a.role == "extreme")
        out += [Question("vs_hard", f"Is the comment more, less or the same toxic as this one: “{hard.text}”?",
                         COMPARISONS),
                Question("vs_extreme", f"Is the comment more, less or the same toxic as this one: “{extreme.text}”?",
                         COMPARISONS)]
    return out


# --- export -----------------------------------------------------------------------------------

def _units(plan: Plan) -> list[dict[str, Any]]:
    return [{"assignment": a["id"], "task": a["task"], "position": n, "ref": ref, "text": plan.text(ref)}
            for a in plan.assignment["assignments"] for n, ref in enumerate(a["order"], 1)]


def export_labelstudio(plan: Plan, out: Path) -> list[Path]:
    """tasks.json (one Label Studio task per assignment and comment) and config.xml."""
    qs = questions(plan.study)
    parts = ["<View>", '  <Header value="Assignment $assignment, comment $position"/>', '  <Text name="text" value="$text"/>']
    for q in qs:
        parts.append(f"  <Header value={quoteattr(q.label)}/>")
        parts.append(f'  <Choices name="{q.name}" toName="text" choice="single" required="true">')
        parts += [f"    <Choice value={quoteattr(c)}/>" for c in q.choices]
        parts.append("  </Choices>")
    parts.append("</View>")
    out.mkdir(parents=True, exist_ok=True)
    tasks = [{"data": u} for u in _units(plan)]
    (out / "tasks.json").write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "config.xml").write_text("\n".join(parts) + "\n", encoding="utf-8")
    return [out / "tasks.json", out / "config.xml"]


def export_potato(plan: Plan, out: Path) -> list[Path]:
    """config.yaml and data/items.jsonl of a Potato project (annotations go to annotation_output/)."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dependency

    config = {
        "annotation_task_name": plan.study.title, "server_name": "modlens item-set study", "port": 8000,
        "data_files": ["data/items.jsonl"], "item_properties": {"id_key": "id", "text_key": "text"},
        "output_annotation_dir": "annotation_output/", "output_annotation_format": "jsonl",
        "user_config": {"allow_all_users": True, "users": []}, "alert_time_each_instance": 10_000_000,
        "annotation_schemes": [{"annotation_type": "radio", "name": q.name, "description": q.label,
                                "labels": q.choices} for q in questions(plan.study)],
        "html_layout": "default", "base_html_template": "default", "header_file": "default", "site_dir": "default",
    }
    (out / "data").mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"{u['assignment']}{SEP}{u['ref']}", "text": u["text"], "assignment": u["assignment"]},
                        ensure_ascii=False) for u in _units(plan)]
    (out / "data" / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return [out / "config.yaml", out / "data" / "items.jsonl"]


FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font:15px/1.4 system-ui,sans-serif;max-width:46em;margin:1em auto;padding:0 1em}}
.c{{border:1px solid #bbb;border-radius:6px;padding:.6em 1em;margin:1em 0}} .t{{font-size:1.1em;margin:.4em 0}}
fieldset{{border:0;padding:.2em 0}} legend{{font-weight:600}} textarea{{width:100%;height:6em}}</style></head>
<body><h1>{title}</h1>
<p>Rate each comment. Some comments are attention checks with known answers.</p>
<form id="f" method="post">
<input type="hidden" name="assignment" id="assignment" value="${{assignment}}">
<input type="hidden" name="assignmentId" id="assignmentId" value="">
<div id="items"></div><button type="submit">Submit</button></form>
<textarea id="row" hidden readonly></textarea>
<script type="application/json" id="data">{data}</script>
<script>
// Self-contained: Mechanical Turk fills ${{assignment}} from tasks.csv; elsewhere ?assignment=ID picks one.
const D = JSON.parse(document.getElementById('data').textContent);
const q = new URLSearchParams(location.search);
let a = document.getElementById('assignment').value;
if (!D.assignments[a]) a = q.get('assignment') || '';
document.getElementById('assignment').value = a;
const box = document.getElementById('items');
if (!D.assignments[a]) box.textContent = 'Unknown assignment: open this form with ?assignment=ID.';
else D.assignments[a].forEach((text, i) => {{
  const c = document.createElement('div'); c.className = 'c';
  const t = document.createElement('div'); t.className = 't'; t.textContent = (i + 1) + '. ' + text; c.appendChild(t);
  D.questions.forEach(qu => {{
    const fs = document.createElement('fieldset'); const lg = document.createElement('legend');
    lg.textContent = qu.label; fs.appendChild(lg);
    qu.choices.forEach(ch => {{
      const l = document.createElement('label'); const r = document.createElement('input');
      r.type = 'radio'; r.required = true; r.name = 'item' + (i + 1) + '_' + qu.name; r.value = ch;
      l.appendChild(r); l.appendChild(document.createTextNode(' ' + ch + ' ')); fs.appendChild(l);
    }});
    c.appendChild(fs);
  }});
  box.appendChild(c);
}});
const turk = q.get('turkSubmitTo');
document.getElementById('f').addEventListener('submit', ev => {{
  if (turk) {{  // an ExternalQuestion: post to Mechanical Turk, which writes Answer.* columns
    document.getElementById('assignmentId').value = q.get('assignmentId') || '';
    ev.target.action = turk + '/mturk/externalSubmit'; return;
  }}
  ev.preventDefault();  // elsewhere: the answers as one CSV row, to paste into the survey
  const fd = [...new FormData(ev.target).entries()].filter(([k]) => k !== 'assignmentId');
  const cell = v => '"' + String(v).replace(/"/g, '""') + '"';
  const row = document.getElementById('row'); row.hidden = false;
  row.value = fd.map(([k]) => cell(k)).join(',') + '\\n' + fd.map(([, v]) => cell(v)).join(',');
}});
</script></body></html>
"""


def export_survey(plan: Plan, out: Path) -> list[Path]:
    """tasks.csv (one row per assignment: its id and each position's order entry and text) and
    form.html (no external resources; the comments are embedded, picked by assignment)."""
    out.mkdir(parents=True, exist_ok=True)
    width = max(len(a["order"]) for a in plan.assignment["assignments"])
    header = ["assignment", "task"] + [f"item{n}_{c}" for n in range(1, width + 1) for c in ("ref", "text")]
    with (out / "tasks.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for a in plan.assignment["assignments"]:
            cells = [v for ref in a["order"] for v in (ref, plan.text(ref))]
            w.writerow([a["id"], a["task"], *cells, *[""] * (len(header) - 2 - len(cells))])
    data = {"questions": [q.__dict__ for q in questions(plan.study)],
            "assignments": {a["id"]: [plan.text(r) for r in a["order"]] for a in plan.assignment["assignments"]}}
    embedded = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    (out / "form.html").write_text(FORM.format(title=html.escape(plan.study.title), data=embedded), encoding="utf-8")
    return [out / "tasks.csv", out / "form.html"]


EXPORTERS = {"labelstudio": export_labelstudio, "potato": export_potato, "survey": export_survey}


def export(plan: Plan, fmt: str, out: str | Path) -> list[Path]:
    if fmt not in EXPORTERS:
        raise CrowdError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    return EXPORTERS[fmt](plan, Path(out))


# --- import -----------------------------------------------------------------------------------

@dataclass
class Answer:
    """One worker's answers to one comment of one assignment, as the platform exported them."""
    worker: str
    assignment: str
    ref: str
    answers: dict[str, str] = field(default_factory=dict)   # question name -> choice
    where: str = ""                                          # for messages: file and record


def detect(path: Path) -> str:
    if path.is_dir() or path.suffix == ".jsonl":
        return "potato"
    if path.suffix == ".csv":
        return "survey"
    if path.suffix == ".json":
        return "labelstudio"
    raise CrowdError(f"{path}: cannot tell the format from the name — fix: pass --format "
                     f"({', '.join(FORMATS)})")


def _worker(value: Any) -> str:
    if isinstance(value, dict):  # newer Label Studio exports expand the user
        value = value.get("email") or value.get("id")
    if value in (None, ""):
        raise CrowdError("annotation without completed_by: no worker to credit it to")
    return str(value)


def read_labelstudio(path: Path) -> list[Answer]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise CrowdError(f"{path}: not JSON ({err}); give Label Studio's JSON export") from None
    if not isinstance(tasks, list):
        raise CrowdError(f"{path}: a Label Studio JSON export is a list of tasks")
    out = []
    for n, task in enumerate(tasks):
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict) or "assignment" not in data or "ref" not in data:
            raise CrowdError(f"{path}: task {n}: data has no assignment/ref — fix: import the tasks "
                             "`modlens study export-tasks --format labelstudio` wrote")
        for ann in task.get("annotations") or []:
            if ann.get("was_cancelled"):
                continue
            answers = {}
            for res in ann.get("result") or []:
                choices = (res.get("value") or {}).get("choices") or []
                if res.get("type", "choices") == "choices" and choices:
                    answers[str(res.get("from_name"))] = str(choices[0])
            out.append(Answer(_worker(ann.get("completed_by")), str(data["assignment"]), str(data["ref"]), answers,
                              f"{path.name}: task {task.get('id', n)}"))
    return out


def _potato_choice(value: Any) -> str | None:
    """A radio scheme's annotation: {label: value}; the chosen label is the key."""
    if isinstance(value, dict):
        keys = [k for k, v in value.items() if v not in (None, "", False)]
        return str(keys[0]) if len(keys) == 1 else None
    return None if value in (None, "") else str(value)


def read_potato(path: Path) -> list[Answer]:
    files = sorted(path.glob("*/annotated_instances.jsonl")) if path.is_dir() else [path]
    if not files:
        raise CrowdError(f"{path}: no <user>/annotated_instances.jsonl under it — fix: give Potato's "
                         "output_annotation_dir (output_annotation_format: jsonl)")
    out = []
    for f in files:
        worker = f.parent.name
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as err:
                raise CrowdError(f"{f}:{n}: not JSON ({err})") from None
            assignment, sep, ref = str(rec.get("id", "")).partition(SEP)
            if not sep:
                raise CrowdError(f"{f}:{n}: id {rec.get('id')!r} is not <assignment>{SEP}<item> — fix: annotate "
                                 "the data `modlens study export-tasks --format potato` wrote")
            answers = {k: c for k, v in (rec.get("label_annotations") or {}).items()
                       if (c := _potato_choice(v)) is not None}
            out.append(Answer(worker, assignment, ref, answers, f"{f.parent.name}/{f.name}:{n}"))
    return out


def _column(row: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((row[c].strip() for c in names if row.get(c, "").strip()), None)


def read_survey(path: Path, plan: Plan, encoding: str | None = None) -> list[Answer]:
    # the dataset readers' file handling: a survey platform's or Excel's CSV (BOM, `;`, broken quotes,
    # a declared encoding such as cp1252)
    try:
        rows = read_rows(path, encoding=encoding)
    except DatasetError as err:
        raise CrowdError(str(err)) from None
    if not rows:
        raise CrowdError(f"{path}: no rows")
    names = {q.name for q in questions(plan.study)}
    out = []
    for n, row in enumerate(rows, 2):
        worker, assignment = _column(row, WORKER_COLUMNS), _column(row, ASSIGNMENT_COLUMNS)
        if worker is None or assignment is None:
            raise CrowdError(f"{path}:{n}: needs a worker id ({' / '.join(WORKER_COLUMNS)}) and an assignment "
                             f"({' / '.join(ASSIGNMENT_COLUMNS)})")
        order = plan.assignments.get(assignment, {}).get("order", [])
        per: dict[int, dict[str, str]] = {}
        for col, value in row.items():
            name = (col or "").removeprefix("Answer.")
            head, _, question = name.partition("_")
            if head.startswith("item") and head[4:].isdigit() and question in names and (value or "").strip():
                per.setdefault(int(head[4:]), {})[question] = value.strip()
        for pos in range(1, max([len(order), *per]) + 1 if (order or per) else 1):
            ref = order[pos - 1] if pos <= len(order) else f"#{pos}"
            out.append(Answer(worker, assignment, ref, per.get(pos, {}), f"{path.name}:{n} item{pos}"))
    return out


def read_answers(path: str | Path, fmt: str, plan: Plan, encoding: str | None = None) -> list[Answer]:
    """`encoding`: the survey CSV's, when it has no byte-order mark and is not UTF-8 (`--encoding`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")  # `modlens rate`: exit 3, not found
    if fmt == "labelstudio":
        return read_labelstudio(path)
    if fmt == "potato":
        return read_potato(path)
    if fmt == "survey":
        return read_survey(path, plan, encoding)
    raise CrowdError(f"format {fmt!r}: one of {', '.join(FORMATS)}")


def as_rating(answer: Answer, study: StudyConfig) -> tuple[dict[str, str], dict[str, str] | None] | None:
    """(values, anchors) of an answer; None when nothing was answered (a miss)."""
    values = {k: v for k, v in answer.answers.items() if k not in ANCHOR_QUESTIONS}
    given = {k: answer.answers[k] for k in ANCHOR_QUESTIONS if k in answer.answers}
    if not values and not given:
        return None
    anchors = {"vs_hard": given.get("vs_hard", ""), "vs_extreme": given.get("vs_extreme", "")} if given else None
    return values, anchors


def unknown_ref(answer: Answer, plan: Plan) -> str | None:
    a = plan.assignments.get(answer.assignment)
    if a is None:
        return f"{answer.where}: assignment {answer.assignment!r} is not in assignment.json"
    if answer.ref not in a["order"]:
        return f"{answer.where}: {answer.ref!r} is not a comment of assignment {answer.assignment!r}"
    return None


__all__ = ["FORMATS", "GOLD", "Answer", "CrowdError", "Question", "as_rating", "detect", "export", "questions",
           "read_answers", "unknown_ref"]
