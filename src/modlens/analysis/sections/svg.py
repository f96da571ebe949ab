"""Small inline-SVG charts for the report (no plotting library: the page stays one self-contained
file, text in the plots stays selectable and scales with the page). Line charts (ROC, PR,
reliability), grouped horizontal bars (SASS categories, HateCheck functionalities) and overlaid
histograms (scores per gold class). Every chart is an `<svg>` with a `viewBox`, a nominal width
and `max-width:100%`, so it shrinks with a narrow page instead of overflowing it."""
from __future__ import annotations

import html
from typing import Sequence

# Okabe-Ito: distinguishable for the common colour-vision deficiencies
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
FONT = "font-family:system-ui,sans-serif"


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg class=chart xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" style="max-width:100%;height:auto;{FONT}" role="img" '
            f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>{"".join(body)}</svg>')


CHAR_W = 0.62  # a character's width in font sizes, generous (system-ui digits and capitals): what is laid out to fit


def text_width(s: str, size: int) -> float:
    return len(s) * size * CHAR_W


def _text(x: float, y: float, s: str, size: int = 10, anchor: str = "middle", extra: str = "") -> str:
    """Text drawn whole: each chart makes its viewBox wide enough for its titles and legends
    (`text_width`) rather than cutting them."""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {extra}>'
            f'{html.escape(s)}</text>')


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        yy = y + 13 * i
        out.append(f'<rect x="{x:.1f}" y="{yy - 8:.1f}" width="10" height="10" fill="{color(i)}"/>')
        out.append(_text(x + 14, yy, name, 9, "start"))
    return out


def _width(plot_right: float, title: str, legend: Sequence[str], legend_x: float) -> float:
    """The chart's width: its plot, or its title or longest legend entry where those are wider."""
    return max(plot_right, text_width(title, 11) + 12,
               legend_x + 14 + max((text_width(n, 9) for n in legend), default=0) + 6)


def tick_labels(vmax: float, n: int = 5) -> list[str]:
    """Labels of the n + 1 ticks 0, vmax/n, …, vmax with the fewest decimals that keep them
    distinct (0.25 over 5 ticks: 0.00, 0.05, … rather than 0.1, 0.1, 0.1)."""
    for digits in range(4):
        labels = [f"{k / n * vmax:.{digits}f}" for k in range(n + 1)]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{k / n * vmax:.3g}" for k in range(n + 1)]


def _axes(left: float, top: float, w: float, h: float, xlabel: str, ylabel: str,
          xmax: float = 1.0, ymax: float = 1.0) -> list[str]:
    out = [f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    for k, (xs, ys) in enumerate(zip(tick_labels(xmax), tick_labels(ymax))):
        f = k / 5
        x, y = left + f * w, top + h - f * h
        out.append(f'<line x1="{x:.1f}" y1="{top + h}" x2="{x:.1f}" y2="{top + h + 3}" stroke="#999"/>')
        out.append(_text(x, top + h + 13, xs, 9, extra='class="tick-x"'))
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(_text(left - 4, y + 3, ys, 9, "end", extra='class="tick-y"'))
    out.append(_text(left + w / 2, top + h + 27, xlabel, 10))
    out.append(_text(12, top + h / 2, ylabel, 10, extra=f'transform="rotate(-90 12 {top + h / 2:.1f})"'))
    return out


def line_chart(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], title: str, xlabel: str, ylabel: str,
               *, diagonal: str | None = None, markers: bool = False) -> str:
    """Curves in the unit square, one per (name, points). `diagonal`: "up" draws y = x (chance ROC,
    perfect calibration) as a dotted line."""
    left, top, w, h = 44, 22, 230, 200
    legend_h = 13 * len(series)
    width = _width(left + w + 16, title, [n for n, _ in series], left)
    body = [_text(width / 2, 14, title, 11, extra='font-weight="bold"'), *_axes(left, top, w, h, xlabel, ylabel)]
    if diagonal == "up":
        body.append(f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top}" stroke="#aaa" stroke-dasharray="2,3"/>')
    for i, (_, pts) in enumerate(series):
        xy = " ".join(f"{left + x * w:.1f},{top + h - y * h:.1f}" for x, y in pts)
        if xy:
            body.append(f'<polyline points="{xy}" fill="none" stroke="{color(i)}" stroke-width="1.6"/>')
            if markers:
                body += [f'<circle cx="{left + x * w:.1f}" cy="{top + h - y * h:.1f}" r="2.2" fill="{color(i)}"/>'
                         for x, y in pts]
    body += _legend([n for n, _ in series], left, top + h + 44)
    return _svg(width, top + h + 40 + legend_h + 6, body, title)


def bar_chart(categories: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], title: str,
              xlabel: str) -> str:
    """Grouped horizontal bars in [0, 1]: one group per category, one bar per series (a missing
    value draws no bar and an en dash)."""
    plot_w, bar_h = 300, 9
    label_w = max(190.0, max((text_width(c, 9) for c in categories), default=0) + 12)  # category names whole
    group_h = bar_h * len(series) + 6
    top = 22
    h = group_h * len(categories)
    width = _width(label_w + plot_w + 20, title, [n for n, _ in series], label_w)
    body = [_text(width / 2, 14, title, 11, extra='font-weight="bold"')]
    for k, tick in enumerate(tick_labels(1.0)):
        x = label_w + k / 5 * plot_w
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + h}" stroke="#eee"/>')
        body.append(_text(x, top + h + 12, tick, 9, extra='class="tick-x"'))
    body.append(_text(label_w + plot_w / 2, top + h + 26, xlabel, 10))
    for ci, cat in enumerate(categories):
        y0 = top + ci * group_h
        body.append(_text(label_w - 6, y0 + group_h / 2 + 3, cat, 9, "end"))
        for si, (_, values) in enumerate(series):
            v = values[ci]
            y = y0 + 3 + si * bar_h
            if v is None:
                body.append(_text(label_w + 3, y + bar_h - 1, "–", 8, "start"))
                continue
            body.append(f'<rect x="{label_w}" y="{y:.1f}" width="{max(0.0, min(1.0, v)) * plot_w:.1f}" '
                        f'height="{bar_h - 1}" fill="{color(si)}"><title>{html.escape(cat)}: {v:.3f}</title></rect>')
    body.append(f'<line x1="{label_w}" y1="{top}" x2="{label_w}" y2="{top + h}" stroke="#999"/>')
    body += _legend([n for n, _ in series], label_w, top + h + 44)
    return _svg(width, top + h + 40 + 13 * len(series) + 6, body, title)


def histogram(edges: Sequence[float], groups: Sequence[tuple[str, Sequence[int]]], title: str, xlabel: str) -> str:
    """Overlaid histograms as outlined, lightly filled steps, each group as a share of its own
    items (so a small class is as visible as a large one)."""
    left, top, w, h = 44, 22, 230, 150
    shares = [[c / max(1, sum(counts)) for c in counts] for _, counts in groups]
    ymax = max((max(s) for s in shares if s), default=1.0) or 1.0
    ymax = min(1.0, round(ymax * 1.1 + 0.05, 1))
    lo, hi = edges[0], edges[-1]
    legend = [f"{n} ({sum(c)})" for n, c in groups]
    width = _width(left + w + 16, title, legend, left)
    body = [_text(width / 2, 14, title, 11, extra='font-weight="bold"'),
            *_axes(left, top, w, h, xlabel, "share of class", ymax=ymax)]
    for i, share in enumerate(shares):
        pts = [f"{left:.1f},{top + h:.1f}"]
        for k, s in enumerate(share):
            x0 = left + (edges[k] - lo) / (hi - lo) * w
            x1 = left + (edges[k + 1] - lo) / (hi - lo) * w
            y = top + h - min(s, ymax) / ymax * h
            pts += [f"{x0:.1f},{y:.1f}", f"{x1:.1f},{y:.1f}"]
        pts.append(f"{left + w:.1f},{top + h:.1f}")
        body.append(f'<polygon points="{" ".join(pts)}" fill="{color(i)}" fill-opacity="0.15" '
                    f'stroke="{color(i)}" stroke-width="1.4"/>')
    body += _legend(legend, left, top + h + 44)
    return _svg(width, top + h + 40 + 13 * len(groups) + 6, body, title)


def figures(*charts: str) -> str:
    """Charts side by side, wrapping on a narrow page."""
    return '<div class=figs>' + "".join(charts) + "</div>"
