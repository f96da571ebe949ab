"""The default consent text says a participant may withdraw at any time. In the real extension in
Chromium, against a real `modlens serve`: the participant consents, the x-thread fixture's comments
reach the log, the daemon stops, the participant clicks *Withdraw consent*, the daemon starts again:
the extension's next hello tells it, the log records the withdrawal, and `modlens export --bundle`
sends nothing of that rater and says why."""
from __future__ import annotations

import json

import pytest

from cli_inprocess import run_modlens

from .harness import FIXTURES, own_daemon_and_browser, wait_for

pytestmark = [pytest.mark.browser]


def test_a_withdrawal_made_while_the_daemon_was_down_reaches_the_log_and_the_bundle(playwright_instance, tmp_path):
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, _fixture = browser.open_fixture(FIXTURES / "x-thread")
        expected = json.loads((FIXTURES / "x-thread" / "expected.json").read_text(encoding="utf-8"))
        keys = {e["key"] for e in expected["before"]}
        wait_for(lambda: keys <= set(daemon.comments("x")), 60, "the x-thread comments in the study log")
        page.close()
        rater = browser.state()["settings"]["raterId"]
        assert [r["withdrawn_at"] for r in daemon.query("SELECT withdrawn_at FROM consents WHERE rater_id = ?",
                                                        (rater,))] == [None]
        daemon.stop()
        browser.withdraw().close()
        daemon.start()  # the same port: the extension reconnects, its hello says it withdrew
        wait_for(lambda: daemon.query("SELECT withdrawn_at FROM consents WHERE rater_id = ? AND withdrawn_at IS NOT NULL",
                                      (rater,)), 60, "the withdrawal in the study log")
    out = tmp_path / "e2e.bundle"
    code, said, err = run_modlens(["export", "--db", str(daemon.db), "--bundle", str(out)],
                                  daemon.home)
    # the only rater withdrew: the bundle carries that alone (for the researcher's merge), none of their data
    assert code == 0 and out.exists(), said + err
    assert f"no consenting rater: it carries only the withdrawal of {rater}" in said, said + err
