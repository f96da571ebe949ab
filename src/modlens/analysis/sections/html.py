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


def table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def with_ci(value: float | None, ci: list[float] | None) -> str:
    """A number with its interval, e.g. `0.812 [0.790, 0.833]`."""
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


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
