"""The survey form of `study export-tasks --format survey` in a real Chromium: a task whose comments
include `<!--<script>`, `</script>` and other markup shows all of its items, each comment as the
text a stranger wrote (not markup), with its questions. The escaping itself: tests/test_survey_form.py.
With `</` alone escaped (as before), the comment `<!--<script>` kept the data element's own `</script>`
from closing it and the page showed 0 of its 31 items (no later `-->` in the texts: it would undo that)."""
from __future__ import annotations

import pytest

from modlens.study.crowd import export_survey, questions
from test_survey_form import HOSTILE, ITEMS, hostile_plan

from .harness import CHROMIUM

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium(playwright_instance):
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    yield browser
    browser.close()


def test_a_form_holding_script_and_comment_openers_shows_all_its_items(chromium, tmp_path):
    plan = hostile_plan()
    export_survey(plan, tmp_path)
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    try:
        page.goto((tmp_path / "form.html").as_uri() + "?assignment=t01-r1")
        shown = page.eval_on_selector_all("#items .c .t", "els => els.map(e => e.textContent)")
        assert len(shown) == ITEMS, (shown, errors)
        assert shown[: len(HOSTILE)] == [f"{n}. {t}" for n, t in enumerate(HOSTILE, 1)]
        assert page.eval_on_selector_all("#items fieldset", "els => els.length") == ITEMS * len(questions(plan.study))
        assert page.eval_on_selector_all("#items script, #items b", "els => els.length") == 0  # text, not markup
        assert not errors
    finally:
        page.close()
