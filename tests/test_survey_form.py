"""The survey files of `study export-tasks --format survey` hold what strangers wrote: a comment can
neither end nor open a script or a comment in form.html (its embedded JSON escapes `<`, `>`, `&`,
U+2028 and U+2029), and tasks.csv opens in a spreadsheet as text. The same form in Chromium:
tests/e2e/test_survey_form_page.py."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from modlens.datasets.base import read_rows
from modlens.study.assignment import Plan
from modlens.study.crowd import export_survey, script_json
from modlens.study.folder import load

HOSTILE = ["<!--<script>", "</script><script>alert(1)</script>", "a & b <b>bold</b>",
           'line\u2028sep\u2029para', '=HYPERLINK("http://evil.example","x")', "+1", "-1", "@A1", "'=typed"]
ITEMS = 31


def hostile_plan() -> Plan:
    """One task of ITEMS comments for one rater: the hostile texts, then plain ones."""
    texts = HOSTILE + [f"plain comment {n}" for n in range(ITEMS - len(HOSTILE))]
    items = [{"id": f"i{n:02d}", "text": t, "platform": "news", "comment_key": f"k{n}"} for n, t in enumerate(texts)]
    refs = [i["id"] for i in items]
    assignment = {"params": {"raters": 1}, "itemset_sha256": "0" * 64, "tasks": [{"task": "t01", "items": refs}],
                  "assignments": [{"id": "t01-r1", "task": "t01", "order": refs}]}
    return Plan({"items": items}, assignment, load(None))


def embedded(form: str) -> str:
    return re.search(r'<script type="application/json" id="data">(.*?)</script>', form, re.S).group(1)


def test_script_json_escapes_what_could_end_or_open_a_script_or_comment():
    text = "</script><!--<script>&\u2028\u2029\\<"
    out = script_json({"t": text})
    assert not set(out) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(out) == {"t": text}


def test_the_survey_form_embeds_every_text_intact_and_inert(tmp_path: Path):
    plan = hostile_plan()
    export_survey(plan, tmp_path)
    form = (tmp_path / "form.html").read_text(encoding="utf-8")
    data = embedded(form)
    assert not set(data) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(data)["assignments"]["t01-r1"][: len(HOSTILE)] == HOSTILE
    # the page's own markup is all the markup there is: one comment opener nowhere, two script elements
    assert "<!--" not in form and form.count("<script") == 2 and form.count("</script>") == 2


def test_the_survey_tasks_file_opens_as_text_and_reads_back(tmp_path: Path):
    export_survey(hostile_plan(), tmp_path)
    with (tmp_path / "tasks.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c.startswith(tuple("=+-@\t\r"))]
    assert "'=HYPERLINK(\"http://evil.example\",\"x\")" in cells and "''=typed" in cells
    back = read_rows(tmp_path / "tasks.csv")[0]
    assert [back[f"item{n}_text"] for n in range(1, len(HOSTILE) + 1)] == HOSTILE
