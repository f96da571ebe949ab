"""Crowd platforms, both ways: an item-set study's tasks exported as a Label Studio project, as
a Potato project, and as a CSV plus a self-contained HTML form for survey platforms (Amazon
Mechanical Turk, Prolific, Qualtrics); their exports read back as ratings (docs/MULTI.md).

The questions are the study's: one single-choice question per attribute (toxicity only in
`direct` mode), and in `anchors` mode the two anchor comparisons `vs_hard` and `vs_extreme`
(more / less / same).

Who rates what: Label Studio and Potato hand work out through their own queues (Label Studio's
"Label All Tasks", Potato's next-instance), which nothing binds to one of our rater slots. So
their exports hold one unit per task and comment (named by an opaque id, units.py, so nothing a
rater sees marks a gold comment), the tool is told to collect
`--raters` annotations per unit (Label Studio's `maximum_annotations`, Potato's
`num_annotators_per_item`), and the import binds whoever rated a unit to it: a worker's ratings
are grouped by task and the acceptance rules judge each worker on what they rated. The survey
keeps one row per slot (`t01-r1`: one link or HIT per slot). The reader accepts either id.

Reading back (`rate_import.read_answers` dispatches here): Label Studio's JSON export (tasks with `annotations[]`, each with
`completed_by` and `result[]` of `choices`; cancelled and skipped ones are counted, not read; an
annotation another user updated is the updater's); Potato's
`annotation_output/` folder (`<user>/user_state.json`, answers under
`instance_id_to_label_to_value`), its exporter's JSONL (`python -m potato.export -f jsonl`:
`instance_id`, `user_id`, `labels`) or a Potato 1.x `annotated_instances.jsonl`; and the survey
CSV (`survey.py`). Other exports of these tools are refused naming the one to choose. Each worker
becomes rater `<format>:<worker>`.
"""
from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from modlens.config import StudyConfig
from modlens.errors import ModlensError
from modlens.study.assignment import GOLD, Plan
from modlens.studylog import csvcells

FORMATS = ("labelstudio", "potato", "survey")
ANCHOR_QUESTIONS = ("vs_hard", "vs_extreme")
COMPARISONS = ["more", "less", "same"]
SEP = "::"   # Potato instance ids of exports before unit ids: <task or assignment>::<order entry>


class CrowdError(ModlensError, ValueError):
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

def _task_units(plan: Plan) -> list[dict[str, Any]]:
    """One unit per task and comment, in the order of the task's first slot: what a queue-driven
    tool hands to `raters` different annotators. `unit` is the opaque id raters see (units.py: no
    field says which comment is gold); `ref`, the order entry, stays with the coordinator."""
    from modlens.study.units import unit_id

    first: dict[str, list[str]] = {}
    for a in plan.assignment["assignments"]:
        first.setdefault(a["task"], a["order"])
    return [{"task": task, "position": n, "unit": unit_id(plan, task, ref), "ref": ref, "text": plan.text(ref)}
            for task, order in first.items() for n, ref in enumerate(order, 1)]


def raters_per_unit(plan: Plan) -> int:
    return int(plan.assignment["params"]["raters"])


def export_labelstudio(plan: Plan, out: Path) -> list[Path]:
    """tasks.json (one Label Studio task per task and comment), config.xml and project.json (the
    project settings: `maximum_annotations` = raters, so Label Studio's queue gives each task to
    that many different annotators)."""
    qs = questions(plan.study)
    parts = ["<View>", '  <Header value="Task $task, comment $position"/>', '  <Text name="text" value="$text"/>']
    for q in qs:
        parts.append(f"  <Header value={quoteattr(q.label)}/>")
        parts.append(f'  <Choices name="{q.name}" toName="text" choice="single" required="true">')
        parts += [f"    <Choice value={quoteattr(c)}/>" for c in q.choices]
        parts.append("  </Choices>")
    parts.append("</View>")
    out.mkdir(parents=True, exist_ok=True)
    tasks = [{"data": {k: v for k, v in u.items() if k != "ref"}} for u in _task_units(plan)]
    config = "\n".join(parts) + "\n"
    # the fields of Label Studio's project API (POST /api/projects): Community 1.23.2's settings pages
    # have no overlap setting, so `maximum_annotations` reaches the project only through this call
    project = {"title": plan.study.title, "label_config": config, "maximum_annotations": raters_per_unit(plan),
               "overlap_cohort_percentage": 100, "show_overlap_first": True}
    (out / "tasks.json").write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "config.xml").write_text(config, encoding="utf-8")
    (out / "project.json").write_text(json.dumps(project, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [out / "tasks.json", out / "config.xml", out / "project.json"]


def export_potato(plan: Plan, out: Path) -> list[Path]:
    """config.yaml and data/items.jsonl of a Potato 2.x project (annotations go to annotation_output/):
    only keys Potato 2.12 reads (it warns on unknown ones); `num_annotators_per_item` = raters."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dependency

    config = {
        # Potato binds 0.0.0.0 unless told: its `host` key keeps comments and answers on this computer
        "annotation_task_name": plan.study.title, "host": "127.0.0.1", "port": 8000,
        "data_files": ["data/items.jsonl"], "item_properties": {"id_key": "id", "text_key": "text"},
        "output_annotation_dir": "annotation_output/", "num_annotators_per_item": raters_per_unit(plan),
        "user_config": {"allow_all_users": True, "users": []}, "alert_time_each_instance": 10_000_000,
        "annotation_schemes": [{"annotation_type": "radio", "name": q.name, "description": q.label,
                                "labels": q.choices} for q in questions(plan.study)],
        "base_html_template": "default", "header_file": "default", "site_dir": "default",
    }
    (out / "data").mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": u["unit"], "text": u["text"], "task": u["task"]},
                        ensure_ascii=False) for u in _task_units(plan)]
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


# Inside <script>, the HTML parser ends the element at `</script` and enters an escaped state at `<!--`
# (where a later `<script>` keeps the real `</script>` from closing it: the page's code never runs).
# JSON lets every character of a string be a \u escape, so none of these reach the parser; U+2028 and
# U+2029 are escaped as well, for JavaScript parsers older than ES2019 that end a line there.
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                   0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(data: Any) -> str:
    """JSON to embed in an HTML <script> element: no text in it can end the script or open a comment."""
    return json.dumps(data, ensure_ascii=False).translate(_SCRIPT_ESCAPES)


def export_survey(plan: Plan, out: Path) -> list[Path]:
    """tasks.csv (one row per assignment: its id and each position's unit id and text) and
    form.html (no external resources; the comments are embedded, picked by assignment)."""
    from modlens.study.units import unit_id

    out.mkdir(parents=True, exist_ok=True)
    width = max(len(a["order"]) for a in plan.assignment["assignments"])
    header = ["assignment", "task"] + [f"item{n}_{c}" for n in range(1, width + 1) for c in ("id", "text")]
    with (out / "tasks.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csvcells.writer(fh)  # a comment a spreadsheet would run opens as text
        w.writerow(header)
        for a in plan.assignment["assignments"]:
            cells = [v for ref in a["order"] for v in (unit_id(plan, a["task"], ref), plan.text(ref))]
            w.writerow([a["id"], a["task"], *cells, *[""] * (len(header) - 2 - len(cells))])
    data = {"questions": [q.__dict__ for q in questions(plan.study)],
            "assignments": {a["id"]: [plan.text(r) for r in a["order"]] for a in plan.assignment["assignments"]}}
    (out / "form.html").write_text(FORM.format(title=html.escape(plan.study.title), data=script_json(data)),
                                   encoding="utf-8")
    return [out / "tasks.csv", out / "form.html"]


EXPORTERS = {"labelstudio": export_labelstudio, "potato": export_potato, "survey": export_survey}


def export(plan: Plan, fmt: str, out: str | Path) -> list[Path]:
    if fmt not in EXPORTERS:
        raise CrowdError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    return EXPORTERS[fmt](plan, Path(out))


# --- import -----------------------------------------------------------------------------------

@dataclass
class Answer:
    """One worker's answers to one comment, as the platform exported them. `assignment` is the unit
    the file names: a slot (`t01-r2`, survey rows) or a task (`t01`, the queue-driven tools)."""
    worker: str
    assignment: str
    ref: str
    answers: dict[str, str] = field(default_factory=dict)   # question name -> choice
    where: str = ""                                          # for messages: file and record


@dataclass
class Tally:
    """What a reader did besides reading answers, for the import's summary: records (rows,
    annotations, user states) that carry no valid work, left out and counted by kind as the
    platform names it ("Prolific Status RETURNED"), and lines about what it did with others.
    `no_work`: (worker, unit, why) of each such record that names its worker and unit, so an import
    can tell a submission the platform rejected after an earlier import had stored it."""
    records: str = "records"
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    no_work: list[tuple[str, str, str]] = field(default_factory=list)


def detect(path: Path) -> str:
    if path.is_dir() or path.suffix == ".jsonl":
        return "potato"
    if path.suffix in (".csv", ".tsv"):
        return "survey"
    if path.suffix == ".json":
        return "labelstudio"
    raise CrowdError(f"{path}: cannot tell the format from the name", fix=f"pass --format ({', '.join(FORMATS)})")


LS_JSON = "export the project as JSON (Export > JSON, or /api/projects/ID/export?exportType=JSON)"


def _worker(value: Any) -> str:
    if isinstance(value, dict):  # newer Label Studio exports expand the user
        value = value.get("email") or value.get("id")
    if value in (None, ""):
        raise CrowdError("annotation without completed_by: no worker to credit it to")
    return str(value)


def _user_id(value: Any) -> Any:
    return value.get("id") if isinstance(value, dict) else value


def _edited_by_other(ann: dict[str, Any]) -> bool:
    """An annotation another user opened and saved (Label Studio's Update sets `updated_by`, keeps
    `completed_by`). One created on someone's behalf (the API's `completed_by`) also has another
    `updated_by`, its creator, but no later change: `updated_at` within a second of `created_at`."""
    from datetime import datetime

    editor, author = ann.get("updated_by"), _user_id(ann.get("completed_by"))
    if editor in (None, "") or str(editor) == str(author):
        return False
    try:
        created = datetime.fromisoformat(str(ann["created_at"]).replace("Z", "+00:00"))
        updated = datetime.fromisoformat(str(ann["updated_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return True
    return (updated - created).total_seconds() > 1


def read_labelstudio(path: Path, tally: Tally | None = None) -> list[Answer]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise CrowdError(f"{path}: not JSON ({err})", fix=LS_JSON) from None
    if not isinstance(tasks, list):
        raise CrowdError(f"{path}: a Label Studio JSON export is a list of tasks", fix=LS_JSON)
    tally = tally if tally is not None else Tally()
    tally.records = "annotations"
    # a user id -> the worker name their own annotations carry (an expanded completed_by: the e-mail)
    names = {str(_user_id(a.get("completed_by"))): _worker(a.get("completed_by")) for t in tasks if isinstance(t, dict)
             for a in t.get("annotations") or [] if isinstance(a, dict) and a.get("completed_by") not in (None, "")}
    edited = 0
    out = []
    for n, task in enumerate(tasks):
        data = task.get("data") if isinstance(task, dict) else None
        if isinstance(task, dict) and data is None and "annotator" in task:
            # JSON-MIN: the task's data and one annotation's choices flattened into one object
            raise CrowdError(f"{path}: Label Studio's JSON-MIN export (no data/annotations)", fix=LS_JSON)
        unit = (data.get("task") if "assignment" not in data else data["assignment"]) if isinstance(data, dict) else None
        ref = (data.get("unit") or data.get("ref")) if isinstance(data, dict) else None  # `ref`: an export before unit ids
        if unit is None or ref is None:
            raise CrowdError(f"{path}: task {n}: data has no task/unit",
                             fix="import the tasks `modlens study export-tasks --format labelstudio` wrote")
        assert isinstance(data, dict)
        for ann in task.get("annotations") or []:
            if ann.get("was_cancelled"):  # skipped in the editor ("Skip"), or cancelled
                tally.skipped["Label Studio was_cancelled (skipped)"] += 1
                continue
            answers = {}
            for res in ann.get("result") or []:
                choices = (res.get("value") or {}).get("choices") or []
                if res.get("type", "choices") == "choices" and choices:
                    answers[str(res.get("from_name"))] = str(choices[0])
            worker = _worker(ann.get("completed_by"))
            if _edited_by_other(ann):  # the answers are the editor's now: credited to them
                edited += 1
                worker = names.get(str(ann["updated_by"]), str(ann["updated_by"]))
            out.append(Answer(worker, str(unit), str(ref), answers, f"{path.name}: task {task.get('id', n)}"))
    if edited:
        tally.notes.append(f"{edited} annotation{'s' if edited > 1 else ''} last updated by another user than "
                           "completed_by: credited to the one who updated it (updated_by)")
    return out


def _potato_choice(value: Any) -> str | None:
    """A radio scheme's annotation: {label: value}; the chosen label is the key."""
    if isinstance(value, dict):
        keys = [k for k, v in value.items() if v not in (None, "", False)]
        return str(keys[0]) if len(keys) == 1 else None
    return None if value in (None, "") else str(value)


POTATO_FIX = ("give Potato's annotation_output/ folder, or its JSONL export "
              "(`python -m potato.export -c config.yaml -f jsonl`)")


def _potato_unit(instance_id: Any, where: str) -> tuple[str, str]:
    """(task, unit id or order entry) of an instance: a unit id (`units.resolve` finds its task) or,
    in projects exported before unit ids, `<task>::<order entry>`."""
    unit, sep, ref = str(instance_id or "").partition(SEP)
    if not sep:
        if not unit:
            raise CrowdError(f"{where}: an instance without an id",
                             fix="annotate the data `modlens study export-tasks --format potato` wrote")
        return "", unit
    return unit, ref


def _potato_state(f: Path, tally: Tally) -> list[Answer]:
    """Potato 2.x's per-user state: `instance_id_to_label_to_value` maps each instance to
    [[{"schema", "name"}, value], ...], one pair per label set. A state whose `origin` names a
    machine (Potato's declared machine annotators; absent or empty means a person) or whose
    `prestudy_passed` is false (screened out by the project's prestudy) carries no valid work."""
    try:
        state = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as err:
        raise CrowdError(f"{f}: not JSON ({err})") from None
    if state.get("origin"):
        tally.skipped["Potato origin: a machine annotator"] += 1
        return []
    if state.get("prestudy_passed") is False:
        tally.skipped["Potato prestudy_passed false (screened out)"] += 1
        return []
    worker = str(state.get("user_id") or f.parent.name)
    out = []
    for iid, pairs in (state.get("instance_id_to_label_to_value") or {}).items():
        where = f"{f.parent.name}/{f.name}: {iid}"
        labels: dict[str, dict[str, Any]] = {}
        for label, value in pairs:
            labels.setdefault(str(label["schema"]), {})[str(label["name"])] = value
        unit, ref = _potato_unit(iid, where)
        answers = {k: c for k, v in labels.items() if (c := _potato_choice(v)) is not None}
        out.append(Answer(worker, unit, ref, answers, where))
    return out


def _potato_lines(f: Path) -> list[Answer]:
    """A JSONL of Potato's: its exporter's (`instance_id`, `user_id`, `labels`) or 1.x's
    `<user>/annotated_instances.jsonl` (`id`, `label_annotations`)."""
    out = []
    for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as err:
            raise CrowdError(f"{f}:{n}: not JSON ({err})") from None
        where = f"{f.parent.name}/{f.name}:{n}"
        if "action_type" in rec:
            raise CrowdError(f"{f}: Potato's annotation history (every click, not the answers)", fix=POTATO_FIX)
        if "instance_id" in rec and "labels" in rec:
            worker, iid, labels = rec.get("user_id"), rec["instance_id"], rec["labels"]
        elif "id" in rec and "label_annotations" in rec:
            worker, iid, labels = f.parent.name, rec["id"], rec["label_annotations"]
        else:
            raise CrowdError(f"{f}:{n}: not a Potato annotation record (keys {sorted(rec)[:6]})", fix=POTATO_FIX)
        if not worker:
            raise CrowdError(f"{f}:{n}: no user_id: no worker to credit it to")
        unit, ref = _potato_unit(iid, where)
        answers = {k: c for k, v in (labels or {}).items() if (c := _potato_choice(v)) is not None}
        out.append(Answer(str(worker), unit, ref, answers, where))
    return out


def read_potato(path: Path, tally: Tally | None = None) -> list[Answer]:
    tally = tally if tally is not None else Tally()
    tally.records = "user states"
    if not path.is_dir():
        return _potato_lines(path)
    states = sorted(path.glob("*/user_state.json"))
    if states:
        return [a for f in states for a in _potato_state(f, tally)]
    legacy = sorted(path.glob("*/annotated_instances.jsonl"))
    if not legacy:
        raise CrowdError(f"{path}: no <user>/user_state.json under it", fix=POTATO_FIX)
    return [a for f in legacy for a in _potato_lines(f)]


def task_and_order(plan: Plan, unit: str) -> tuple[str, list[str]] | None:
    """The task of a unit a file names (a slot or a task id) and the comments it covers."""
    if unit in plan.assignments:
        a = plan.assignments[unit]
        return a["task"], a["order"]
    if unit in plan.tasks:  # the order of its first slot, as `_task_units` exported it
        return unit, next(a["order"] for a in plan.assignment["assignments"] if a["task"] == unit)
    return None


def as_rating(answer: Answer, study: StudyConfig) -> tuple[dict[str, str], dict[str, str] | None] | None:
    """(values, anchors) of an answer; None when nothing was answered (a miss)."""
    values = {k: v for k, v in answer.answers.items() if k not in ANCHOR_QUESTIONS}
    given = {k: answer.answers[k] for k in ANCHOR_QUESTIONS if k in answer.answers}
    if not values and not given:
        return None
    anchors = {"vs_hard": given.get("vs_hard", ""), "vs_extreme": given.get("vs_extreme", "")} if given else None
    return values, anchors


def unknown_ref(answer: Answer, plan: Plan) -> str | None:
    found = task_and_order(plan, answer.assignment)
    if found is None:
        return f"{answer.where}: {answer.assignment!r} is neither a task nor an assignment of assignment.json"
    if answer.ref not in found[1]:
        return f"{answer.where}: {answer.ref!r} is not a comment of {answer.assignment!r}"
    return None


__all__ = ["FORMATS", "GOLD", "Answer", "CrowdError", "Question", "Tally", "as_rating", "detect", "export",
           "questions", "task_and_order", "unknown_ref"]
