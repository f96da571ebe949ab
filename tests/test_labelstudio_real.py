"""Label Studio for real: the project `modlens study export-tasks --format
labelstudio` writes (tasks.json: one task per study task and comment; project.json: its config and
`maximum_annotations` = --raters) goes into a running Label Studio 1.23.2 (its own environment,
`.venv-labelstudio`, `make labelstudio`) with a temporary data folder, started once for the module
as docs/MULTI.md starts it: `--internal-host 127.0.0.1`, checked to listen on loopback only. No
task's data (what the Data Manager shows annotators) names a gold comment.

- Round trip: the admin posts annotations of every task credited to two workers
  (`completed_by`), the JSON export is imported with `modlens rate`: both workers accepted, every
  answer a rating of rater `labelstudio:<user id>`, a re-import adds nothing.
- The queue: three annotators sign up through the organization's invite
  link, each with their own session and API token, and take tasks from Label Studio's own
  next-task API (GET /api/projects/ID/next, `ProjectNextTaskAPI` in its projects/api.py; its
  `get_next_task`, the labeling stream's queue, skips what the annotator did, tasks with their `maximum_annotations` and tasks
  locked by others), submitting as its editor does (POST /api/tasks/ID/annotations as themselves),
  all three asking before any submits, until the queue answers 404 for each; one then updates
  another's annotation (PATCH, as the editor's Update). What Label Studio exports as JSON is
  imported: the ratings are the answers given, the edited one credited to its editor
  (`updated_by`), each annotator judged on what
  the queue gave them and accepted, every item of the set has its k raters, and the summary lines
  agree with the review lines. Its JSON-MIN and CSV exports are refused in one line naming the
  JSON export.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from crowd_real import TOXICITY, answers, free_port, listening, make_study, modlens
from modlens.study import crowd
from modlens.studylog.store import StudyLog
from realtools import requires

# Label Studio's first start (migrations) takes ~30 s on an idle machine and 5+ minutes on the loaded
# shared 2-core one: the start waits up to START_TIMEOUT and the module's tests up to 25 minutes each.
pytestmark = [requires("label-studio"), pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[1]
LABEL_STUDIO = REPO / ".venv-labelstudio" / "bin" / "label-studio"
# the empty database `make labelstudio` had Label Studio migrate once: a fresh start otherwise spends
# about 70 s of CPU on its Django migrations before it answers (docs/PERFORMANCE.md, the suite's time)
MIGRATED = REPO / ".venv-labelstudio" / "migrated" / "label_studio.sqlite3"
TOKEN = "modlens-test-token-0123456789"
START_TIMEOUT = 900  # seconds


class Client:
    """One user's HTTP session with Label Studio: a cookie jar, and their API token once known."""

    def __init__(self, base: str, token: str | None = None):
        self.base, self.token = base, token
        self.web = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def raw(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        req = urllib.request.Request(self.base + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with self.web.open(req, timeout=120) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def api(self, method: str, path: str, body: object = None) -> object:
        status, data = self.raw(method, path, body)
        assert status < 300, f"{method} {path}: {status} {data[:500]!r}"
        return json.loads(data or b"null")


class LabelStudio:
    def __init__(self, data: Path, port: int):
        self.base = f"http://127.0.0.1:{port}"
        data.mkdir(parents=True, exist_ok=True)
        if MIGRATED.exists():
            shutil.copyfile(MIGRATED, data / MIGRATED.name)
        self.log = data / "label-studio.log"
        # no version check against pypi.org: a test must not depend on the internet
        env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "LATEST_VERSION_CHECK": "false"}
        started = time.monotonic()
        self.proc = subprocess.Popen(
            # --internal-host is the address it binds (default 0.0.0.0); its --host is only the public URL
            [str(LABEL_STUDIO), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(data), "--username", "admin@example.org", "--password", "modlens-test-pw",
             "--user-token", TOKEN, "--enable-legacy-api-token"],
            env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() < started + START_TIMEOUT:
            if self.proc.poll() is not None:
                raise RuntimeError(f"label-studio exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5):
                    self.port = port
                    self.start_s = time.monotonic() - started
                    print(f"label-studio answered after {self.start_s:.0f} s")
                    self.admin = Client(self.base, TOKEN)
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"label-studio did not answer in {START_TIMEOUT} s: {self.log.read_text()[-2000:]}")

    def project(self, export_dir: Path) -> tuple[int, list[dict]]:
        """The project from project.json with tasks.json imported: (id, its tasks as Label Studio lists them)."""
        settings = json.loads((export_dir / "project.json").read_text(encoding="utf-8"))
        project = self.admin.api("POST", "/api/projects", settings)
        assert isinstance(project, dict) and project["maximum_annotations"] == settings["maximum_annotations"]
        pid = int(project["id"])
        tasks = json.loads((export_dir / "tasks.json").read_text(encoding="utf-8"))
        imported = self.admin.api("POST", f"/api/projects/{pid}/import", tasks)
        assert imported["task_count"] == len(tasks)  # type: ignore[index]
        listed = self.admin.api("GET", f"/api/tasks?project={pid}&page_size=100")
        return pid, listed["tasks"]  # type: ignore[index]

    def export(self, pid: int, kind: str) -> bytes:
        status, data = self.admin.raw("GET", f"/api/projects/{pid}/export?exportType={kind}")
        assert status == 200, f"export {kind}: {status} {data[:500]!r}"
        return data

    def sign_up(self, email: str) -> Client:
        """A new member, as the admin's "Add Members" invite link makes one: the signup form (with its
        CSRF token) under the organization's invite token, then the user's own API token."""
        invite = self.admin.api("GET", "/api/invite")
        url = str(invite["invite_url"])  # type: ignore[index]  # /user/signup/?token=…
        user = Client(self.base)
        form = user.web.open(self.base + url, timeout=120).read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert csrf, form[:2000]
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf.group(1), "email": email,
                                       "password": f"pw-{email}-123"}).encode()
        user.web.open(urllib.request.Request(self.base + url, body, {"Referer": self.base + url}), timeout=120)
        me = user.api("GET", "/api/current-user/whoami")
        assert me["email"] == email, me  # type: ignore[index]  # signed up and logged in
        user.token = str(user.api("GET", "/api/current-user/token")["token"])  # type: ignore[index]
        return user

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and its workers
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelStudio]:
    ls = LabelStudio(tmp_path_factory.mktemp("ls-data"), free_port())
    try:
        yield ls
    finally:
        ls.stop()


def result(given: dict[str, str]) -> list[dict]:
    """An annotation's `result` as Label Studio's editor submits single choices."""
    return [{"from_name": q, "to_name": "text", "type": "choices", "value": {"choices": [c]}} for q, c in given.items()]


def test_label_studio_listens_on_loopback_only(label_studio: LabelStudio) -> None:
    """Started as the docs start it (`--internal-host 127.0.0.1`): comments and answers are not
    reachable from the network."""
    assert listening(label_studio.port) == {"127.0.0.1"}


def test_label_studio_round_trip(tmp_path: Path, label_studio: LabelStudio) -> None:
    folder, db, plan = make_study(tmp_path, "ls-real", raters=2)
    modlens("study", "export-tasks", str(folder), "--format", "labelstudio", "--out", str(tmp_path / "ls"))
    pid, tasks = label_studio.project(tmp_path / "ls")
    assert len(tasks) == 6  # 4 items + 2 gold, once each, for 2 annotators each
    # the Data Manager shows every data field: none names a gold comment
    assert all(set(t["data"]) == {"text", "task", "position", "unit"} and "gold" not in json.dumps(t["data"])
               for t in tasks)
    key = {u["unit"]: u["ref"] for u in json.loads((folder / "crowd-key.json").read_text())["units"]}
    second = label_studio.admin.api("POST", "/api/users", {"username": "worker2", "email": "worker2@example.org"})
    admin = label_studio.admin.api("GET", "/api/current-user/whoami")
    workers = {"admin": admin["id"], "worker2": second["id"]}  # type: ignore[index]
    for task in tasks:  # each task annotated by both workers
        for worker in workers.values():
            label_studio.admin.api("POST", f"/api/tasks/{task['id']}/annotations",
                                   {"result": result(answers(plan, key[task["data"]["unit"]])), "completed_by": worker})
    export_file = tmp_path / "ls-export.json"
    export_file.write_bytes(label_studio.export(pid, "JSON"))

    out = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    assert "2 workers, 12 ratings imported, 0 already in the log" in out, out
    assert "reviewed 2 rater tasks: 2 accept" in out and "4 of 4 items have 2 raters" in out, out
    assert "updated_by" not in out, out  # the admin created them for the workers: nobody edited one
    again = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    assert "0 ratings imported, 12 already in the log" in again, again
    with StudyLog(db, readonly=True) as lg:
        rows = lg.query("SELECT r.rater_id, c.platform, c.comment_key, r.derived_toxicity FROM ratings r "
                        "JOIN comments c USING (comment_id)")
    assert {r["rater_id"] for r in rows} == {f"labelstudio:{w}" for w in workers.values()}
    got = {(r["rater_id"], r["comment_key"]): r["derived_toxicity"] for r in rows if r["platform"] != "study"}
    assert got == {(f"labelstudio:{w}", k): TOXICITY[k] for w in workers.values() for k in TOXICITY}


def test_label_studio_queue_three_annotators(tmp_path: Path, label_studio: LabelStudio) -> None:
    # the Perspective study's design in small: 4 items in 2 tasks of 2 items + 2 gold (of 3), k = 2 raters per item
    folder, db, plan = make_study(tmp_path, "ls-queue", raters=2, items_per_task=2)
    assert len(plan.tasks) == 2
    modlens("study", "export-tasks", str(folder), "--format", "labelstudio", "--out", str(tmp_path / "ls"))
    pid, tasks = label_studio.project(tmp_path / "ls")
    key = {u["unit"]: u["ref"] for u in json.loads((folder / "crowd-key.json").read_text())["units"]}
    assert len(tasks) == 8  # 2 tasks x (2 items + 2 gold)
    assert {t["overlap"] for t in tasks} == {2}  # Label Studio holds each task for 2 annotators
    # the third annotator calls x-2 "hard to say" where the others say "not toxic"
    levels = {"ann-a@example.org": TOXICITY, "ann-b@example.org": TOXICITY,
              "ann-c@example.org": {**TOXICITY, "x-2": "hard to say"}}
    users = {email: label_studio.sign_up(email) for email in levels}
    ids = {email: int(u.api("GET", "/api/current-user/whoami")["id"]) for email, u in users.items()}  # type: ignore[index]

    given: dict[tuple[str, int], dict[str, str]] = {}   # (annotator, Label Studio task id) -> answers
    done: set[str] = set()
    while len(done) < len(users):
        # every annotator still working opens the labeling stream's next task, then each submits it
        handed: dict[str, dict] = {}
        for email, user in users.items():
            if email in done:
                continue
            status, body = user.raw("GET", f"/api/projects/{pid}/next")
            if status == 404:  # "There are no tasks for …": the queue has nothing left for them
                done.add(email)
                continue
            assert status == 200, (status, body[:500])
            handed[email] = json.loads(body)
        for email, task in handed.items():
            slot = (email, int(task["id"]))
            assert slot not in given, f"the queue handed {email} task {task['id']} twice"
            given[slot] = answers(plan, key[task["data"]["unit"]], levels[email])
            users[email].api("POST", f"/api/tasks/{task['id']}/annotations?project={pid}",
                             {"result": result(given[slot]), "lead_time": 3.5})
    per_user = Counter(email for email, _ in given)
    assert set(per_user) == set(users), f"the queue left an annotator without work: {per_user}"
    assert sum(per_user.values()) == 16, per_user  # 8 tasks x 2, no more: the queue stops at the overlap

    # ann-a opens an annotation of a task the queue did not give them (the Data Manager lets a member
    # open any task) and presses Update with answers of their own: the annotation is theirs now
    author, tid = next((e, t) for e, t in sorted(given) if e != "ann-a@example.org"
                       and ("ann-a@example.org", t) not in given)
    ann_id = next(a["id"] for a in label_studio.admin.api("GET", f"/api/tasks/{tid}/annotations")  # type: ignore[union-attr]
                  if a["completed_by"] == ids[author])
    ref = key[next(t["data"]["unit"] for t in tasks if t["id"] == tid)]
    edit = answers(plan, ref, {k: "hard to say" for k in TOXICITY})
    time.sleep(1.5)  # an Update comes after the annotation it changes (the import tells them apart by time)
    users["ann-a@example.org"].api("PATCH", f"/api/annotations/{ann_id}", {"result": result(edit)})
    credited = {**given}
    del credited[(author, tid)]
    credited[("ann-a@example.org", tid)] = edit

    export = label_studio.export(pid, "JSON")
    exported = json.loads(export)
    # Label Studio itself: every task annotated by 2 different annotators; the edited one still names
    # its author in completed_by and the editor in updated_by
    assert sorted(len({a["completed_by"] for a in t["annotations"]}) for t in exported) == [2] * 8
    assert {(str(a["completed_by"]), t["id"]) for t in exported for a in t["annotations"]} == \
        {(str(ids[email]), tid) for email, tid in given}
    edited = next(a for t in exported for a in t["annotations"] if a["id"] == ann_id)
    assert (edited["completed_by"], edited["updated_by"]) == (ids[author], ids["ann-a@example.org"]), edited
    export_file = tmp_path / "ls-export.json"
    export_file.write_bytes(export)

    out = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    print(f"the queue gave {dict(per_user)}; modlens rate:\n{out}")
    assert "3 workers, 16 ratings imported, 0 already in the log, 0 empty answers" in out, out
    assert "1 annotation last updated by another user than completed_by: credited to the one who updated it" in out, out
    reviews = [m.groups() for m in re.finditer(r"^ *(\w+)  labelstudio:(\d+)  task (\w+) \(labelstudio\): (.*)$",
                                                 out, re.M)]
    # each annotator is reviewed on every task the queue gave them a comment of (gold included)
    task_of_ls = {t["id"]: t["data"]["task"] for t in tasks}
    assert sorted((int(w), task) for _, w, task, _ in reviews) == \
        sorted({(ids[email], task_of_ls[tid]) for email, tid in credited}), out
    assert all(decision == "accept" for decision, *_ in reviews), out
    summary = re.search(r"^reviewed (\d+) rater tasks: (\d+) accept, (\d+) accept_unused, (\d+) reject$", out, re.M)
    assert summary and [int(n) for n in summary.groups()] == [len(reviews), len(reviews), 0, 0], out
    # every item has k = 2 accepted raters, and the line says so
    assert "raters per item in accepted tasks: 4 of 4 items have 2 raters; planned 2 (--raters): 4 as planned, " \
        "0 over-collected, 0 under-collected" in out, out

    with StudyLog(db, readonly=True) as lg:
        rows = lg.query("SELECT r.rater_id, r.client_rating_id, r.values_json, r.anchors_json FROM ratings r")
    got = {(r["rater_id"], r["client_rating_id"]): {**json.loads(r["values_json"]), **json.loads(r["anchors_json"])}
           for r in rows}
    ls_task = {t["id"]: t["data"] for t in tasks}
    want = {(f"labelstudio:{ids[email]}", f"{ls_task[tid]['task']}:{key[ls_task[tid]['unit']]}"): a
            for (email, tid), a in credited.items()}
    assert got == want

    # Label Studio's other exports, from the same project: refused, the JSON export named as the fix
    for kind, name, label in (("JSON_MIN", "ls-export-min.json", "JSON-MIN"), ("CSV", "ls-export.csv", "CSV")):
        (tmp_path / name).write_bytes(label_studio.export(pid, kind))
        refused = subprocess.run([sys.executable, "-m", "modlens", "rate", str(tmp_path / name), "--db", str(db),
                                  "--study", str(folder)], capture_output=True, text=True, timeout=180)
        assert refused.returncode == 2, (kind, refused.stdout, refused.stderr)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 2 and f"Label Studio's {label} export" in lines[0], (kind, lines)
        assert lines[1] == f"  fix: {crowd.LS_JSON}", (kind, lines)
        assert refused.stdout == "", (kind, refused.stdout)


@pytest.mark.browser
def test_label_studio_ui_as_the_docs_say(tmp_path: Path, label_studio: LabelStudio) -> None:
    """docs/MULTI.md's Label Studio steps in Community 1.23.2's own web UI (Chromium through
    Playwright): the project from project.json and tasks.json through the API, as the docs say (its
    UI has no overlap setting); the admin's Organization page, "Add Members", its invite link; an
    annotator signs up there, opens the project, presses "Label All Tasks" and answers until "No
    More Tasks Left in Queue"; the admin's Export > JSON; `modlens rate` imports the answers given."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    chromium = Path("/usr/lib/chromium/chromium")
    if not chromium.exists():
        pytest.skip("Chromium absent: `make system-deps` installs it")
    started = time.monotonic()
    phases: dict[str, float] = {}   # seconds from the start: where a slow run spent its time
    folder, db, plan = make_study(tmp_path, "ls-ui", raters=1)
    modlens("study", "export-tasks", str(folder), "--format", "labelstudio", "--out", str(tmp_path / "ls"))
    pid, tasks = label_studio.project(tmp_path / "ls")
    phases["project"] = time.monotonic() - started
    key = {u["unit"]: u["ref"] for u in json.loads((folder / "crowd-key.json").read_text())["units"]}
    ref_at = {(t["data"]["task"], t["data"]["position"]): key[t["data"]["unit"]] for t in tasks}
    questions = crowd.questions(plan.study)
    given: dict[str, dict[str, str]] = {}
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), headless=True, args=["--no-sandbox"])
        try:
            admin = browser.new_context(accept_downloads=True).new_page()
            admin.goto(label_studio.base + "/user/login/")
            admin.fill("input[name=email]", "admin@example.org")
            admin.fill("input[name=password]", "modlens-test-pw")
            admin.click("button[type=submit]")
            admin.wait_for_url(lambda url: "/user/login" not in url)
            admin.goto(label_studio.base + "/organization/")
            admin.get_by_role("button", name="Invite new member").click()   # the "Add Members" button
            link = admin.locator(".lsf-invite input")
            playwright_api.expect(link).to_have_value(re.compile(r"/user/signup/\?token="), timeout=60_000)
            invite = link.input_value()
            phases["invite"] = time.monotonic() - started
            assert "/user/signup/?token=" in invite, invite

            annotator = browser.new_context().new_page()
            annotator.goto(invite)
            annotator.fill("input[name=email]", "ui-annotator@example.org")
            annotator.fill("input[name=password]", "ui-annotator-pw-123")
            annotator.click("button[type=submit]")
            annotator.wait_for_url(lambda url: "/user/signup" not in url)
            annotator.goto(f"{label_studio.base}/projects/{pid}/data")
            phases["signed up"] = time.monotonic() - started
            annotator.get_by_text("Label All Tasks").click()
            done = annotator.get_by_text("No More Tasks Left in Queue")
            for _ in range(len(tasks) + 1):
                header = annotator.locator("h3", has_text=re.compile(r"^Task \w+, comment \d+$"))
                header.or_(done).first.wait_for(timeout=60_000)
                if done.is_visible():
                    break
                task, position = re.fullmatch(r"Task (\w+), comment (\d+)", header.inner_text()).groups()  # type: ignore[union-attr]
                ref = ref_at[(task, int(position))]
                given[f"{task}:{ref}"] = answer = answers(plan, ref)
                groups = annotator.locator(".lsf-choices")
                for n, q in enumerate(questions):
                    groups.nth(n).locator(f'input[name="{answer[q.name]}"]').check()
                annotator.locator("[data-testid=bottombar-submit-button]").click()
                header.filter(has_text=f"comment {position}").wait_for(state="detached", timeout=60_000)
            assert done.is_visible() and len(given) == len(tasks), given
            phases["labelled"] = time.monotonic() - started

            admin.goto(f"{label_studio.base}/projects/{pid}/data")
            admin.get_by_role("button", name="Export").click()
            json_format = admin.locator(".lsf-formats__item").filter(
                has=admin.locator(".lsf-formats__name", has_text=re.compile(r"^JSON$")))
            if "selected" not in (json_format.get_attribute("class") or ""):   # JSON is the dialog's default
                json_format.click(force=True)   # the list, not the item, takes the pointer
            playwright_api.expect(json_format).to_have_class(re.compile(r"lsf-formats__item_selected"))
            with admin.expect_download() as download:
                admin.locator(".lsf-modal-ls").get_by_role("button", name="Export").click()
            export_file = tmp_path / "ui-export.json"
            download.value.save_as(export_file)
        finally:
            browser.close()
    out = modlens("rate", str(export_file), "--db", str(db), "--study", str(folder))
    assert f"1 workers, {len(tasks)} ratings imported" in out, out
    with StudyLog(db, readonly=True) as lg:
        rows = lg.query("SELECT client_rating_id, values_json, anchors_json FROM ratings")
    assert {r["client_rating_id"]: {**json.loads(r["values_json"]), **json.loads(r["anchors_json"])}
            for r in rows} == given
    print(f"the UI walkthrough took {time.monotonic() - started:.0f} s; by then: "
          + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()))
