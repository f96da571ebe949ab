"""HTML helpers the sections' `render` functions share: escaped cells, tables (one model for HTML,
CSV and LaTeX: `analysis/report_tables.py`), numbers with intervals, short detector names, and
matplotlib figures embedded as base64 PNG (matplotlib is imported on first use)."""
from __future__ import annotations

import base64
import contextvars
import html
import io
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from modlens.analysis.report_tables import Table, cell_text, record

WARN_STYLE = "background:#fff4e5;border-left:4px solid #d9822b;padding:.3em .8em;margin:.4em 0;font-size:12.5px"


def fmt(v: Any, digits: int = 3) -> str:
    """A value as the report prints it, HTML-escaped (a table's cells: `report_tables.cell_text`)."""
    return html.escape(cell_text(v, digits))


def counts(counted: dict[str, int]) -> str:
    """'reason: count, …', escaped: what a section left out, as each one says it ('' when nothing)."""
    return html.escape(", ".join(f"{k}: {v}" for k, v in counted.items()))


def table(header: list[str], rows: list[list[Any]], nowrap: tuple[int, ...] = ()) -> str:
    """A table as HTML, from the one table model the CSV and LaTeX tables are written from too
    (`analysis/report_tables.py`): recorded for them while a report is rendered. `nowrap`: columns
    whose cells never break (an identifier read whole)."""
    t = Table.of(header, rows)
    t.nowrap = nowrap
    record(t)
    return t.html()


def short_names(detectors: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(name, version) -> the name the report shows: the name alone when the log has one version of
    it, else name#1, name#2, … in the order given. The versions stand once, in the report's
    Detectors table beside these names, never in a plot legend or a cell (a version is often a
    hash, unreadable there and breaking mid-hash)."""
    pairs = list(dict.fromkeys(detectors))
    versions: dict[str, list[str]] = {}
    for name, version in pairs:
        versions.setdefault(name, []).append(version)
    return {(n, v): n if len(versions[n]) == 1 else f"{n}#{versions[n].index(v) + 1}" for n, v in pairs}


_SHORT: contextvars.ContextVar[dict[tuple[str, str], str] | None] = contextvars.ContextVar("short_names", default=None)


@contextmanager
def naming(names: dict[tuple[str, str], str]) -> Iterator[None]:
    """Sections rendered inside the block name detectors by `names` (`short_names` of the report's detectors)."""
    token = _SHORT.set(names)
    try:
        yield
    finally:
        _SHORT.reset(token)


def detector(name: str, version: Any) -> str:
    """A detector as the report names it: its short name (`naming`), else its name."""
    return (_SHORT.get() or {}).get((name, str(version)), name)


def fewer(k: int | None, n: int | None, what: str) -> str:
    """` (k of n WHAT)` when a figure rests on fewer than the row's n (a detector that scored fewer
    cases, replicates without a value); empty when it rests on all of them or either count is unknown."""
    return f" ({k} of {n} {what})" if k is not None and n is not None and k < n else ""


def with_ci(value: float | None, ci: list[float] | None) -> str:
    """A number with its interval, e.g. `0.812 [0.790, 0.833]`. The interval is bound by no-break
    spaces, so a narrow column breaks a cell only between the number and its interval."""
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f},\u00a0{ci[1]:.3f}]")


def with_boot_ci(m: dict[str, Any]) -> str:
    """A bootstrapped figure ({value, ci, resamples, ci_resamples}: `metrics.bootstrap`) with its
    interval, and over how many resamples when fewer than were drawn define it."""
    if m["value"] is None or m["ci"] is None:
        return with_ci(m["value"], m["ci"])
    return with_ci(m["value"], m["ci"]) + fewer(m.get("ci_resamples"), m.get("resamples"), "resamples")


def plt() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    return pyplot


def png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt().close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def source_heading(s: dict[str, Any], release: str, layout: str) -> str:
    """A per-source block's heading (`analysis/per_source.py`): the data set's name for its own bytes
    only; another file in its layout is named as that file, with the section's note on why."""
    if s["release"]:
        return f"<h3>{html.escape(release, quote=False)} ({html.escape(s['source'])})</h3>"
    return (f"<h3>{html.escape(s['source'].removeprefix('dataset:'))}: {html.escape(layout, quote=False)}</h3>"
            f"<p class=note>{html.escape(s['note'])}.</p>")


def unscored_note(section: dict[str, Any], unit: str) -> str:
    """The sources of a per-source section that no detector scored, in one note ('' when none)."""
    if not section.get("unscored"):
        return ""
    return "<p class=note>Not scored by any detector: " + html.escape(", ".join(
        f"{u['source']} ({u['n']} {unit})" for u in section["unscored"])) + ".</p>"
