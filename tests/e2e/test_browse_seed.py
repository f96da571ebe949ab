"""`modlens browse` on a profile it prepared before: the extension uses the daemon address and
token of this run's seed.json. It applied seed.json only on the profile's first start, so after the
daemon moved (another --port) or its token changed (`modlens pair --rotate`, the fix browse itself
prints), `modlens browse` opened an extension still pointed at the old daemon: loaded, not paired."""
from __future__ import annotations

from .harness import Browser, Daemon, prepare_extension, wait_for


def open_profile(playwright, root, daemon) -> Browser:
    # the same profile and extension folder each time, as `modlens browse` without --profile
    return Browser(playwright, root / "profile", prepare_extension(root / "extension", daemon))


def test_browse_again_connects_to_the_daemon_its_seed_names(playwright_instance, tmp_path):
    first = Daemon(tmp_path / "first-home")
    first.start()
    try:
        b = open_profile(playwright_instance, tmp_path, first)
        try:
            wait_for(lambda: b.state()["conn"] == "ready", 30, "the extension to connect to the first daemon")
        finally:
            b.close()
    finally:
        first.stop()

    second = Daemon(tmp_path / "second-home")  # another port and another pairing token
    assert (second.port, second.token) != (first.port, first.token)
    second.start()
    try:
        b = open_profile(playwright_instance, tmp_path, second)
        try:
            state = wait_for(lambda: (s := b.state())["conn"] == "ready" and s, 30,
                             "the extension to connect to the daemon this browse's seed names")
            assert state["settings"]["daemonUrl"] == second.url
        finally:
            b.close()
    finally:
        second.stop()


def test_a_setting_changed_in_the_options_outlives_a_restart_with_the_same_seed(playwright_instance, tmp_path):
    # the seed is applied when browse wrote a new one, not on every start: what the participant set stays
    d = Daemon(tmp_path / "home")
    d.start()
    try:
        ext = prepare_extension(tmp_path / "extension", d)
        b = Browser(playwright_instance, tmp_path / "profile", ext)
        try:
            wait_for(lambda: b.state()["conn"] == "ready", 30, "the extension to connect")
            b.set_settings({"raterId": "chosen-by-hand"})
        finally:
            b.close()
        b = Browser(playwright_instance, tmp_path / "profile", ext)  # the same copy: the same seed.json
        try:
            assert b.state()["settings"]["raterId"] == "chosen-by-hand"
        finally:
            b.close()
    finally:
        d.stop()
