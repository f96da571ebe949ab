"""The HTML report in a real Chromium: rendered from a log built here (a three-class
Davidson-like file, the two released SASS layouts, HateCheck cases), every inline SVG plot is laid
out with a nonzero size, the page has no horizontal overflow at a desktop and at a narrow width,
and a full-page screenshot is taken (kept in the test's tmp folder for a person to look at).

It prints and screenshots whole: at 1,280 px and in print media at an A4 page's width,
no table is wider than its box (so no column scrolls out of view) and every header cell is on the
page; every plot's axis tick labels are distinct; no title, legend or label of a plot runs outside
its SVG's viewBox (which would cut it)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from modlens import paths
from modlens.analysis.report import render_html, report_from_db
from modlens.audit import run_audit
from modlens.detectors.base import Detector

from .harness import CHROMIUM
from csv_files import write_csv as _write
from sass_release import as_released

pytestmark = pytest.mark.browser


class Marker(Detector):
    """Scores by words, with a little spread so curves and histograms have shape."""
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, name, words, version="test-1"):
        self.name, self.version, self.words = name, version, words

    def score(self, texts):
        return [{"toxicity": min(0.99, (0.7 if any(w in t.lower() for w in self.words) else 0.1)
                             + (len(t) % 10) / 40)} for t in texts]




def _log(tmp_path):
    db = tmp_path / "log.sqlite"
    dets = {"words": Marker("words", ["hate", "rude", "secret", "pretty", "kill"]),
            # a version as long as real ones (minilm-toxicity's): titles and legends that name it stay whole
            "short-words": Marker("short-words", ["hate", "wave"], "minilm-l6.3f9a0c1d2e4b+head.7c21d0e9f5a3.len256")}
    kinds = [0] * 15 + [1] * 25 + [2] * 40
    dav = _write(tmp_path / "labeled_data.csv", ["", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"],
                 [(i, 3, 0, 0, 0, c, f"tweet number {i} {['hate', 'rude', 'calm'][c]} {'x' * (i % 7)}")
                  for i, c in enumerate(kinds)])
    run_audit(str(dav), db=db, fmt="davidson", detector_objects=dets, progress=False)
    sass_rows = [(f"Sentence {i} about a {w}.", c, "Filtered" if i % 3 else "Unfiltered", h, p)
                 for i, (w, c, h, p) in enumerate([("secret", "Blackmail", 0.9, 0.1), ("class", "Classism", 0.7, 0.2),
                                                   ("pretty", "Sexual Harassment", 0.8, 0.3),
                                                   ("wave", "False Positive", 0.1, 0.8), ("day", "Neutral", 0.0, 0.05),
                                                   ("joke", "Sarcasm", 0.6, 0.6)] * 4)]
    bench = _write(tmp_path / "toxicity_benchmark_scores.csv", ["text", "category", "tag", "toxicity_score"],
                   [(t, c, tag, p) for t, c, tag, _, p in sass_rows])
    human = _write(tmp_path / "norm_human_toxicity_scores.csv", ["text", "category", "tag", "toxicity"],
                   [(t, c, tag, h) for t, c, tag, h, _ in sass_rows])
    with as_released(bench, human):  # they stand in for the release (SASS's charts are for its bytes)
        run_audit(str(bench), db=db, detectors=["recorded"], progress=False)
        run_audit(str(human), db=db, detector_objects=dets, progress=False)
    run_audit(str(paths.shipped_data() / "hatecheck"), db=db, detector_objects=dets, progress=False, limit=400)
    return db


@pytest.fixture(scope="module")
def page_html(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    # in a thread of its own: the audits run asyncio, and Playwright's sync loop may already be running here
    with ThreadPoolExecutor(1) as pool:
        html = pool.submit(lambda: render_html(report_from_db(_log(tmp)))).result()
    (tmp / "report.html").write_text(html, encoding="utf-8")
    return tmp / "report.html"


@pytest.fixture(scope="module")
def chromium(playwright_instance):
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    yield browser
    browser.close()


@pytest.mark.parametrize("width", [1280, 700])
def test_report_plots_are_laid_out_and_the_page_does_not_overflow(chromium, page_html, width):
    page = chromium.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(page_html.as_uri())
        boxes = page.eval_on_selector_all(
            "svg.chart", "els => els.map(e => { const r = e.getBoundingClientRect();"
                         " return {w: r.width, h: r.height, right: r.right, label: e.getAttribute('aria-label')}; })")
        labels = [b["label"] for b in boxes]
        # ROC, PR, reliability and histograms for the labelled sources; SASS and HateCheck bars
        # the file in Davidson's layout is not Davidson's own: it is named by its content, never "davidson"
        assert not any("davidson" in str(label) for label in labels), labels
        source = next(str(label).split(", ", 1)[1] for label in labels if str(label).startswith("ROC, dataset:file-"))
        for want in (f"ROC, {source}", f"precision-recall, {source}", f"reliability, {source}",
                     "scores by gold class, words", "SASS: share flagged per category",
                     "HateCheck: accuracy per functionality"):
            assert want in labels, (want, labels)
        assert all(b["w"] > 50 and b["h"] > 50 for b in boxes), boxes
        view = page.evaluate("() => ({inner: window.innerWidth, scroll: document.documentElement.scrollWidth})")
        assert view["scroll"] <= view["inner"], view  # nothing widens the page: wide tables scroll in their box
        assert max(b["right"] for b in boxes) <= view["inner"]
        shot = page_html.parent / f"report-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    finally:
        page.close()


# Measured in the page: tables wider than their box (their right part would scroll out of view, and
# print cuts it), header cells outside the page, SVG text outside its viewBox, repeated tick labels.
LAYOUT = """() => {
  const inner = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('div.tw')].map(box => {
      const t = box.querySelector('table');
      return {over: t.scrollWidth - box.clientWidth, head: t.rows[0].innerText.slice(0, 90)};
    }).filter(x => x.over > 1);
  const offPage = [...document.querySelectorAll('th')].map(th => th.getBoundingClientRect())
    .filter(r => r.left < -0.5 || r.right > inner + 0.5).length;
  const cut = [], repeated = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const s = svg.getBoundingClientRect();  // an inline SVG clips what falls outside it
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();  // rotation and scaling included
      if (r.left < s.left - 0.5 || r.top < s.top - 0.5 || r.right > s.right + 0.5 || r.bottom > s.bottom + 0.5)
        cut.push(svg.getAttribute('aria-label') + ': ' + t.textContent);
      if (t.textContent.endsWith('…')) cut.push('shortened: ' + t.textContent);
    }
    for (const axis of ['x', 'y']) {
      const ticks = [...svg.querySelectorAll('text.tick-' + axis)].map(t => t.textContent);
      if (new Set(ticks).size !== ticks.length) repeated.push(svg.getAttribute('aria-label') + ': ' + ticks.join(', '));
    }
  }
  const ticks = document.querySelectorAll('text.tick-x, text.tick-y').length;
  return {wide, offPage, cut, repeated, ticks};
}"""


@pytest.mark.parametrize("media,width", [("screen", 1280), ("print", 718)])  # 718 px: A4 less Chromium's margins
def test_every_column_legend_and_title_shows_on_screen_and_in_print(chromium, page_html, media, width):
    page = chromium.new_page(viewport={"width": width, "height": 900})
    try:
        page.emulate_media(media=media)
        page.goto(page_html.as_uri())
        found = page.evaluate(LAYOUT)
        assert found["wide"] == [], found["wide"]       # e.g. the labelled table showing precision and recall only
        assert found["offPage"] == 0, found
        assert found["cut"] == [], found["cut"]         # titles and legends whole
        assert found["repeated"] == [], found["repeated"]  # no "0.2, 0.2, 0.1, 0.1"
        assert found["ticks"] > 50  # the tick labels are there to check
        if media == "print":
            pdf = page_html.parent / "report.pdf"
            page.pdf(path=str(pdf), format="A4")
            assert pdf.stat().st_size > 10_000
    finally:
        page.close()
