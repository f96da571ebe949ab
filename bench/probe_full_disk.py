"""Probe: the real `modlens serve` with its study log on a real, small tmpfs that fills under load.

    sudo python bench/probe_full_disk.py [--size-mib 20] [--sockets 4] [--full-s 10] [--after-s 10]

Mounts a tmpfs of --size-mib (root is needed; without it, or where mount fails, it prints why and
exits 0), puts the study log there with a ballast file of half the disk, and streams pages
of long comments over --sockets connections until the daemon answers `unavailable`; keeps streaming
for --full-s seconds on the full disk, then deletes the ballast (space comes back) and streams for
--after-s seconds more, resending what was refused with the same ids, as the extension's outbox
does. The daemon's own log (serve.log) stays off the small disk, as a daemon's log would.

Prints the answers by kind, the lines the daemon logged while the disk was full, and checks what
docs/DATA.md ("Acknowledged means written") promises: 0 `internal` answers, every acknowledged
comment in the log, no traceback in the daemon's log, fewer than 10 of its lines per minute of
full disk, the "writable again" line, and acknowledgements again after space came back, without
a restart. Exit status 1 when a check fails. The suite's test of the same condition
(tests/test_studylog_full.py) fills the log with SQLite's max_page_count instead, needing no mount.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from modlens import pairing
from modlens.runtime import start_serve

LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # a logging record's first line
IN_FLIGHT = 4  # pages a socket has sent and not had answered (the daemon takes 8 per connection)


def mount_tmpfs(where: Path, size_mib: int) -> str | None:
    """None when mounted, else why not."""
    if os.geteuid() != 0:
        return "not root: mounting a tmpfs needs root"
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0700", "tmpfs", str(where)],
                         capture_output=True, text=True)
    return None if res.returncode == 0 else f"mount failed: {res.stderr.strip() or res.returncode}"


async def stream(url: str, token: str, sock: int, phase: dict, answers: Counter, acked: set[str],
                 outbox: dict[str, dict], stop: asyncio.Event) -> None:
    """One participant's socket, as the extension's outbox drives it: at most IN_FLIGHT pages sent
    and unanswered, a refused page sent again after a back-off, with the same id; new pages only
    until space comes back (then only the refused ones are resent)."""
    import websockets

    in_flight: set[str] = set()
    retry_at: dict[str, float] = {}
    async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"], max_size=None) as ws:
        await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "probe-full-disk",
                                  "token": token, "rater_id": f"probe-{sock}"}))
        hello = json.loads(await ws.recv())
        if hello["type"] != "hello_ok":
            raise RuntimeError(f"hello refused: {hello}")

        async def sender() -> None:
            n = 0
            while not stop.is_set():
                now = time.monotonic()
                for mid in [m for m, at in retry_at.items() if at <= now]:
                    if len(in_flight) >= IN_FLIGHT:
                        break
                    del retry_at[mid]
                    in_flight.add(mid)
                    await ws.send(json.dumps(outbox[mid]))
                if phase["name"] != "freed" and len(in_flight) < IN_FLIGHT:
                    n += 1
                    mid = f"s{sock}-p{n}"
                    outbox[mid] = {"type": "comments", "id": mid, "variants": False,
                                   "page": {"url": "https://example.org/", "platform": "probe", "page_key": mid},
                                   "items": [{"key": f"{mid}-{i}", "text": f"{mid}-{i} " + os.urandom(900).hex()}
                                             for i in range(10)]}
                    in_flight.add(mid)
                    await ws.send(json.dumps(outbox[mid]))
                await asyncio.sleep(0.01)

        task = asyncio.create_task(sender())
        try:
            while not stop.is_set():
                try:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except asyncio.TimeoutError:
                    continue
                if msg["type"] == "scores":
                    continue
                kind = msg["type"] if msg["type"] != "error" else f"error:{msg['code']}"
                answers[(phase["name"], kind)] += 1
                in_flight.discard(msg.get("id"))
                if msg["type"] == "comments_ok" and outbox.pop(msg["id"], None) is not None:
                    acked.update(msg["comment_ids"])
                elif msg["type"] == "error" and msg.get("id") in outbox:
                    retry_at[msg["id"]] = time.monotonic() + (msg.get("retry_after_ms") or 500) / 1000
                if kind == "error:unavailable" and phase["name"] == "filling":
                    phase["name"], phase["full_at"] = "full", time.monotonic()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def drive(url: str, token: str, args: argparse.Namespace, disk: Path, log_file: Path) -> dict:
    phase = {"name": "filling"}
    answers: Counter = Counter()
    acked: set[str] = set()
    outbox: dict[str, dict] = {}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(stream(url, token, s, phase, answers, acked, outbox, stop)) for s in range(args.sockets)]
    lines_before = len(log_file.read_text(errors="replace").splitlines())
    t0 = time.monotonic()
    while phase["name"] == "filling" and time.monotonic() - t0 < args.fill_timeout_s:
        await asyncio.sleep(0.1)
    filled_after = time.monotonic() - t0
    await asyncio.sleep(args.full_s)
    # every record the daemon logged from the first socket to the end of the full phase (the line
    # that marks the start included; not the access log, nor `serve`'s own startup lines, which
    # may still be arriving), over the time the disk was full
    lines_full = [ln for ln in log_file.read_text(errors="replace").splitlines()[lines_before:]
                  if LOG_RECORD.match(ln) and "aiohttp.access" not in ln]
    full_s = time.monotonic() - phase.get("full_at", time.monotonic())
    result_files = {f.name: f.stat().st_size for f in sorted(disk.iterdir())}
    print("on the disk when full: " + ", ".join(f"{name} {size / 2**20:.1f} MiB" for name, size in result_files.items()))
    (disk / "ballast").unlink()
    phase["name"] = "freed"
    await asyncio.sleep(args.after_s)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"answers": answers, "acked": acked, "filled_after_s": filled_after, "full_lines": lines_full,
            "full_s": full_s, "unacked": len(outbox)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=20)
    ap.add_argument("--sockets", type=int, default=4)
    ap.add_argument("--full-s", type=float, default=10.0)
    ap.add_argument("--after-s", type=float, default=10.0)
    ap.add_argument("--fill-timeout-s", type=float, default=40.0)
    ap.add_argument("--ballast", type=float, default=0.5,
                    help="share of the disk taken by the file deleted when space comes back (default 0.5): the "
                         "log's data must fit twice for a while, in the WAL and in the database it is folded into")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="modlens-full-disk-"))
    disk, home = work / "disk", work / "home"
    home.mkdir()
    why = mount_tmpfs(disk, args.size_mib)
    if why is not None:
        print(f"probe_full_disk: skipped ({why})")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    proc = None
    try:
        (disk / "ballast").write_bytes(b"\0" * int(args.size_mib * 1024 * 1024 * args.ballast))
        study = home / "study.toml"
        study.write_text('study_id = "full-disk"\ndetectors = []\n[normalizer]\nenabled = false\n[perturbation]\n'
                         "enabled = false\n[limits]\nmessages_per_second = 5000\nburst = 5000\n")
        os.environ["MODLENS_HOME"] = str(home)
        token = pairing.ensure()
        db = disk / "study.sqlite"
        proc, info = start_serve(home, "--config", str(study), "--db", str(db))
        result = asyncio.run(drive(info["url"], token, args, disk, home / "serve.log"))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        try:
            con = sqlite3.connect(disk / "study.sqlite")
            stored = {r[0] for r in con.execute("SELECT comment_key FROM comments WHERE platform = 'probe'")}
            integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
            con.close()
        except sqlite3.Error as err:
            stored, integrity = set(), f"unreadable: {err}"
        log_text = (home / "serve.log").read_text(errors="replace")
        files = {f.name: f.stat().st_size for f in sorted(disk.iterdir())}
        subprocess.run(["umount", str(disk)], check=False)
        shutil.rmtree(work, ignore_errors=True)

    answers = result["answers"]
    print(f"tmpfs {args.size_mib} MiB, {args.sockets} sockets; disk full after {result['filled_after_s']:.1f} s")
    print(f"{'phase':<8} {'answer':<24} {'count':>7}")
    for (ph, kind), n in sorted(answers.items()):
        print(f"{ph:<8} {kind:<24} {n:>7}")
    per_min = len(result["full_lines"]) / (max(result["full_s"], args.full_s) / 60)
    print(f"daemon log while full (access log aside): {len(result['full_lines'])} lines in {result['full_s']:.1f} s "
          f"({per_min:.1f}/min)")
    for line in result["full_lines"][:5]:
        print(f"  | {line[:160]}")
    print("on the disk at the end: " + ", ".join(f"{name} {size / 2**20:.1f} MiB" for name, size in files.items()))
    lost = result["acked"] - stored
    internal = sum(n for (_, k), n in answers.items() if k == "error:internal")
    checks = {
        "the disk filled (unavailable answered)": any(k == "error:unavailable" for _, k in answers),
        "0 internal answers": internal == 0,
        "0 acknowledged comments missing from the log": not lost,
        "log integrity ok": integrity == "ok",
        "no traceback in the daemon's log": "Traceback" not in log_text,
        "fewer than 10 daemon log lines per minute while full": per_min < 10,
        "'writable again' logged": "writable again after" in log_text,
        "acknowledgements again after space came back": answers[("freed", "comments_ok")] > 0,
    }
    print(f"acknowledged comments {len(result['acked'])}, in the log {len(result['acked'] & stored)}, "
          f"missing {len(lost)}; pages never acknowledged {result['unacked']}")
    for what, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
