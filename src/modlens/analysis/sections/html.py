"""HTML helpers the sections' `render` functions share: escaped cells, tables, numbers with
intervals, and matplotlib figures embedded as base64 PNG (matplotlib is imported on first use)."""
from __future__ import annotations

import base64
import html
import io
from typing import Any

WARN_STYLE = "background:#fff4e5;border-left:4px solid #d9822b;padding:.3em .8em;margin:.4em 0;font-size:12.5px"


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return html.escape(str(v))


WRAP_AT = 40  # a text cell longer than this, or with a word longer than LONG_WORD, wraps (class wrap)
LONG_WORD = 18  # e.g. a detector version: may break inside, where a number never does


def _cell(c: Any) -> str:
    long = isinstance(c, str) and (len(c) > WRAP_AT or any(len(w) > LONG_WORD for w in c.split()))
    return f"<td class=wrap>{fmt(c)}</td>" if long else f"<td>{fmt(c)}</td>"


def table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    # a table fits its page (cells wrap: the report's CSS); should one still be wider, the wrapper
    # scrolls it inside the page instead of widening the page
    return f"<div class=tw><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def with_ci(value: float | None, ci: list[float] | None) -> str:
    """A number with its interval, e.g. `0.812 [0.790, 0.833]`. The interval is bound by no-break
    spaces, so a narrow column breaks a cell only between the number and its interval."""
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f},\u00a0{ci[1]:.3f}]")


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
