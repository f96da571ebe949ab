"""`modlens browse` on a profile it prepared before: the extension uses the daemon address and
token of this run's seed.json. It applied seed.json only on the profile's first start, so after the
daemon moved (another --port) or its token changed (`modlens pair --rotate`, the fix browse itself
prints), `modlens browse` opened an extension still pointed at the old daemon: loaded, not paired."""
from __future__ import annotations

from .harness import Daemon, free_port, paired_browser, wait_for


def test_browse_again_connects_to_the_daemon_its_seed_names(playwright_instance, tmp_path):
    # the same profile and extension folder each time, as `modlens browse` without --profile
    first = Daemon(tmp_path / "first-home")
    first.start()
    try:
        b = paired_browser(playwright_instance, tmp_path, first, consent=False)
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
        b = paired_browser(playwright_instance, tmp_path, second, consent=False)
        try:
            state = wait_for(lambda: (s := b.state())["conn"] == "ready" and s, 30,
                             "the extension to connect to the daemon this browse's seed names")
            assert state["settings"]["daemonUrl"] == second.url
        finally:
            b.close()
    finally:
        second.stop()


def test_a_seeded_setting_changed_in_the_options_outlives_a_restart_with_the_same_seed(playwright_instance, tmp_path):
    # the seed is applied when browse wrote a new one, not on every start: a daemon address the
    # participant set in the options (seed.json carries one) stays while browse writes the same seed
    d = Daemon(tmp_path / "home")
    elsewhere = f"ws://127.0.0.1:{free_port()}/ws"
    seed_file = tmp_path / "extension" / "seed.json"
    d.start()
    try:
        b = paired_browser(playwright_instance, tmp_path, d, consent=False)
        try:
            wait_for(lambda: b.state()["conn"] == "ready", 30, "the extension to connect")
            seed, extension_id = seed_file.read_bytes(), b.extension_id
            assert d.url.encode() in seed
            b.set_settings({"daemonUrl": elsewhere})
        finally:
            b.close()
        b = paired_browser(playwright_instance, tmp_path, d, consent=False)  # `modlens browse` again, the same daemon
        try:
            assert (seed_file.read_bytes(), b.extension_id) == (seed, extension_id), "not the same seed and profile"
            assert b.state()["settings"]["daemonUrl"] == elsewhere
        finally:
            b.close()
    finally:
        d.stop()
