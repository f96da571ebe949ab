"""Perspective clients from PyPI, installed unchanged in environments of their own (`make
perspective-clients`), against a real `modlens serve --perspective-only --perspective-proxy`: each
calls Google's address written in its code, and gets there with only the environment the daemon
prints (HTTPS_PROXY and the CA files). Nothing leaves the machine: the proxy answers CONNECT for
commentanalyzer.googleapis.com alone, by answering itself.

HELM's PerspectiveAPIClient, lm-eval's realtoxicityprompts metric and begentle (crfm-helm and lm-eval
installed without their heavy dependencies, which their Perspective code does not import) run the same
way; 4CAT's processor is not on PyPI, so its request shape is sent with Google's client.

What the embedded detectors cannot answer stays refused: PySpective's default `score()`,
perspectiveapi's full attribute list and HELM's default attributes ask for SEXUALLY_EXPLICIT and
FLIRTATION, which no detector here was trained for (docs/PERSPECTIVE.md, "Attributes no detector here
answers"); comments in languages other than English, sent without `languages` as 4CAT sends them, are
refused for want of a detector in their language."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from daemon_helpers import serve_process
from modlens.perspective import keys
from realtools import requires

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parents[1]
CLIENTS = REPO / ".venv-perspective-clients" / "bin" / "python"
PERSPECTIVE_PY = REPO / ".venv-perspective-py" / "bin" / "python"
HELM_VENV = REPO / ".venv-perspective-helm" / "bin" / "python"
LMEVAL_VENV = REPO / ".venv-perspective-lmeval" / "bin" / "python"
BEGENTLE_VENV = REPO / ".venv-perspective-begentle" / "bin" / "python"
PRODUCTION = ["TOXICITY", "SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT"]


def _printed_environment(log: Path, timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [ln.strip() for ln in log.read_text().splitlines() if ln.strip().startswith("export ")]
        if any(ln.startswith("export NODE_EXTRA_CA_CERTS=") for ln in lines):
            return dict(shlex.split(ln.removeprefix("export "))[0].split("=", 1) for ln in lines)
        time.sleep(0.2)
    raise AssertionError(f"no drop-in lines printed:\n{log.read_text()}")


@pytest.fixture(scope="module")
def dropin(tmp_path_factory):
    """The client's environment, and the daemon's log (its access lines say which paths were called)."""
    home = tmp_path_factory.mktemp("dropin-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MODLENS_HOME", str(home))
        key = keys.rotate()
        proc, _ = serve_process(home, "--perspective-only", "--perspective-proxy", "0", timeout=180)
    try:
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "all_proxy", "http_proxy")}
        env.update(_printed_environment(home / "serve.log"), MODLENS_API_KEY=key)
        yield env, home / "serve.log"
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="module")
def served(dropin):
    return dropin[0]


def _run(python: Path, script: str, env: dict[str, str]) -> dict:
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# each script gets the attribute list as its first line (the clients run in their own Python)
HEAD = f"PRODUCTION = {PRODUCTION!r}\n"
PYPERSPECTIVE = HEAD + """
import json, os
from PyPerspective.Perspective import Perspective
from PyPerspective.errors import InvalidAuthKey
client = Perspective(os.environ["MODLENS_API_KEY"])       # its key probe: an empty POST
try:
    Perspective("not-the-key")
    wrong = "constructed"
except InvalidAuthKey:
    wrong = "InvalidAuthKey"
c = client.get_score("you are a stupid idiot", tests=PRODUCTION)
print(json.dumps({"wrong": wrong, "scores": {a.name: a.score for a in c.attributes}, "langs": c.requests_langs}))
"""

PYSPECTIVE = HEAD + """
import json, os
from pyspective.pyspective import PyspectiveAPI
client = PyspectiveAPI(os.environ["MODLENS_API_KEY"])
one = {a: client.score("you are a stupid idiot", test=a) for a in PRODUCTION}
suggested = client.suggest("you are a stupid idiot", 0.9)
try:
    client.score("you are a stupid idiot")                  # all eight, SEXUALLY_EXPLICIT and FLIRTATION too
    default = "scored"
except KeyError as err:
    default = "KeyError " + str(err)
print(json.dumps({"one": one, "suggested": suggested, "default": default}))
"""

PERSPECTIVEAPI = """
import asyncio, json, os
from perspective import Attribute, Perspective as AsyncPerspective
from perspective.blocking import Perspective
key = os.environ["MODLENS_API_KEY"]
wanted = [Attribute.TOXICITY, Attribute.SEVERE_TOXICITY, Attribute.INSULT, Attribute.THREAT]
sync = Perspective(key).score("you are a stupid idiot", attributes=wanted)
async def go():
    return await AsyncPerspective(key).score("you are a stupid idiot", attributes=wanted)
both = [sync, asyncio.run(go())]
try:
    Perspective(key).score("you are a stupid idiot", attributes=list(Attribute))   # SEXUALLY_EXPLICIT, FLIRTATION too
    full = "scored"
except KeyError as err:
    full = "KeyError " + str(err)
print(json.dumps({"full": full,
                  "scores": [{a: getattr(s, a) for a in ("toxicity", "severe_toxicity", "insult", "threat")} for s in both]}))
"""

PERSPECTIVE_DOT_PY = HEAD + """
import json, os
from perspective import Client
from perspective.errors import UnsupportedLanguage
client = Client(token=os.environ["MODLENS_API_KEY"])   # Google's client, Google's discovery address
got = client.analyze("you are a stupid idiot", attributes=PRODUCTION, language="en")
try:
    client.analyze("eres un idiota", attributes=["TOXICITY"], language="es")
    refused = None
except UnsupportedLanguage as err:
    refused = str(err)
print(json.dumps({"scores": got, "refused": refused}, default=str))
"""


@requires("perspective-clients")
def test_pyperspective_constructs_and_scores(served):
    out = _run(CLIENTS, PYPERSPECTIVE, served)
    assert out["wrong"] == "InvalidAuthKey"
    assert set(out["scores"]) == set(PRODUCTION) and all(0 <= v <= 1 for v in out["scores"].values())
    assert out["scores"]["TOXICITY"] > 0.5


@requires("perspective-clients")
def test_pyspective_scores_each_attribute_and_suggests(served):
    out = _run(CLIENTS, PYSPECTIVE, served)
    assert all(set(v) == {a} and 0 <= v[a] <= 1 for a, v in out["one"].items())
    assert out["suggested"] == "Successed"
    assert out["default"] == "KeyError 'attributeScores'"  # SEXUALLY_EXPLICIT, FLIRTATION: refused here


@requires("perspective-clients")
def test_perspectiveapi_sync_and_async(served):
    out = _run(CLIENTS, PERSPECTIVEAPI, served)
    for scores in out["scores"]:
        assert all(0 <= v <= 1 for v in scores.values()) and scores["toxicity"] > 0.5
    assert out["full"] == "KeyError 'attributeScores'"  # its full list: SEXUALLY_EXPLICIT, FLIRTATION refused here


@requires("perspective-py")
def test_perspective_dot_py_scores_and_parses_the_language_error(served):
    out = _run(PERSPECTIVE_PY, PERSPECTIVE_DOT_PY, served)
    assert out["refused"] == 'Spanish (es) is not supported by "TOXICITY" attribute.'
    assert set(out["scores"]) == set(PRODUCTION) and all(0 <= v <= 100 for v in out["scores"].values())


NODE_CLIENT = """
const Perspective = require('perspective-api-client');   // as published: Google's address, its own axios
const perspective = new Perspective({apiKey: process.env.MODLENS_API_KEY});
perspective.analyze('you are a stupid idiot', {attributes: ['toxicity', 'insult']})
  .then(got => process.stdout.write(JSON.stringify(got)))
  .catch(err => { console.error(err.message, JSON.stringify(err.response && err.response.data)); process.exit(1); });
"""


@requires("node", "perspective-api-client")
def test_npm_client_unchanged(served):
    """The npm client's axios (0.18) sends `POST https://commentanalyzer.googleapis.com/...` to the
    proxy itself instead of tunnelling: the drop-in answers that too."""
    done = subprocess.run(["node", "-e", NODE_CLIENT], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=served)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    assert set(got["attributeScores"]) == {"TOXICITY", "INSULT"}
    assert got["attributeScores"]["TOXICITY"]["summaryScore"]["value"] > 0.5


HELM_TEXTS = ["you are a stupid idiot", "thank you, have a nice day", "caf\u00e9 \u2615 100% & <ok>? #1 idiot"]
HELM = HEAD + f"TEXTS = {HELM_TEXTS!r}\n" + """
import json, os, sys
from dataclasses import asdict
from helm.clients.perspective_api_client import PerspectiveAPIClient
from helm.common.cache import SqliteCacheConfig
from helm.common.perspective_api_request import DEFAULT_ATTRIBUTES, PerspectiveAPIRequest
# as HELM's AutoClient makes it: the key from credentials.conf, an SQLite cache per organization
client = PerspectiveAPIClient(os.environ["MODLENS_API_KEY"], SqliteCacheConfig(os.environ["HELM_CACHE"]))
six = client.get_toxicity_scores(PerspectiveAPIRequest(text_batch=TEXTS, attributes=PRODUCTION))
default = client.get_toxicity_scores(PerspectiveAPIRequest(text_batch=TEXTS))    # HELM's ToxicityMetric asks this
# HELM cuts a text at 20,480 characters; Perspective's limit is 20,480 UTF-8 bytes
long = client.get_toxicity_scores(PerspectiveAPIRequest(text_batch=["\u00e9" * 30000, "ok"], attributes=["TOXICITY"]))
print(json.dumps({"default_attributes": DEFAULT_ATTRIBUTES, "six": asdict(six), "default": asdict(default),
                  "long": asdict(long)}))
"""


def _access_lines(log: Path, method_path: str) -> int:
    return sum(f'"{method_path} HTTP/1.1"' in ln for ln in log.read_text(errors="replace").splitlines())


@requires("perspective-helm")
def test_helm_scores_a_batch_and_its_default_attributes_are_refused(dropin, tmp_path):
    """HELM's client (crfm-helm 0.5.16) sends each call as googleapiclient's batch (`POST /batch`,
    one part per distinct text, the text itself as the part's id). With the six attributes modlens
    answers, every text comes back with all six; with HELM's defaults (SEXUALLY_EXPLICIT and FLIRTATION
    too) each part is refused, its callback raises, and HELM reports the call failed."""
    env, log = dropin
    batches, analyzes = _access_lines(log, "POST /batch"), _access_lines(log, "POST /v1alpha1/comments:analyze")
    out = _run(HELM_VENV, HELM, {**env, "HELM_CACHE": str(tmp_path / "perspectiveapi.sqlite")})
    assert _access_lines(log, "POST /batch") - batches == 3                      # one batch per call, no single calls
    assert _access_lines(log, "POST /v1alpha1/comments:analyze") == analyzes
    six = out["six"]
    assert six["success"] and set(six["text_to_toxicity_attributes"]) == set(HELM_TEXTS)
    for text, got in six["text_to_toxicity_attributes"].items():
        assert all(0 <= got[f"{a.lower()}_score"] <= 1 for a in PRODUCTION), text
        assert got["sexually_explicit_score"] is None and got["flirtation_score"] is None
    scores = six["text_to_toxicity_attributes"]
    assert scores["you are a stupid idiot"]["toxicity_score"] > 0.5 > scores["thank you, have a nice day"]["toxicity_score"]
    assert {"SEXUALLY_EXPLICIT", "FLIRTATION"} <= set(out["default_attributes"])
    default = out["default"]
    assert not default["success"] and not default["text_to_toxicity_attributes"]
    assert "HttpError 400" in default["error"] and "ATTRIBUTE_NOT_AVAILABLE" in default["error"]
    assert not out["long"]["success"] and "COMMENT_TOO_LONG" in out["long"]["error"]   # the whole batch fails, as it would at Google


LMEVAL = """
import importlib.util, json, logging, os
from pathlib import Path
import lm_eval
tasks = Path(lm_eval.__file__).parent / "tasks"
# the harness's own YAML loader, loaded by its path: `import lm_eval.tasks` would import the task manager and
# with it datasets and torch, which its Perspective metric does not need (not installed)
spec = importlib.util.spec_from_file_location("lm_eval_yaml_loader", tasks / "_yaml_loader.py")
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
config = loader.load_yaml(tasks / "realtoxicityprompts" / "realtoxicityprompts.yaml")
process_results = config["process_results"]           # `!function metric.toxicity_perspective_api`
warnings = []
logging.getLogger().addHandler(type("H", (logging.Handler,), {"emit": lambda self, r: warnings.append(r.getMessage())})())
doc = {"prompt": {"text": "So I told him"}}
generations = ["you are a stupid idiot", "thank you, have a nice day"]
right = {g: process_results(doc, [g]) for g in generations}       # as the harness calls it: (doc, [generation])
os.environ["PERSPECTIVE_API_KEY"] = "not-the-key"
wrong = process_results(doc, [generations[0]])
print(json.dumps({"function": f"{process_results.__module__}.{process_results.__name__}", "right": right,
                  "wrong": wrong, "warnings": warnings}))
"""


@requires("perspective-lmeval")
def test_lm_eval_realtoxicityprompts_metric(served):
    """lm-eval 0.4.13's realtoxicityprompts task, its `process_results` resolved from the task's YAML by
    the harness's loader, posts each generation with requests. It turns any failure into a score of
    0 (non-toxic) and a warning: a wrong key is modlens's 400, logged, and scored 0."""
    out = _run(LMEVAL_VENV, LMEVAL, {**served, "PERSPECTIVE_API_KEY": served["MODLENS_API_KEY"]})
    assert out["function"] == "lm_eval.tasks.realtoxicityprompts.metric.toxicity_perspective_api"
    toxic, kind = out["right"]["you are a stupid idiot"], out["right"]["thank you, have a nice day"]
    assert toxic["score"] == 1 and toxic["perspective_api_toxicity_score"] > 0.5
    assert kind["score"] == 0 and 0 < kind["perspective_api_toxicity_score"] < 0.5
    assert out["wrong"] == {"score": 0, "perspective_api_toxicity_score": 0}
    assert any("400 Client Error" in w for w in out["warnings"]), out["warnings"]


BEGENTLE = """
import json, os
from begentle import CommentAnalyzer
from googleapiclient.errors import HttpError
analyzer = CommentAnalyzer(os.environ["MODLENS_API_KEY"])    # Google's client, Google's discovery address
scores = {t: analyzer.analyze(t) for t in ["You suck! I hate you, never come back.", "thank you, have a nice day"]}
try:
    CommentAnalyzer("not-the-key").analyze("You suck!")
    wrong = None
except HttpError as err:
    wrong = [err.resp.status, json.loads(err.content)["error"]["message"]]
print(json.dumps({"scores": scores, "wrong": wrong}))
"""


@requires("perspective-begentle")
def test_begentle_analyzes(served):
    out = _run(BEGENTLE_VENV, BEGENTLE, served)
    assert out["scores"]["You suck! I hate you, never come back."] > 0.5 > out["scores"]["thank you, have a nice day"]
    assert out["wrong"] == [400, "API key not valid. Please pass a valid API key."]


# 4CAT's Perspective processor (github.com/digitalmethodsinitiative/4cat, processors/machine_learning/
# perspective.py) is not on PyPI. Its request, sent here with Google's client from begentle's environment
# (google-api-python-client 2.202.0 and PySocks, nothing of begentle's): Google's discovery address, one `comments().analyze` per item, `comment.text` and
# `requestedAttributes` ({NAME: {}} for the attributes picked among the six production ones), no
# `languages`, no `doNotStore`; an HttpError is reported as `str(err)` and the item skipped.
FOURCAT_ITEMS = {"en1": "you are a stupid idiot", "en2": "thank you, have a nice day",
                 "en3": "What kind of idiot name is foo?", "en4": "I will find you and hurt you",
                 "en5": "I think the article makes a fair point.",
                 "es": "eres un idiota y no sabes nada de lo que dices",
                 "de": "du bist ein Idiot und weißt nicht, was du sagst",
                 "fr": "tu es un idiot et tu ne sais pas ce que tu dis",
                 "ru": "ты идиот и не знаешь, что говоришь"}
FOURCAT = HEAD + f"ITEMS = {FOURCAT_ITEMS!r}\n" + """
import json, os
from googleapiclient import discovery
from googleapiclient.errors import HttpError
client = discovery.build("commentanalyzer", "v1alpha1", developerKey=os.environ["MODLENS_API_KEY"],
    discoveryServiceUrl="https://commentanalyzer.googleapis.com/$discovery/rest?version=v1alpha1", static_discovery=False)
answered, refused = {}, {}
for name, text in ITEMS.items():
    body = {"comment": {"text": text}, "requestedAttributes": {a: {} for a in PRODUCTION}}
    try:
        got = client.comments().analyze(body=body).execute()
        answered[name] = {a: s["summaryScore"]["value"] for a, s in got["attributeScores"].items()}
    except HttpError as err:
        refused[name] = {"status": err.resp.status, "error": json.loads(err.content)["error"], "str": str(err)}
print(json.dumps({"answered": answered, "refused": refused}))
"""


@requires("perspective-begentle")
def test_4cat_request_shape(served):
    """Offline, only English is covered: the English items get all six scores, and the Spanish,
    German, French and Russian ones Google's language refusal, which names the detected language."""
    out = _run(BEGENTLE_VENV, FOURCAT, served)
    assert set(out["answered"]) == {f"en{i}" for i in range(1, 6)}
    assert all(set(s) == set(PRODUCTION) and all(0 <= v <= 1 for v in s.values()) for s in out["answered"].values())
    assert set(out["refused"]) == {"es", "de", "fr", "ru"}
    for lang, got in out["refused"].items():
        assert got["status"] == 400 and got["error"]["status"] == "INVALID_ARGUMENT"
        assert got["error"]["message"] == f"Attribute TOXICITY does not support request languages: {lang}"
        assert got["error"]["details"][0]["errorType"] == "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"
        assert f"returned \"Attribute TOXICITY does not support request languages: {lang}\"" in got["str"]
