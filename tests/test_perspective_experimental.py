"""Perspective's `*_EXPERIMENTAL` attributes were models of their own, not its production ones: a
client that asks for TOXICITY_EXPERIMENTAL beside TOXICITY reads the two as two models' scores. No
detector here is an experimental model of Perspective's, so such a name is answered only where the
study maps it (`[perspective.attributes.TOXICITY_EXPERIMENTAL]`) or a detector has a label of that
very name; otherwise it is refused as not available (dropped with dropUnsupportedAttributes), never
the production label's score again under the experimental name."""
from __future__ import annotations

import pytest

from daemon_helpers import TOKEN, study
from test_perspective_api import MultiLabel
from test_perspective_languages import _analyze
from threaded_server import ThreadedServer
from modlens.daemon.app import create_app

pytestmark = pytest.mark.timeout(120)


def _server(tmp_path, **perspective):
    cfg = study(detectors=[{"name": "profanity-check", "id": "ml"}], perspective=perspective)
    return ThreadedServer(create_app(cfg, tmp_path / "study.sqlite", TOKEN, detectors={"ml": MultiLabel()}))


def test_an_experimental_name_is_not_the_production_score(tmp_path):
    srv = _server(tmp_path)
    try:
        body = {"comment": {"text": "you idiot"}, "requestedAttributes": {"TOXICITY": {}, "TOXICITY_EXPERIMENTAL": {}}}
        status, got = _analyze(srv.base, body)
        assert status == 400, got
        assert got["error"]["details"][0]["errorType"] == "ATTRIBUTE_NOT_AVAILABLE"
        assert got["error"]["details"][0]["attribute"] == "TOXICITY_EXPERIMENTAL"
        status, got = _analyze(srv.base, {**body, "dropUnsupportedAttributes": True})
        assert status == 200 and set(got["attributeScores"]) == {"TOXICITY"}
        for name in ("SEVERE_TOXICITY_EXPERIMENTAL", "INSULT_EXPERIMENTAL", "THREAT_EXPERIMENTAL"):
            status, got = _analyze(srv.base, {"comment": {"text": "you idiot"}, "requestedAttributes": {name: {}}})
            assert status == 400 and got["error"]["details"][0]["errorType"] == "ATTRIBUTE_NOT_AVAILABLE", name
    finally:
        srv.stop()


def test_a_study_may_map_an_experimental_name(tmp_path):
    srv = _server(tmp_path, attributes={"TOXICITY_EXPERIMENTAL": {"detector": "ml", "label": "toxicity"}})
    try:
        status, got = _analyze(srv.base, {"comment": {"text": "you idiot"},
                                          "requestedAttributes": {"TOXICITY_EXPERIMENTAL": {}}})
        assert status == 200, got
        assert got["attributeScores"]["TOXICITY_EXPERIMENTAL"]["detector"]["label"] == "toxicity"
    finally:
        srv.stop()
