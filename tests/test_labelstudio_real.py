"""Label Studio for real (issue 27): the tasks and labeling config `modlens study export-tasks
--format labelstudio` writes go into a running Label Studio (its own environment,
`.venv-labelstudio`, `make labelstudio`), on a loopback port with a temporary data folder.
Through its REST API the test creates the project with that config, imports the tasks, adds a
second user and submits annotations of every task credited to each worker (`completed_by`; the
project from project.json asks for 2 per task), exports the project as JSON, and imports the
export with `modlens rate`: every answer arrives as a rating of rater `labelstudio:<user id>`,
both workers are accepted (Table 11), and importing again adds nothing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from modlens.study import crowd, itemset
from modlens.study.assignment import Plan
from modlens.study import load
from modlens.studylog.store import StudyLog

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LABEL_STUDIO = REPO / ".venv-labelstudio" / "bin" / "label-studio"
TOKEN = "modlens-test-token-0123456789"
# (vs "hard to say" anchor, vs extreme anchor) per derived level, the extreme anchor rated "toxic" (Table 1)
ANCHORS = {"not toxic": ("less", "less"), "hard to say": ("same", "less"), "toxic": ("more", "same")}
ITEMS = [("youtube", "yt-1", "This video explains the tax rules better than my accountant."),
         ("youtube", "yt-2", "Nobody asked for your opinion, go away and stop posting."),
         ("x", "x-1", "What a clown, everything he says is a lie."),
         ("x", "x-2", "The train was late again this morning, third time this week.")]
TOXICITY = {"yt-1": "not toxic", "yt-2": "hard to say", "x-1": "toxic", "x-2": "not toxic"}

if not LABEL_STUDIO.exists():
    pytest.skip(f"{LABEL_STUDIO.parent.parent.name} absent: `make labelstudio` installs Label Studio for this test",
                allow_module_level=True)


def modlens(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "modlens", *args], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, f"modlens {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out.stdout


class LabelStudio:
    def __init__(self, data: Path, port: int):
        self.base = f"http://127.0.0.1:{port}"
        data.mkdir(parents=True, exist_ok=True)
        self.log = data / "label-studio.log"
        # no version check against pypi.org: a test must not depend on the internet
        env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "LATEST_VERSION_CHECK": "false"}
        self.proc = subprocess.Popen(
            [str(LABEL_STUDIO), "start", "--no-browser", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(data), "--username", "admin@example.org", "--password", "modlens-test-pw",
             "--user-token", TOKEN, "--enable-legacy-api-token"],
            env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"label-studio exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(1)
        self.stop()
        raise RuntimeError(f"label-studio did not answer in 240 s: {self.log.read_text()[-2000:]}")

    def api(self, method: str, path: str, body: object = None) -> object:
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Token {TOKEN}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                return json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            raise AssertionError(f"{method} {path}: {err.code} {err.read()[:500]!r}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and its workers
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def test_label_studio_round_trip(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    modlens("study", "init", str(folder), "--study-id", "ls-real", "--title", "Label Studio study")
    items = [{"id": f"i{n:03d}", "platform": p, "comment_key": k, "text": t, "stratum": "all", "score": None}
             for n, (p, k, t) in enumerate(ITEMS, 1)]
    params = {"detector": None, "by": "label:test", "per_platform": 2, "platforms": ["x", "youtube"],
              "min_words": 3, "max_words": 60, "seed": 0, "log": "test", "counts": {}}
    itemset.write({"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION,
                   "sha256": itemset.checksum(params, items), "params": params, "items": items}, folder)
    modlens("study", "assign", str(folder), "--raters", "2", "--items-per-task", "4", "--gold-per-task", "2")
    modlens("study", "export-tasks", str(folder), "--format", "labelstudio", "--out", str(tmp_path / "ls"))
    study = load(folder)
    plan = Plan.load(folder, study)
    db = tmp_path / "study.sqlite"
    from modlens.study.assignment import record_items
    with StudyLog(db) as lg:  # the set's comments, as `modlens serve` logs them
        lg.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        record_items(lg, study, plan)

    questions = crowd.questions(study)
    gold = {g.key: g.expected for g in study.gold}

    def result(ref: str) -> list[dict]:
        expected = dict(gold[ref[5:]]) if ref.startswith("gold:") else {}
        level = expected.pop("toxicity", None) or TOXICITY[plan.comment(ref)[1]]
        answers = dict(zip(("vs_hard", "vs_extreme"), ANCHORS[level]))
        out = []
        for q in questions:
            choice = answers.get(q.name) or expected.get(q.name) or q.choices[0]
            out.append({"from_name": q.name, "to_name": "text", "type": "choices", "value": {"choices": [choice]}})
        return out

    ls = LabelStudio(tmp_path / "ls-data", _free_port())
    try:
        settings = json.loads((tmp_path / "ls" / "project.json").read_text(encoding="utf-8"))
        project = ls.api("POST", "/api/projects", settings)  # config.xml and 2 annotations per task
        pid = project["id"]  # type: ignore[index]
        assert project["maximum_annotations"] == 2  # type: ignore[index]
        tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text(encoding="utf-8"))
        imported = ls.api("POST", f"/api/projects/{pid}/import", tasks)
        assert imported["task_count"] == len(tasks) == 6  # type: ignore[index]  # 4 items + 2 gold, once each
        second = ls.api("POST", "/api/users", {"username": "worker2", "email": "worker2@example.org"})
        admin = ls.api("GET", "/api/current-user/whoami")
        workers = {"admin": admin["id"], "worker2": second["id"]}  # type: ignore[index]
        listed = ls.api("GET", f"/api/tasks?project={pid}&page_size=100")
        for task in listed["tasks"]:  # type: ignore[index]  # each task annotated by both workers
            for worker in workers.values():
                ls.api("POST", f"/api/tasks/{task['id']}/annotations",
                       {"result": result(task["data"]["ref"]), "completed_by": worker})
        export = ls.api("GET", f"/api/projects/{pid}/export?exportType=JSON")
    finally:
        ls.stop()
    export_file = tmp_path / "ls-export.json"
    export_file.write_text(json.dumps(export), encoding="utf-8")

    out = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    assert "2 workers, 12 ratings imported, 0 already in the log" in out, out
    assert "reviewed 2 rater tasks: 2 accept" in out and "4 of 4 items have 2 raters" in out, out
    again = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    assert "0 ratings imported, 12 already in the log" in again, again
    with StudyLog(db, readonly=True) as lg:
        rows = lg.query("SELECT r.rater_id, c.platform, c.comment_key, r.derived_toxicity FROM ratings r "
                        "JOIN comments c USING (comment_id)")
    assert {r["rater_id"] for r in rows} == {f"labelstudio:{w}" for w in workers.values()}
    got = {(r["rater_id"], r["comment_key"]): r["derived_toxicity"] for r in rows if r["platform"] != "study"}
    assert got == {(f"labelstudio:{w}", k): TOXICITY[k] for w in workers.values() for k in TOXICITY}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
