"""is a daemon running, which detectors are loaded, counts in the log

Asks the running daemon (`GET /status` with the pairing token). When none runs, reads the
counts straight from the study log, read-only, so it never disturbs a writer; a file there that it
cannot read as a study log (another schema version, not a study log) is named with the reason,
not called missing. A daemon that answers but refuses this home's pairing token (it checks the token
of the MODLENS_HOME it was started with) is said to run, at its address, with the token file status
presented and the daemon's study log; the counts are then read from the log, and status exits 1.
A daemon serves the study it read at its start: when a file that makes the study (study.toml, the
files beside it, the item set and assignment) was edited, added or removed since, status names it
and says to restart `modlens serve` to apply it (`--json`: `study_files_changed`).
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from modlens import pairing, paths, runtime
from modlens.cli.common import add_db_option
from modlens.errors import inline_fix
from modlens.live.variants import LATENCY_RATIO


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser, help="study log to count when no daemon runs (default: the daemon's, "
                               "else study.sqlite in $MODLENS_HOME or ~/.local/share/modlens)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


ANSWER_S = 5.0  # how long a daemon may take to answer, beside its wait for the study log


def ask_daemon(info: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """The daemon's `GET /status`. It answers once it has counted the log, which waits for the log's
    lock up to BUSY_TIMEOUT_MS: status waits that long and more, so a running daemon is not taken
    for one that does not answer."""
    from modlens.studylog.connection import BUSY_TIMEOUT_MS

    req = urllib.request.Request(runtime.status_url(info),
                                 headers={"Authorization": f"Bearer {pairing.read() or ''}"})
    timeout = ANSWER_S + BUSY_TIMEOUT_MS / 1000 if timeout is None else timeout
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    return answer


def log_counts(db: Path) -> tuple[dict[str, int] | None, str | None]:
    """(rows per table, None), or (None, why it cannot be read): "no study log yet" is for a missing
    file only, never for one that is there (an older or newer schema, not a study log at all)."""
    from modlens.studylog.store import StudyLog
    from modlens.studylog.connection import StudyLogError

    if not db.exists():
        return None, None
    try:
        with StudyLog(db, readonly=True) as log:
            return log.counts(), None
    except (StudyLogError, sqlite3.Error) as err:
        return None, str(err)


def log_deferred(db: Path) -> dict[str, int] | None:
    from modlens.studylog.records.deferred import deferred_counts
    from modlens.studylog.store import StudyLog
    from modlens.studylog.connection import StudyLogError

    try:
        with StudyLog(db, readonly=True) as log:
            return deferred_counts(log)
    except (StudyLogError, sqlite3.Error):  # no log, or one without the table: nothing to say
        return None


def variant_mode_line(v: dict[str, Any]) -> str:
    """Whether the daemon makes variants live or defers them, from its last offered comments."""
    mode, n, share = v["mode"], v.get("recent_offered", 0), v.get("recent_deferred_share", 0.0)
    if mode == "idle":
        return "idle (no comment has asked for variants yet)"
    said = f"{share:.0%} of the last {n:,} comments deferred"
    if mode == "deferred":
        return (f"deferred ({said}: pages keep the model busy, or the budget binds; "
                f"perturbation.live_share {v.get('live_share', 0):g}, live_rate and live_backlog decide how many "
                "go live)")
    return f"live ({said})"


def variant_budget_line(v: dict[str, Any]) -> str:
    """The daemon's live variant budget, as `modlens status` prints it."""
    rate, backlog = v["live_rate"], v.get("live_backlog")
    if rate == "auto":
        # the live service's latency budget (modlens.live.variants.LatencyBudget)
        return (f"budget: variant work may take {LATENCY_RATIO:g}x the time pages wait for their scores, "
                f"at most {backlog} waiting")
    return f"budget {rate:g} comments/s, at most {backlog} waiting"


def refusal(err: urllib.error.HTTPError, info: dict[str, Any]) -> dict[str, Any]:
    """What a daemon that answered but refused `GET /status` said: HTTP status, its reason, and the
    token file status presented (401: the daemon checks the token of the MODLENS_HOME it was started
    with, which may not be this one)."""
    try:
        reason = str(json.loads(err.read()).get("error") or err.reason)
    except (ValueError, AttributeError, OSError):
        reason = str(err.reason)
    return {"status": err.code, "reason": reason, "token_file": str(paths.token_file()), "daemon_db": info.get("db")}


def refused_line(report: dict[str, Any]) -> str:
    refused = report["refused"]
    head = f"daemon: running (pid {report['pid']}) at {report['url']}, but it "
    if refused["status"] == 401:
        return (head + f"refused this home's pairing token ({refused['token_file']}): it checks the token of the "
                f"MODLENS_HOME it was started with (its study log: {refused['daemon_db']}) — run `modlens status` "
                "with that MODLENS_HOME, or stop the daemon and start `modlens serve` with this one")
    return head + f"refused `GET /status` (HTTP {refused['status']}: {refused['reason']})"


def run(args: argparse.Namespace) -> int:
    info = runtime.read_runtime()
    report: dict[str, Any] = {"running": False}
    if info:
        try:
            report = {"running": True, "url": info.get("url"), "pid": info.get("pid"), **ask_daemon(info)}
        except urllib.error.HTTPError as err:  # it runs and answered: not "not running"
            report = {"running": True, "url": info.get("url"), "pid": info.get("pid"), "refused": refusal(err, info)}
        except (urllib.error.URLError, OSError, ValueError) as err:
            report = {"running": False, "error": f"daemon pid {info.get('pid')} listed in {paths.runtime_file()} "
                                                 f"does not answer: {err}"}
    if report["running"]:  # what it serves was read at its start: an edit since changes nothing it does
        from modlens.study.folder import changed_study_files

        report["study_files_changed"] = changed_study_files((info or {}).get("study_files") or {})
    answered = report["running"] and "refused" not in report
    if not answered:  # the counts straight from the log, read-only
        db = Path(args.db) if args.db else Path((info or {}).get("db") or paths.default_db())
        counts, problem = log_counts(db)
        report.update({"db": str(db), "counts": counts, "log_error": problem, "deferred_variants": log_deferred(db)})
    if args.json:
        print(json.dumps(report, indent=None))
        return 0 if answered else 1
    if "refused" in report:
        print(refused_line(report))
    elif report["running"]:
        print(f"daemon: running (pid {report['pid']}) at {report['url']}, study {report['study_id']!r}")
        if report["study_files_changed"]:
            print(f"  study files changed since `modlens serve` started: {', '.join(report['study_files_changed'])}; "
                  "the daemon serves the study it read then: restart `modlens serve` to apply")
        for d in report["detectors"]:
            extra = f" {d['version']}" if d.get("version") else f" — {inline_fix(d['message'], d['fix'])}"
            print(f"  detector {d['name']}: {d['status']}{extra}")
        for what, problem in report.get("components", {}).items():
            print(f"  {what}: unavailable — {problem}")
        print(f"  connections: {report['queue']['connections']}")
        v = report["queue"].get("variants")
        if v:
            print(f"  variants: {v['done']} made live, {v['queued']} waiting, {v['deferred']} deferred "
                  f"({variant_budget_line(v)}; `modlens rescore --variants` makes the deferred ones)")
            if v.get("mode"):
                print(f"  variants now: {variant_mode_line(v)}")
    else:
        print("daemon: not running" + (f" ({report['error']})" if report.get("error") else "") + " — start it with `modlens serve`")
    print(f"study log: {report['db']}")
    writable = report.get("study_log") or {}
    if writable.get("writable") is False:
        print(f"  study log NOT WRITABLE since {writable.get('since')}: {writable.get('reason')}; "
              f"{writable.get('failed_writes', 0):,} writes refused (messages answered `unavailable`, not "
              "acknowledged, and writes behind answers already sent, which `sync` reports; free space on its disk; "
              "the daemon resumes by itself)")
    counts = report.get("counts")
    if report.get("log_error"):
        print(f"  cannot be read: {report['log_error']}")
    elif counts is None and answered:  # the daemon's log is there: it could not read it just now
        print("  counts cannot be read now: the daemon could not read the study log (its lock held by another "
              "writer, or the condition above); run `modlens status` again")
    elif counts is None:
        print("  (no study log yet)")
    else:
        print("  " + ", ".join(f"{t} {n}" for t, n in counts.items()))
        deferred = report.get("deferred_variants")
        if deferred and deferred.get("to_do"):
            print(f"  variants deferred, still to make: {deferred['to_do']} (`modlens rescore --variants`)")
    return 0 if answered else 1  # a refused daemon: the table's "failed: the daemon refused"
