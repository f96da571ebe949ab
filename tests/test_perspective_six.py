"""The Perspective endpoint answers the six production attributes from minilm-toxicity-6."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from daemon_helpers import TOKEN, study
from threaded_server import ThreadedServer
from modlens.config import PerspectiveConfig
from modlens.daemon.app import create_app
from modlens.perspective.attributes import PRODUCTION, resolve

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def six():
    from modlens.detectors import registry
    det = registry.create("minilm-toxicity-6", batch_size=16)
    yield det
    det.close()


def test_defaults_map_all_six_attributes_to_it(six):
    """Alone in a study it answers all six; beside the older defaults, TOXICITY and PROFANITY stay theirs."""
    got = resolve(PerspectiveConfig(), {"minilm-toxicity-6": six})
    assert {a: (s.detector, s.label) for a, s in got.items() if a in PRODUCTION} == {
        "TOXICITY": ("minilm-toxicity-6", "toxicity"), "SEVERE_TOXICITY": ("minilm-toxicity-6", "severe_toxicity"),
        "IDENTITY_ATTACK": ("minilm-toxicity-6", "identity_attack"), "INSULT": ("minilm-toxicity-6", "insult"),
        "PROFANITY": ("minilm-toxicity-6", "profanity"), "THREAT": ("minilm-toxicity-6", "threat")}
    both = resolve(PerspectiveConfig(), {"minilm-toxicity": six, "profanity-check": six, "minilm-toxicity-6": six})
    assert both["TOXICITY"].detector == "minilm-toxicity" and both["PROFANITY"].detector == "profanity-check"
    assert {both[a].detector for a in ("SEVERE_TOXICITY", "INSULT", "THREAT", "IDENTITY_ATTACK")} == {"minilm-toxicity-6"}


def test_endpoint_answers_six_scores(tmp_path, six):
    text = "you are a stupid idiot and I will find you"
    direct = six.score([text])[0]  # before the app, which closes its detectors when it stops
    app = create_app(study(detectors=[{"name": "minilm-toxicity-6"}]), tmp_path / "study.sqlite", TOKEN,
                     detectors={"minilm-toxicity-6": six})
    srv = ThreadedServer(app)
    body = {"comment": {"text": text}, "languages": ["en"],
            "requestedAttributes": {a: {} for a in PRODUCTION}}

    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{srv.base}/v1alpha1/comments:analyze", params={"key": TOKEN}, data=json.dumps(body)) as r:
                return r.status, await r.json(content_type=None)
    try:
        status, got = asyncio.run(go())
    finally:
        srv.stop()
    assert status == 200, got
    scores = got["attributeScores"]
    assert set(scores) == set(PRODUCTION)
    for attr, value in scores.items():
        v = value["summaryScore"]["value"]
        assert 0.0 <= v <= 1.0, attr
    assert abs(scores["INSULT"]["summaryScore"]["value"] - direct["insult"]) < 1e-6
