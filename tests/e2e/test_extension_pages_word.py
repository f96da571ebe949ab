"""What the extension's own UI says after the participant acts, against what the real worker and the
real `modlens serve` did: the inline marker on a page that no longer observes (site switched off,
consent withdrawn), and the options page after a withdrawal."""
from __future__ import annotations

import pytest

from .closed_shadow import NOT_TOXIC_PICKS, Marker, said
from .harness import STUDY_TOML, own_daemon_and_browser, wait_for
from .pages import open_page_with_markers, ratings_of

pytestmark = [pytest.mark.browser]


TWO_COMMENTS = ["a first comment to rate here", "a second comment to rate there"]


def test_a_site_switched_off_takes_no_rating_from_the_markers_already_shown(playwright_instance, tmp_path):
    """Its site switched off after its markers appeared, the page observes no longer, yet its Rate
    buttons stayed live and a rating saved there reached the log: a rating sent for a site the
    participant had switched off. Now the marker says so, an open panel closes, and the worker takes
    no rating from the page (extension/test/pause.test.mjs); switched on again, it rates. (Paused, the
    same: test_pause_semantics.py.)"""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "PausedRate1", TWO_COMMENTS)
        key = items[0]["key"]
        m = Marker(page, key)
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate live")
        m.locator("button.rate").click()  # a panel open when the switch comes
        for name, value in NOT_TOXIC_PICKS:
            m.locator(f'input[name="{name}"][value="{value}"]').check()
        browser.set_settings({"sites": {"youtube": False}})
        wait_for(lambda: "site switched off" in (said(lambda: m.locator(".pending").inner_text(timeout=500)) or ""), 10, "the marker to say so")
        assert m.locator("form").count() == 0
        assert m.locator("button.rate").evaluate("el => el.disabled") is True
        browser.set_settings({"sites": {"youtube": True}})
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate again")
        m.rate()
        wait_for(lambda: ratings_of(daemon, key), 20, "the rating in the study log once the site is on again")
        m.locator(".done").wait_for(timeout=5000)
        assert len(ratings_of(daemon, key)) == 1


def test_a_rating_the_extension_does_not_take_is_said_not_taken(playwright_instance, tmp_path):
    """After a withdrawal the worker takes no rating ("consent needed"): the marker's panel closed or
    stayed as it was without a word, the participant's answer gone with nothing said."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "WithdrawnR1", TWO_COMMENTS)
        browser.withdraw()
        page.wait_for_timeout(1000)
        m = Marker(page, items[1]["key"])
        m.rate()
        wait_for(lambda: "did not take this rating" in (m.locator(".msg").inner_text() or ""), 10, "the panel to say the rating was not taken")
        assert m.locator("form").count() == 1  # the answers stay, to save once consent is given again
        assert m.locator(".done").count() == 0
        assert ratings_of(daemon, items[1]["key"]) == []


def test_after_a_withdrawal_the_pages_do_not_say_the_daemon_keeps_only_the_rater_id(playwright_instance, tmp_path):
    """The options page and the task list said, once consent was withdrawn, "the daemon keeps only your
    pseudonymous rater id, the extension's version and when it connected", while the log keeps the
    comments and ratings recorded under the consent (the docs: delete the log to remove them)."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "WithdrawnT1", TWO_COMMENTS)
        Marker(page, items[0]["key"]).rate()
        wait_for(lambda: ratings_of(daemon, items[0]["key"]), 20, "the rating in the study log")
        options = browser.withdraw()
        wait_for(lambda: "withdrew" in options.locator("#consent-state").inner_text(), 10, "the options page to say so")
        said = options.locator("#consent-state").inner_text()
        tasks = browser.context.new_page()
        tasks.goto(browser.ext_url("tasks.html"))
        tasks.locator("#consent-needed:visible").wait_for(timeout=10000)
        said_tasks = tasks.locator("#consent-needed").inner_text()
        # the real event: the log still holds what was recorded under the consent
        assert ratings_of(daemon, items[0]["key"]) and set(daemon.comments("youtube")) >= {it["key"] for it in items}
        for text in (said, said_tasks):
            assert "keeps only" not in text, text
            assert "No comment" in text and "stays in" in text, text
        assert "nothing more is taken or sent" in said and "delete" in said, said


def test_a_withdrawal_is_said_after_a_reload_and_as_far_as_the_daemon_recorded_it(playwright_instance, tmp_path):
    """The options page said "You withdrew your consent" only until it was reloaded (the line lived in
    the page: after a reload it said nothing of a withdrawal the worker keeps and sends with every
    hello), and it said "the daemon is told" while the daemon was down and had recorded nothing."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        rater = browser.state()["settings"]["raterId"]

        def withdrawn():
            return daemon.query("SELECT withdrawn_at FROM consents WHERE rater_id = ? AND withdrawn_at IS NOT NULL", (rater,))
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 30, "the worker to lose the daemon")
        options = browser.withdraw()
        options.reload()
        options.locator("#accept-consent:not([disabled])").wait_for(timeout=10000)
        wait_for(lambda: "withdrew" in options.locator("#consent-state").inner_text(), 10, "the reloaded page to say so")
        said = options.locator("#consent-state").inner_text()
        assert "next connects" in said and "has recorded" not in said, said
        assert withdrawn() == []  # the real event: the log has no withdrawal yet
        daemon.start()  # the same port: the worker's next hello carries the withdrawal
        wait_for(withdrawn, 60, "the withdrawal in the study log")
        wait_for(lambda: "the daemon has recorded it" in options.locator("#consent-state").inner_text(), 30, "the page to say it is recorded")
        options.reload()
        wait_for(lambda: "the daemon has recorded it" in options.locator("#consent-state").inner_text(), 10, "the reloaded page to say so")


def test_the_options_page_shows_a_pause_set_from_the_popup(playwright_instance, tmp_path):
    """The options page stayed on 'Pause everything' unchecked while the participant had paused from the
    popup (the worker was paused): a setting set from one page reached no other open page."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (_daemon, browser):
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#withdraw-consent:visible").wait_for(timeout=10000)
        assert not options.locator("#paused").is_checked()
        popup = browser.context.new_page()
        popup.goto(browser.ext_url("popup.html"))
        popup.locator("#conn.ready").wait_for(timeout=10000)
        popup.click("#paused")
        wait_for(lambda: browser.state()["paused"], 10, "the worker to be paused")
        wait_for(lambda: options.locator("#paused").is_checked(), 5, "the options page to show the pause")
        popup.click("#paused")
        wait_for(lambda: not browser.state()["paused"], 10, "the worker to go on")
        wait_for(lambda: not options.locator("#paused").is_checked(), 5, "the options page to show it going on")


def test_a_rating_the_worker_took_but_the_page_could_not_mark_is_not_taken_twice(playwright_instance, tmp_path):
    """The page moved to another video while the panel was open (the daemon away, so no score of the
    new page's comments came back): the worker took the rating, the page could not mark it, and the
    panel said so with Save enabled again, so a second Save queued a second rating."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "Unmarked01", TWO_COMMENTS)
        key = items[0]["key"]
        m = Marker(page, key)
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate live")
        m.locator("button.rate").click()
        for name, value in NOT_TOXIC_PICKS:
            m.locator(f'input[name="{name}"][value="{value}"]').check()
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 30, "the worker to lose the daemon")
        # an in-page navigation: the page the comment was on is left, what it knew of it forgotten
        page.evaluate("history.pushState({}, '', '/watch?v=Unmarked02'); dispatchEvent(new PopStateEvent('popstate'))")
        page.wait_for_timeout(500)
        m.locator('button[type="submit"]').click()
        wait_for(lambda: "page changed meanwhile" in m.locator(".msg").evaluate("el => el.textContent", timeout=500), 10, "the panel's word")
        assert m.locator('button[type="submit"]').evaluate("el => el.disabled") is True
        m.locator('button[type="submit"]').click()  # a second Save takes nothing
        page.wait_for_timeout(500)
        daemon.start()
        wait_for(lambda: ratings_of(daemon, key), 30, "the rating in the log once the daemon is back")
        page.wait_for_timeout(2000)  # the outbox's whole flush
        assert len(ratings_of(daemon, key)) == 1


def test_an_agreement_the_worker_refuses_is_said_and_stays_said(playwright_instance, tmp_path):
    """The participant clicks *I have read this and agree* on a text the study no longer has (the page
    had not heard of the change yet): the worker refuses ("the consent text changed; read it again"),
    and the page wrote that, then at once put back "No comment or rating is recorded until you agree",
    the refusal gone before it could be read, the button as before."""
    with own_daemon_and_browser(playwright_instance, tmp_path, consent=False) as (_daemon, browser):
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#accept-consent:not([disabled])").wait_for(timeout=30000)
        # the page still holds the text it rendered before the study's text changed: its broadcast has
        # not come yet (stood in for here, the worker's text being the one that changed). The change and
        # the click in one task: a state broadcast re-rendering the page between them would reset
        # `current` and the agreement would count
        options.evaluate("current.study.consent_text = current.study.consent_text + ' (an earlier text)';"
                         " document.getElementById('accept-consent').click()")
        wait_for(lambda: "read it again" in options.locator("#consent-state").inner_text(), 5, "the refusal said")
        options.evaluate("refresh()")  # the page's own refresh (its promise awaited): the refusal must survive it
        assert "read it again" in options.locator("#consent-state").inner_text()
        assert not browser.state()["consented"]


def test_after_the_consent_text_changed_the_options_page_says_what_the_log_keeps(playwright_instance, tmp_path):
    """The daemon comes back on the same study with another consent text: the consent to the first no
    longer counts, and the options page must not say the daemon keeps only the rater id, as the log
    keeps the comments recorded under the first text."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "TextChange1", TWO_COMMENTS)
        wait_for(lambda: set(daemon.comments("youtube")) >= {it["key"] for it in items}, 30, "the comments in the log")
        page.close()
        daemon.stop()
        daemon.config.write_text(daemon.config.read_text(encoding="utf-8").replace(
            'title = "modlens end-to-end study"', 'title = "modlens end-to-end study"\nconsent_text = "A second text."'), encoding="utf-8")
        daemon.start()
        wait_for(lambda: (browser.state().get("study") or {}).get("consent_text", "").startswith("A second text."), 30, "the new text")
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#accept-consent:not([disabled])").wait_for(timeout=10000)
        said = options.locator("#consent-state").inner_text()
        assert "earlier text" in said and "stays in" in said and "keeps only" not in said, said
        assert set(daemon.comments("youtube")) >= {it["key"] for it in items}


def test_the_popup_does_not_give_a_stopped_daemons_variant_counts_as_current(playwright_instance, tmp_path):
    """The popup's 'variants (whole daemon): n made · n waiting · n deferred' is the answer of the daemon's
    last status; with the daemon stopped it was still shown, as what the daemon is doing now."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        popup = browser.context.new_page()
        popup.goto(browser.ext_url("popup.html"))
        popup.locator("#variant-counts:visible").wait_for(timeout=15000)
        assert popup.locator("#variant-counts").inner_text().startswith("variants (whole daemon)")
        popup.close()
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 30, "the worker to lose the daemon")
        popup = browser.context.new_page()
        popup.goto(browser.ext_url("popup.html"))
        # the popup's HTML starts with '…' in #conn and #variant-counts hidden: wait for show() to have run
        wait_for(lambda: popup.locator("#conn").inner_text() not in ("…", ""), 10, "the popup to show the worker's state")
        assert "ready" not in popup.locator("#conn").get_attribute("class")
        assert popup.locator("#variant-counts").is_hidden(), popup.locator("#variant-counts").inner_text()


def test_a_calibration_rating_the_extension_does_not_take_is_said_in_its_panel(playwright_instance, tmp_path):
    """A rating round on an extension page (calibration, item set) says why the worker did not take a
    rating in the panel it was saved from, which stays on that comment with its answers."""
    study = STUDY_TOML + '''
[[gold]]
key = "gold-kind"
text = "Thank you, this explanation really helped me."
expected = { toxicity = "not toxic" }
'''
    with own_daemon_and_browser(playwright_instance, tmp_path, study) as (daemon, browser):
        page = browser.context.new_page()
        page.goto(browser.ext_url("calibration.html"))
        form = page.locator("#panel form")
        form.wait_for(timeout=10000)
        for name, value in NOT_TOXIC_PICKS:
            form.locator(f'input[name="{name}"][value="{value}"]').check()
        browser.set_settings({"paused": True})
        form.locator('button[type="submit"]').click()
        wait_for(lambda: "did not take this rating: paused" in (form.locator(".msg").inner_text() or ""), 10,
                 "the panel to say why the rating was not taken")
        assert page.locator("#item-text").inner_text() == "Thank you, this explanation really helped me."
        assert form.locator('input[name="vs_hard"][value="less"]').is_checked()
        assert page.locator("#progress").inner_text() == "calibration: 0/1 done"
