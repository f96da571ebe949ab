"""The report's inline SVG charts: distinct tick labels, titles, legends and category
names drawn whole with a viewBox wide enough for them (the browser test measures the same in
Chromium: tests/e2e/test_report_page.py)."""
import re

from modlens.analysis.sections import svg


def _texts(chart, cls=None):
    tag = f'class="{cls}"' if cls else ""
    return re.findall(r"<text [^>]*" + tag + r"[^>]*>([^<]*)</text>", chart)


def test_tick_labels_are_distinct_at_any_scale():
    # a histogram whose tallest bin holds 22% of a class: its y axis runs to 0.3 in 5 steps
    assert svg.tick_labels(0.3) == ["0.00", "0.06", "0.12", "0.18", "0.24", "0.30"]
    assert svg.tick_labels(1.0) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert svg.tick_labels(3) == ["0.0", "0.6", "1.2", "1.8", "2.4", "3.0"]
    for vmax in (0.05, 0.1, 0.25, 0.3, 0.7, 2, 40):
        assert len(set(svg.tick_labels(vmax))) == 6, vmax
    chart = svg.histogram([k / 20 for k in range(21)], [("toxic", [22] + [6] * 13 + [0] * 6)], "scores", "score")
    ticks = _texts(chart, "tick-y")
    assert len(ticks) == 6 and len(set(ticks)) == 6, ticks


def test_long_titles_legends_and_categories_are_drawn_whole():
    version = "minilm-toxicity minilm-l6.3f9a0c1d2e4b+head.7c21d0e9f5a3.len256"
    title = f"scores by gold class, {version}"
    chart = svg.histogram([0, 0.5, 1], [("offensive_language", [3, 4]), ("hate_speech", [1, 2])], title, "score")
    width = float(re.search(r'viewBox="0 0 (\d+)', chart).group(1))
    assert title in _texts(chart) and width >= svg.text_width(title, 11)
    category = "F29: Leet speak spellings of slurs and profanity"
    bars = svg.bar_chart([category, "Neutral"], [(version, [0.5, 0.1])], "accuracy per functionality", "accuracy")
    assert category in _texts(bars) and version in _texts(bars)
    assert not any(t.endswith("…") for t in _texts(chart) + _texts(bars))
