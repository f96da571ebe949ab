"""Potato for real: `potato-annotation` 2.12.1 in its own environment (`.venv-potato`,
`make potato`) serves the project `modlens study export-tasks --format potato` wrote, on a
loopback port. Two annotators register and work through Potato's own queue over its HTTP
interface as its web page does (POST /register, GET /annotate, POST /updateinstance with
`schema:label` keys, POST /annotate `next_instance`). What Potato itself writes is imported with
`modlens rate`: its annotation_output/ folder (per-user user_state.json), then its exporter's
JSONL (`python -m potato.export -f jsonl`), which adds nothing; its CSV export is refused naming
the JSONL one. The ratings in the log are the answers given, both annotators are accepted, every
item has its 2 raters, the report has alpha. An answer changed in Potato's state is reported on
re-import, kept by default and stored with `--on-change replace`. Potato started on the exported
config.yaml listens on 127.0.0.1 only, and the raters per item `modlens rate` prints are those in
Potato's own files, whatever its queue handed out."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

from crowd_real import TOXICITY, answers, free_port, listening, make_study, modlens
from modlens.studylog.store import StudyLog
from realtools import requires

pytestmark = requires("potato")

REPO = Path(__file__).resolve().parents[1]
POTATO_VENV = REPO / ".venv-potato"
INSTANCE = re.compile(r'<input[^>]*\bid="instance_id"[^>]*>')


class Potato:
    """`potato start config.yaml -p PORT` in the project folder, in its own process group."""

    def __init__(self, project: Path, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.log = project / "potato-server.log"
        self.proc = subprocess.Popen([str(POTATO_VENV / "bin" / "potato"), "start", "config.yaml", "-p", str(port)],
                                     cwd=project, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"potato exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"potato did not answer in 180 s: {self.log.read_text()[-2000:]}")

    def annotate_all(self, user: str, answer_of: dict[str, dict[str, str]]) -> list[str]:
        """Register `user` and answer every instance Potato's queue hands them; the ids seen."""
        web = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        web.open(self.base + "/register", urllib.parse.urlencode({"email": user, "pass": f"pw-{user}"}).encode())
        page = web.open(self.base + "/annotate").read().decode()
        seen: list[str] = []
        while (tag := INSTANCE.search(page)) is not None:
            iid = re.search(r'\bvalue="([^"]*)"', tag.group(0)).group(1)  # type: ignore[union-attr]
            if iid in seen:
                break
            seen.append(iid)
            given = answer_of[iid]
            saved = self._post(web, "/updateinstance", {"instance_id": iid,
                                                       "annotations": {f"{q}:{c}": c for q, c in given.items()}})
            assert json.loads(saved).get("status") != "error", saved
            page = self._post(web, "/annotate", {"action": "next_instance"})
        return seen

    def _post(self, web: urllib.request.OpenerDirector, path: str, body: object) -> str:
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return str(web.open(req, timeout=60).read().decode())

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def test_potato_round_trip(tmp_path: Path) -> None:
    folder, db, plan = make_study(tmp_path, "potato-real", raters=2)
    project = tmp_path / "potato"
    modlens("study", "export-tasks", str(folder), "--format", "potato", "--out", str(project))
    instances = [json.loads(line)["id"] for line in (project / "data" / "items.jsonl").read_text().splitlines()]
    assert len(instances) == 6   # one per comment of the task (4 items + 2 gold), each for 2 annotators
    # the second annotator calls x-2 "hard to say": agreement below 1, alpha defined
    levels = {"ann-a": TOXICITY, "ann-b": {**TOXICITY, "x-2": "hard to say"}}
    key = _key(folder)
    given = {user: {iid: answers(plan, key[iid], tox) for iid in instances} for user, tox in levels.items()}

    potato = Potato(project, free_port())
    try:
        seen = {user: potato.annotate_all(user, given[user]) for user in levels}
    finally:
        potato.stop()
    startup = potato.log.read_text()
    assert "Unrecognized config key" not in startup and "deprecated" not in startup, startup[:3000]
    for user in levels:  # Potato's queue gave each annotator every comment once
        assert sorted(seen[user]) == sorted(instances), seen
    output = project / "annotation_output"
    assert sorted(p.parent.name for p in output.glob("*/user_state.json")) == sorted(levels)

    out = modlens("rate", str(output), "--db", str(db), "--study", str(folder))
    assert "2 workers, 12 ratings imported, 0 already in the log, 0 empty answers" in out, out
    assert "reviewed 2 rater tasks: 2 accept, 0 accept_unused, 0 reject" in out, out
    assert "raters per item in accepted tasks: 4 of 4 items have 2 raters; planned 2 (--raters): 4 as planned, " \
        "0 over-collected, 0 under-collected" in out, out
    with StudyLog(db, readonly=True) as lg:
        rows = lg.query("SELECT r.rater_id, c.platform, c.comment_key, r.values_json, r.anchors_json "
                        "FROM ratings r JOIN comments c USING (comment_id)")
    got = {(r["rater_id"], plan.comment(ref)): {**json.loads(r["values_json"]), **json.loads(r["anchors_json"])}
           for r in rows for ref in [_ref(plan, r["platform"], r["comment_key"])]}
    want = {(f"potato:{user}", plan.comment(key[iid])): a for user in levels for iid, a in given[user].items()}
    assert got == want

    # Potato's own exporter: the same annotations (nothing new); its CSV is refused naming the JSONL one
    export_py = str(POTATO_VENV / "bin" / "python")
    for fmt in ("jsonl", "csv"):
        subprocess.run([export_py, "-m", "potato.export", "-c", "config.yaml", "-f", fmt, "-o", f"export-{fmt}"],
                       cwd=project, check=True, capture_output=True, timeout=180)
    again = modlens("rate", str(project / "export-jsonl" / "annotations.jsonl"), "--db", str(db), "--study", str(folder))
    assert "2 workers, 0 ratings imported, 12 already in the log" in again, again
    refused = subprocess.run([*_modlens_cmd(), "rate", str(project / "export-csv" / "annotations.csv"), "--db", str(db),
                              "--study", str(folder)], capture_output=True, text=True, timeout=180)
    assert refused.returncode == 2 and "Potato's CSV/TSV export" in refused.stderr and "-f jsonl" in refused.stderr, \
        refused.stderr

    report = json.loads(modlens("report", "--db", str(db), "--format", "json"))
    tox = next(a for a in report["sections"]["itemset"]["attributes"] if a["name"] == "toxicity")
    assert tox["alpha"] is not None and tox["alpha"] < 1, tox

    # an answer changed in Potato after the import (ann-b re-rates x-2): reported, kept, then replaced
    state_file = output / "ann-b" / "user_state.json"
    state = json.loads(state_file.read_text())
    x2 = next(iid for iid in instances if plan.comment(key[iid])[1] == "x-2")
    state["instance_id_to_label_to_value"][x2] = [
        [{"schema": q, "name": c}, c] for q, c in answers(plan, key[x2]).items()]
    shutil.copy(state_file, tmp_path / "user_state.before.json")
    state_file.write_text(json.dumps(state))
    kept = modlens("rate", str(output), "--db", str(db), "--study", str(folder))
    assert "0 ratings imported, 11 already in the log" in kept and "1 annotations changed since the last import, " \
        "kept the stored answers" in kept, kept
    replaced = modlens("rate", str(output), "--db", str(db), "--study", str(folder), "--on-change", "replace")
    assert "1 ratings imported" in replaced and "stored the new answers" in replaced, replaced
    settled = modlens("rate", str(output), "--db", str(db), "--study", str(folder))
    assert "0 ratings imported, 12 already in the log" in settled and "changed" not in settled, settled


def test_potato_on_loopback_and_the_raters_it_gave(tmp_path: Path) -> None:
    """Potato started on the exported config.yaml (no --host) answers only on 127.0.0.1. Three
    annotators work through the queue of a project asking for 2 per comment: whatever Potato hands
    out (its queue may give a comment to more than 2), `modlens rate` reports the raters each item
    got as Potato's own files hold them, naming over-collection, instead of the planned 2."""
    from collections import Counter

    folder, db, plan = make_study(tmp_path, "potato-counts", raters=2)
    project = tmp_path / "potato"
    modlens("study", "export-tasks", str(folder), "--format", "potato", "--out", str(project))
    instances = [json.loads(line)["id"] for line in (project / "data" / "items.jsonl").read_text().splitlines()]
    key = _key(folder)
    answer_of = {iid: answers(plan, key[iid]) for iid in instances}
    potato = Potato(project, free_port())
    try:
        assert listening(int(potato.base.rsplit(":", 1)[1])) == {"127.0.0.1"}
        seen = {user: potato.annotate_all(user, answer_of) for user in ("ann-a", "ann-b", "ann-c")}
    finally:
        potato.stop()
    print(f"Potato handed out: { {u: len(s) for u, s in seen.items()} }")
    # what Potato wrote: every user's answered instances, per item of the set
    states = {p.parent.name: json.loads(p.read_text()) for p in (project / "annotation_output").glob("*/user_state.json")}
    per_item = Counter(key[iid] for st in states.values() for iid in st["instance_id_to_label_to_value"]
                       if not key[iid].startswith("gold:"))
    assert sum(per_item.values()) == sum(not key[iid].startswith("gold:") for s in seen.values() for iid in s)
    out = modlens("rate", str(project / "annotation_output"), "--db", str(db), "--study", str(folder))
    assert "0 reject" in out, out
    counts = Counter(per_item[ref] for ref in plan.items)
    over = sorted(ref for ref in plan.items if per_item[ref] > 2)
    got = ", ".join(f"{m} of 4 items {'has' if m == 1 else 'have'} {n} rater{'s' if n != 1 else ''}"
                    for n, m in sorted(counts.items(), reverse=True))
    line = next(line for line in out.splitlines() if line.startswith("raters per item"))
    assert line.startswith(f"raters per item in accepted tasks: {got}; planned 2 (--raters): "), (line, per_item)
    assert f"{len(over)} over-collected" in line, (line, per_item)


def _key(folder: Path) -> dict[str, str]:
    """The coordinator's key: Potato's instance ids (opaque unit ids) -> order entries."""
    return {u["unit"]: u["ref"] for u in json.loads((folder / "crowd-key.json").read_text())["units"]}


def _ref(plan: object, platform: str, key: str) -> str:
    return next(ref for ref in [*plan.items, *(f"gold:{g}" for g in plan.gold)]  # type: ignore[attr-defined]
                if plan.comment(ref) == (platform, key))  # type: ignore[attr-defined]


def _modlens_cmd() -> list[str]:
    import sys

    return [sys.executable, "-m", "modlens"]
