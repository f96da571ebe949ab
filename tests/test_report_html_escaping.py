"""The HTML report holds what strangers and participants wrote (comment texts, platforms, rater
ids) and what plugins call themselves (detector names, versions, configurations): none of it can
end or open an element, a script or a comment in the page. A log whose every such string carries
`<!--<script>` and `</script>` renders with each shown as text and no markup of its own."""
from __future__ import annotations

import sqlite3

import pytest

from modlens.analysis import synthetic
from modlens.analysis.report import render_html, report_from_db

HOSTILE = "<!--<script>x</script>&"

pytestmark = pytest.mark.slow  # a synthetic study log of 450 comments and its whole report: about 20 s


def test_report_shows_hostile_strings_as_text(tmp_path):
    db = tmp_path / "log.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE detectors SET name = name || ?, version = version || ?, config_json = ?",
                     (HOSTILE, HOSTILE, '{"note": "' + HOSTILE.replace('"', "") + '"}'))
        conn.execute("UPDATE texts SET text = ? || text", (HOSTILE,))
        conn.execute("UPDATE comments SET platform = platform || ?", (HOSTILE,))
        conn.execute("UPDATE pages SET platform = platform || ?, title = ?", (HOSTILE, HOSTILE))
    page = render_html(report_from_db(db))
    assert "&lt;!--&lt;script&gt;x&lt;/script&gt;&amp;" in page  # shown, as text
    assert "<!--" not in page and "<script" not in page.lower() and "</script" not in page.lower()
