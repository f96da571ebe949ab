"""Every path that scores with a remote detector closes its HTTP session (detectors/remote.py):
`modlens score --detector http|perspective` printed "Unclosed client session" on stderr, because
the CLI (like the audits) runs `ascore()` under `asyncio.run()`, whose loop was closed before the
detector's `close()` could close the session made on it. A loopback fake API answers both."""
from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import aiohttp
import pytest
from aiohttp import web

from threaded_server import ThreadedServer

from modlens.cli import main
from modlens.detectors.http import HttpDetector
from modlens.detectors.perspective import PerspectiveDetector

pytestmark = pytest.mark.timeout(120)
KEY = "fake-perspective-key-0123456789"
UNCLOSED = ("Unclosed client session", "Unclosed connector")


async def _http(request: web.Request) -> web.Response:
    await request.read()
    return web.json_response({"score": 0.25})


async def _perspective(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response({"attributeScores": {a: {"summaryScore": {"value": 0.5, "type": "PROBABILITY"}}
                                                  for a in body["requestedAttributes"]}})


@pytest.fixture(scope="module")
def api():
    app = web.Application()
    app.router.add_post("/score", _http)
    app.router.add_post("/v1alpha1/comments:analyze", _perspective)
    server = ThreadedServer(app)
    yield server.base
    server.stop()


@pytest.fixture
def opened(monkeypatch) -> list[aiohttp.ClientSession]:
    """Every aiohttp session the test opens, recorded as it is made."""
    sessions: list[aiohttp.ClientSession] = []
    init = aiohttp.ClientSession.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        sessions.append(self)

    monkeypatch.setattr(aiohttp.ClientSession, "__init__", recording_init)
    return sessions


@pytest.mark.parametrize("options", [
    ["--detector", "http", "-o", "http.url={base}/score", "-o", "http.score_path=score"],
    # qps: the rate limit (1 by default) only slows the four calls down
    ["--detector", "perspective", "-o", "perspective.endpoint={base}/v1alpha1/comments:analyze",
     "-o", "perspective.qps=100"]],
    ids=["http", "perspective"])
def test_modlens_score_with_a_remote_detector_leaves_no_unclosed_session(api, options, opened, monkeypatch, capsys,
                                                                          caplog):
    """--normalize scores twice, each under its own asyncio.run(): two sessions, both closed. The command runs
    in-process: every session it opened is seen closed when it returns, and none complains when collected."""
    argv = [o.format(base=api) for o in options]
    monkeypatch.setenv("PERSPECTIVE_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["score", *argv, "--normalize", "you idiot", "hello"]) == 0
        out = capsys.readouterr()
        assert len(opened) >= 2 and all(session.closed for session in opened), opened
        opened.clear()
        gc.collect()
    assert out.out.count('"toxicity"') >= 4 and '"error"' not in out.out, out.out
    shown = out.err + caplog.text + "".join(str(w.message) for w in caught)
    assert not any(u in shown for u in UNCLOSED), shown


def _detectors(base: str) -> list:
    return [HttpDetector(f"{base}/score", "score", qps=100),
            PerspectiveDetector(KEY, endpoint=f"{base}/v1alpha1/comments:analyze", qps=100)]


def test_ascore_under_asyncio_run_then_close_leaves_no_unclosed_session(api, caplog):
    """The audits' path (audit/run.py, rescore.py, ...: asyncio.run over the engine), the blocking
    `score()` path and both together: closed by the time the loop ends or by `close()`."""
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for det in _detectors(api):
            assert asyncio.run(det.ascore(["a", "b"]))[0] is not None
            assert asyncio.run(det.ascore(["c"]))[0] is not None
            assert det.score(["d"])[0] is not None
            det.close()
        del det
        gc.collect()
    shown = caplog.text + "".join(str(w.message) for w in caught)
    assert not any(u in shown for u in UNCLOSED), shown
    assert "Task was destroyed but it is pending" not in shown


async def test_aclose_on_the_daemon_loop_closes_the_session_and_its_guard(api):
    """The daemon's loop: `aclose()` closes the session now and leaves no task behind."""
    for det in _detectors(api):
        assert (await det.ascore(["a"]))[0] is not None
        session = det.client._sessions[asyncio.get_running_loop()][0]
        await det.client.aclose()
        assert session.closed and not det.client._sessions
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


@pytest.mark.parametrize("argv", [["perturb", "you stupid idiot", "--target", "profanity-check", "--threshold", "0"],
                                  ["perturb", "you stupid idiot", "--target", "profanity-check", "--attack", "tae"],
                                  ["attack", "--recipe", "deepwordbug", "--target", "profanity-check",
                                   "--text", "you stupid idiot"]],
                         ids=["perturb", "perturb-attack", "attack-text"])
def test_perturb_and_attack_text_with_a_remote_detector_close_its_session(api, argv, opened, tmp_path, capsys,
                                                                           caplog):
    """perturb and attack --text score every variant with every detector of the study, a remote one
    too: its session is closed when the command returns, as `modlens score` closes it."""
    study = tmp_path / "study.toml"
    study.write_text(f'study_id = "remote"\n[[detectors]]\nname = "http"\n'
                     f'options = {{ url = "{api}/score", score_path = "score", qps = 100 }}\n'
                     '[[detectors]]\nname = "profanity-check"\n')
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*argv, "--study", str(study)]) == 0
        out = capsys.readouterr()
        assert opened and all(session.closed for session in opened), opened
        opened.clear()
        gc.collect()
    assert '"http"' in out.out and '"error"' not in out.out, out.out
    shown = out.err + caplog.text + "".join(str(w.message) for w in caught)
    assert not any(u in shown for u in UNCLOSED), shown
