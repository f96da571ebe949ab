"""The Perspective clients people use, pointed at a real `modlens serve --perspective-only` with the
smallest change docs/PERSPECTIVE.md shows for each: Google's Python client (the discovery URL), the
PyPI wrapper `perspective` and the npm `perspective-api-client` (both hard-code Google's address).
Each sends 300 Davidson tweets as bots send comments, with no `languages`, and every tweet must come
back with scores in [0, 1] for all six production attributes from the embedded detectors."""
from __future__ import annotations

import functools
import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest

from daemon_helpers import serve_process
from modlens.datasets import davidson
from modlens.perspective import keys
from realtools import requires

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parents[1]
DAVIDSON = Path(davidson.__file__).with_name("data") / "davidson" / "labeled_data.csv"
# the six production attributes, the usual bot request: all answered offline by default
ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT")
N_TWEETS = 300
THREADS = 6  # a bot's few workers; concurrent calls share the detectors' batches


def _tweets() -> list[str]:
    """300 tweets spread over the whole file (every 80th; none of them among the 18 that are not in
    English, tests/test_perspective_languages.py), as the file has them after entity decoding
    (the file is read once for the three clients)."""
    return list(_read_tweets())


@functools.cache
def _read_tweets() -> tuple[str, ...]:
    items = list(davidson.read(DAVIDSON).iter_items())
    return tuple(it.text for it in items[::80][:N_TWEETS])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """(base URL, API key) of `modlens serve --perspective-only` with the embedded defaults."""
    home = tmp_path_factory.mktemp("serve-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MODLENS_HOME", str(home))
        key = keys.rotate()  # what `modlens pair --api-key` prints
        proc, info = serve_process(home, "--perspective-only", timeout=180)
    try:
        yield f"http://127.0.0.1:{info['port']}", key
    finally:
        proc.terminate()
        proc.wait(30)


def _each(texts: list[str], analyze: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(analyze, texts))


def _assert_scored(texts: list[str], answers: list[dict[str, Any]]) -> None:
    assert len(answers) == len(texts) == N_TWEETS
    for text, got in zip(texts, answers):
        assert set(got["attributeScores"]) == set(ATTRIBUTES), (text, got)
        for attr in ATTRIBUTES:
            value = got["attributeScores"][attr]["summaryScore"]["value"]
            assert 0.0 <= value <= 1.0, (text, attr, value)
        assert got["detectedLanguages"] == ["en"], text


def test_googles_python_client(daemon):
    from googleapiclient import discovery

    base, key = daemon
    texts = _tweets()
    build = {"developerKey": key, "static_discovery": False,
             "discoveryServiceUrl": f"{base}/$discovery/rest?version=v1alpha1"}

    def analyze(text: str) -> dict[str, Any]:
        client = discovery.build("commentanalyzer", "v1alpha1", **build)  # httplib2: one per thread
        body = {"comment": {"text": text}, "requestedAttributes": {a: {} for a in ATTRIBUTES}}
        return client.comments().analyze(body=body).execute()

    _assert_scored(texts, _each(texts, analyze))


def test_pypi_perspective_wrapper(daemon):
    """`perspective` 1.0.3 (PyPI): urllib with the address in `api_client.url`; logs every call
    (it leaves doNotStore out)."""
    from perspective import PerspectiveAPI

    base, key = daemon
    texts = _tweets()

    def analyze(text: str) -> dict[str, Any]:
        client = PerspectiveAPI(key)
        client.api_client.url = f"{base}/v1alpha1/{{endpoint}}"  # the one changed line
        return client.analyze_comment(text, requested_attributes={a: {} for a in ATTRIBUTES})

    _assert_scored(texts, _each(texts, analyze))


# the npm client posts with its own axios to Google's address: an interceptor rewrites the address
NODE_CLIENT = """
const Perspective = require('perspective-api-client');
const axios = require(require.resolve('axios', {paths: [require.resolve('perspective-api-client')]}));
axios.interceptors.request.use(config =>
  ({...config, url: config.url.replace('https://commentanalyzer.googleapis.com', process.env.MODLENS_URL)}));

const perspective = new Perspective({apiKey: process.env.MODLENS_API_KEY});
const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const answers = new Array(texts.length);
let next = 0;
async function worker() {
  while (next < texts.length) {
    const i = next++;
    answers[i] = await perspective.analyze(texts[i], {attributes: JSON.parse(process.env.ATTRIBUTES)});
  }
}
Promise.all(Array.from({length: Number(process.env.WORKERS)}, worker))
  .then(() => process.stdout.write(JSON.stringify(answers)))
  .catch(err => { console.error(err.message, JSON.stringify(err.response && err.response.data)); process.exit(1); });
"""


@requires("node", "perspective-api-client")
def test_npm_perspective_api_client(daemon):
    base, key = daemon
    texts = _tweets()
    done = subprocess.run(["node", "-e", NODE_CLIENT], cwd=REPO, input=json.dumps(texts), capture_output=True,
                          text=True, timeout=240, env={"PATH": shutil.which("node").rsplit("/", 1)[0],
                                                       "MODLENS_URL": base, "MODLENS_API_KEY": key,
                                                       "WORKERS": str(THREADS),
                                                       "ATTRIBUTES": json.dumps([a.lower() for a in ATTRIBUTES])})
    assert done.returncode == 0, done.stderr
    _assert_scored(texts, json.loads(done.stdout))
