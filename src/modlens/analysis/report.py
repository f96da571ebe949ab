"""The analysis report frame: every section of `analysis/sections/` (one file each) computed from
the study log, as JSON (`build`) or as one self-contained HTML page (`render_html`: plots as inline
SVG (`sections/svg.py`; a few older ones as base64 PNG), tables that wrap or scroll inside the page,
a methods note per section citing its papers by authors and year, the detectors by short name with
their versions in one table, and the references: the methods cited and the data sets read). The
page's tables are recorded as it is rendered (`render`: one table model, `analysis/report_tables.py`),
numbered and captioned, and `--format csv|latex` writes those same tables. Sections are numbered
1, 2, … in the order of those present. A section appears only when the log has its data; every
other one is listed under `skipped` with the `Skip` reason its `analyze()` gave, worded so a user
can act on it.

The report only reads the log: no detector, normalizer or sentence encoder is loaded here, so the
same log gives the same JSON on any machine (what a section shows that needs a model is computed
and stored by `audit`, `attack` or `rescore`)."""
from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from modlens import __version__
from modlens.analysis.data import StudyData, load
from modlens.analysis import references
from modlens.analysis.report_tables import Table, collecting
from modlens.analysis.sections import SECTIONS
from modlens.analysis.sections.base import Section, SectionResult
from modlens.analysis.sections.html import naming, short_names, table
from modlens.analysis.skip import Skip


def analyze_sections(data: StudyData, sections: Sequence[Section] = ()) -> dict[str, SectionResult]:
    """Each section's result, in report order; a section's `needs` are passed to its `analyze`."""
    results: dict[str, SectionResult] = {}
    for s in sections or SECTIONS:
        missing = [k for k in s.needs if k not in results]
        if missing:
            raise ValueError(f"report section {s.key!r} needs {missing}, which do not come before it")
        result = s.analyze(data, *(results[k] for k in s.needs))
        if not isinstance(result, (dict, Skip)) or not result:
            raise TypeError(f"report section {s.key!r}: analyze() must return a non-empty dict or Skip(reason), "
                            f"not {result!r}")
        results[s.key] = result
    return results


def build(data: StudyData) -> dict[str, Any]:
    results = analyze_sections(data)
    sections: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    methods: dict[str, str] = {}
    for s in SECTIONS:
        result = results[s.key]
        if isinstance(result, Skip):
            skipped[s.key] = result.reason
        else:
            sections[s.key] = {k: v for k, v in result.items() if k not in s.private}
            methods[s.key] = s.method
    names = short_names((d.name, d.version) for d in data.detectors.values())  # as every section shows them
    counts = {"comments": len(data.comments), "ratings": len(data.ratings), "variants": len(data.variants),
              "platforms": {p: sum(1 for c in data.comments.values() if c["platform"] == p) for p in data.platforms()}}
    return {
        "modlens_version": __version__, "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "db": str(data.path), "counts": counts,
        # raters who withdrew consent: their ratings are in no count or figure here (`data.load`)
        "withdrawn": dict(data.withdrawn),
        # `--study ID`: the one study whose ratings the report reads (None: every study's, pooled)
        "study": data.study,
        "detectors": [{"name": d.name, "short": names[(d.name, d.version)], "version": d.version,
                       "toxicity_label": d.toxicity_label, "threshold": d.threshold, "config": d.config}
                      for d in data.detectors.values()],
        "audit_runs": data.runs, "label_sets": label_sets_used(data), "methods": methods,
        "sections": sections, "skipped": skipped,
        **_references(methods.values(), datasets_read(data)),
    }


def datasets_read(data: StudyData) -> list[dict[str, str]]:
    """The data sets the log's audits read: the name each audit recorded and the reader that read it.
    A catalog data set read by its own reader (`modlens audit davidson`, or a file whose layout the
    `davidson` reader took, whose bytes are the catalog's) has its paper cited; any other file, whichever
    reader read it, is named by its content hash or by the name its audit declared (`--name`, never one
    modlens gives a data set itself), which cites nothing (a file called davidson.csv is not Davidson's
    data for that)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for r in data.runs:
        if r.get("dataset"):
            try:
                reader = str(json.loads(r.get("params_json") or "{}").get("format") or "")
            except (TypeError, json.JSONDecodeError):
                reader = ""
            out.setdefault((str(r["dataset"]), reader), {"name": str(r["dataset"]), "reader": reader})
    return list(out.values())


def _references(methods: Any, datasets: list[dict[str, str]]) -> dict[str, Any]:
    refs = references.used(methods, [k for d in datasets if (k := references.catalog_data_set(d["name"], d["reader"]))])
    return {"datasets": datasets, "references": [r.full() for r in refs], "reference_keys": [r.key for r in refs]}


def label_sets_used(data: StudyData) -> list[dict[str, Any]]:
    """Per source, the gold label set the report used and how it was chosen (docs/ANALYSIS.md#label-sets)."""
    return [{"source": src, **s} for src, s in data.label_sets.items()]


def report_from_db(path: str | Path, label_sets: Sequence[str] = (), study: str | None = None) -> dict[str, Any]:
    """`label_sets`: the gold label sets to use (ids or definitions); default, per source, the newest.
    `study`: one study's report (its ratings, task reviews and imports only; default: every study's)."""
    return build(load(path, label_sets, study=study))


def to_json(report: dict[str, Any]) -> str:
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o
    return json.dumps(clean(report), indent=2, default=str)


# --- HTML ---------------------------------------------------------------------------------------

CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:12px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#eef3f9}.methods{background:#f7f7f2;border-left:4px solid #b5a642;
padding:.4em .8em;font-size:12.5px}small{color:#666;font-weight:normal}img{max-width:100%}.note{font-size:12px;color:#555}
.tw{max-width:100%;overflow-x:auto}td.wrap{min-width:7em;max-width:28em;overflow-wrap:anywhere;text-align:left}th{overflow-wrap:anywhere}
caption{caption-side:top;text-align:left;font-size:11px;color:#666}.nowrap{white-space:nowrap}
.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}.figs svg{flex:0 1 auto}.refs li{margin:.3em 0}
@media print{body{max-width:none;margin:0;padding:0;font-size:11px}table{font-size:9.5px}td,th{padding:2px 4px}
.tw{overflow:visible}td.wrap{min-width:5em}tr,svg.chart{break-inside:avoid}h2,h3,h4{break-after:avoid}}"""


def _html_label_sets(sets: list[dict[str, Any]]) -> str:
    how = {"newest": "the newest of its sets with labels", "asked": "chosen with --label-set"}

    def used(s: dict[str, Any]) -> str:
        empty = "; ".join(f"{e['label_set_id']} ({e['definition']})" for e in s.get("newer_empty") or ())
        return str(how.get(s["chosen"], s["chosen"])) + (f" ⚠ newer set without labels passed over: {empty}" if empty else "")
    rows = [[s["source"], s["label_set_id"], s["definition"], s["n"], s["positives"], used(s),
             "; ".join(f"{o['label_set_id']}: {o['definition']} ({o['n']})" for o in s["others"]) or "–"] for s in sets]
    return ("<h2>Gold labels</h2><p class=note>Each source's gold `toxic` labels come from one label set (its "
            "definition below); <code>modlens report --label-set ID</code> chooses another.</p>"
            + table(["source", "label set", "definition", "labels", "positive", "used", "other sets (labels)"], rows))


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def counts_line(counts: dict[str, Any]) -> str:
    """What the log holds, naming only what it has ("12 comments on youtube (12); 3 ratings."), or
    that it holds no comments, ratings or variants (e.g. a log of fused cases only)."""
    parts = []
    if counts["comments"]:
        parts.append(_plural(counts["comments"], "comment", "comments") + " on " + ", ".join(
            f"{html.escape(p)} ({n:,})" for p, n in counts["platforms"].items()))
    if counts["ratings"]:
        parts.append(_plural(counts["ratings"], "rating", "ratings"))
    if counts["variants"]:
        parts.append(_plural(counts["variants"], "variant", "variants"))
    return ("; ".join(parts) + ".") if parts else "No comments, ratings or variants in this log."


def study_line(study: dict[str, Any] | None) -> str:
    """Which study a `--study` report reads, and that the other studies' ratings are left out."""
    if not study:
        return ""
    n = study["other_studies_ratings"]
    return (f"<p class=note>Study {html.escape(study['study_id'])} only (--study): "
            + (f"the {_plural(n, 'rating', 'ratings')} of the log's other studies {'is' if n == 1 else 'are'} in no "
               "count or figure of this report." if n else "the log holds no rating of another study.") + "</p>")


def withdrawn_line(withdrawn: dict[str, int] | None) -> str:
    """The raters who withdrew consent, whose ratings the report leaves out, when there are any (a
    report's JSON from before withdrawals were left out has no `withdrawn`: it says nothing)."""
    if not withdrawn or not withdrawn.get("raters"):
        return ""
    # raters are distinct rater ids, left out of the studies they withdrew from only (a report's JSON from
    # before `studies` counted a rater once per study withdrawn from: it says no more than it did then)
    n, m, s = withdrawn["raters"], withdrawn["ratings"], withdrawn.get("studies")
    k = withdrawn.get("agreed_again", 0)  # of them, those who agreed again: what they rated since counts
    # and those still withdrawn from a study: one rater id spans an install's studies, so a rater can be both
    # (a report's JSON from before this was counted has none: its two kinds were then n - k and k)
    still = withdrawn.get("still_withdrawn", n - k)
    who = "1 rater who withdrew consent is" if n == 1 else f"{n:,} raters who withdrew consent are"
    where = "" if s is None else \
        " of the study they withdrew from" if s == 1 else f" of the {s:,} studies they withdrew from"
    held = f"(the log still holds {'it' if m == 1 else 'them'}).</p>"
    if not k:
        return (f"<p class=note>{who} left out{where}: their {_plural(m, 'rating', 'ratings')}{' there' * bool(where)} "
                f"{'is' if m == 1 else 'are'} in no count or figure of this report {held}")
    left = f"the {_plural(m, 'rating', 'ratings')} left out {'is' if m == 1 else 'are'} in no count or figure of this report"
    if not still:
        who = "1 rater who withdrew consent" if n == 1 else f"{n:,} raters who withdrew consent"
        return (f"<p class=note>{who} agreed again since: what they recorded before agreeing again is left out{where}, "
                f"what they rated since counts; {left} {held}")
    # not "left out of the studies they withdrew from": where they agreed again, what they rated since counts
    withdrew = f"{_plural(n, 'rater', 'raters')} " + \
        ("withdrew consent" if s is None else f"withdrew from {_plural(s, 'study', 'studies')}")
    return (f"<p class=note>{withdrew}: {_plural(still, 'rater', 'raters')} {'is' if still == 1 else 'are'} still "
            f"withdrawn from a study (all they recorded there is left out), {k:,} agreed again in a study since (there, "
            f"what they recorded before agreeing again is left out and what they rated since counts); {left} {held}")


def numbered(keys: Sequence[str]) -> dict[str, str]:
    """section key -> its title numbered in the order of the sections present (1, 2, …)."""
    by_key = {s.key: s for s in SECTIONS}
    return {k: f"{i}. {by_key[k].short_title}" for i, k in enumerate(keys, 1)}


@dataclass
class Rendered:
    """A report rendered once: the HTML page and the tables it shows (numbered, captioned), from which
    `--format csv` and `--format latex` are written, and the references it ends with."""
    html: str
    tables: list[Table]
    references: list[dict[str, str]]


def report_references(report: dict[str, Any]) -> list[dict[str, str]]:
    """The report's references: key, how the notes cite it, and in full."""
    keys = report.get("reference_keys")
    if keys is None:  # a report's JSON from before the keys were kept
        return [{"key": f"ref{i}", "citation": "", "reference": r} for i, r in enumerate(report.get("references", []), 1)]
    return [{"key": k, "citation": references.REFERENCES[k].citation(), "reference": references.REFERENCES[k].full()}
            for k in keys if k in references.REFERENCES]


def _detectors_table(report: dict[str, Any], names: dict[tuple[str, str], str]) -> str:
    # a version is shown whole, never broken mid-hash (nowrap): should it not fit, the table scrolls
    return ("<p class=note>The report names each detector by the short name below; the version it ran is the one "
            "beside it.</p>"
            + table(["detector", "name", "version", "toxicity label", "threshold", "configuration"],
                    [[names[(d["name"], str(d["version"]))], d["name"], d["version"], d["toxicity_label"],
                      d["threshold"], _cut(json.dumps(d["config"]), 120)] for d in report["detectors"]], nowrap=(0, 2)))


def _cut(text: str, n: int) -> str:
    """`text`, or its first n characters and an ellipsis that says the rest is in the JSON report."""
    return text if len(text) <= n else text[:n] + "…"


_PLACES = re.compile(r"<h([234])\b[^>]*>(.*?)</h\1>|<div class=tw id=(modlens-table-\d+-)>"
                     r"|<(p|ul) class=\"?note\"?>(.*?)</\4>", re.S)


def _heading(raw: str) -> str:
    """A heading's text for a caption: tags and the small print after the title left out."""
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<small>.*?</small>", "", raw, flags=re.S))).strip()


def _note_text(raw: str) -> list[str]:
    """A note's text (a list note: one per item), tags left out and white space made single."""
    items = re.findall(r"<li>(.*?)</li>", raw, re.S) or [raw]
    return [t for t in (" ".join(html.unescape(re.sub(r"<[^>]+>", "", i)).split()) for i in items) if t]


def _place(page: str, made: list[Table]) -> tuple[str, list[Table]]:
    """Number the tables in the order the page shows them, caption each with the headings above it,
    give each its id (t1, t2, …) and a visible "Table N" on the page, and the notes of its part of the
    page: those under its headings (a section's notes go with each of its tables, a subsection's with
    that subsection's; the page's own, above every section, with none)."""
    by_marker = {t.marker: t for t in made}
    heads = {"2": "", "3": "", "4": ""}
    block: list[int | None] = [None, None, None]  # the h2, h3 and h4 the page is under, by their order
    notes: list[tuple[tuple[int | None, ...], str]] = []
    blocks: dict[str, tuple[int | None, ...]] = {}
    placed: list[Table] = []
    for n, m in enumerate(_PLACES.finditer(page)):
        if m.group(1):
            heads[m.group(1)] = _heading(m.group(2))
            for lower in ("3", "4"):
                if lower > m.group(1):
                    heads[lower] = ""
            level = int(m.group(1)) - 2
            block[level:] = [n] + [None] * (2 - level)
            continue
        if m.group(4):
            if block[0] is not None:
                notes += [(tuple(block), text) for text in _note_text(m.group(5))]
            continue
        t = by_marker[m.group(3)]
        t.number = len(placed) + 1
        t.caption = " — ".join(h for h in heads.values() if h)
        blocks[t.marker] = tuple(block)
        placed.append(t)
    for t in placed:
        under = blocks[t.marker]
        t.notes = list(dict.fromkeys(text for key, text in notes
                                     if all(k is None or k == u for k, u in zip(key, under))))
    for t in placed:
        page = page.replace(f"<div class=tw id={t.marker}><table>",
                            f"<div class=tw id=t{t.number}><table><caption>Table {t.number}</caption>", 1)
    return page, placed


def render(report: dict[str, Any]) -> Rendered:
    names = short_names((d["name"], str(d["version"])) for d in report["detectors"])
    with collecting() as made, naming(names):
        page = _render_page(report, names)
    page, placed = _place(page, made)
    return Rendered(page, placed, report_references(report))


def render_html(report: dict[str, Any]) -> str:
    return render(report).html


def _render_page(report: dict[str, Any], names: dict[tuple[str, str], str]) -> str:
    parts = [f"<!doctype html><html><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
             f"<title>modlens report</title><style>{CSS}</style></head><body>",
             "<h1>modlens report</h1>",
             f"<p class=note>{html.escape(report['db'])} · generated {report['generated_at']} · modlens {report['modlens_version']}</p>",
             f"<p>{counts_line(report['counts'])}</p>", study_line(report.get("study")),
             withdrawn_line(report.get("withdrawn")),
             "<h2>Detectors</h2>", _detectors_table(report, names)]
    if report.get("label_sets"):
        parts.append(_html_label_sets(report["label_sets"]))
    if not report["sections"]:
        parts.append("<p>The log has no data any section can use yet.</p>")
    by_key = {s.key: s for s in SECTIONS}
    titles = numbered([k for k in report["sections"] if k in by_key])
    for key, section in report["sections"].items():
        s = by_key[key]
        parts.append(f"<h2 id=s-{html.escape(key)}>{html.escape(titles[key])}</h2>"
                     f"<p class=methods><b>Method.</b> {html.escape(s.method)}</p>")
        parts.append(s.render(section))
    if report.get("skipped"):
        parts.append("<h2>Not in this report</h2><ul class=note>" + "".join(
            f"<li><b>{html.escape(by_key[key].short_title)}</b>: {html.escape(reason)}</li>"
            for key, reason in report["skipped"].items()) + "</ul>")
    refs = report_references(report)
    uncited = [d["name"] for d in report.get("datasets", []) if isinstance(d, dict)
               and not references.catalog_data_set(str(d.get("name")), str(d.get("reader") or ""))]
    if refs or uncited:
        parts.append("<h2>References</h2><ol class=refs>" + "".join(
            f"<li id=ref-{html.escape(r['key'])}>{html.escape(r['reference'])}</li>" for r in refs) + "</ol>")
    if uncited:
        parts.append("<p class=note>Also read, with no paper modlens can tie to them (data sets named by their "
                     "content or by the name an audit declared; cite their sources): "
                     + html.escape(", ".join(uncited)) + ".</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
