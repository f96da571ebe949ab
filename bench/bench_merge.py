"""Merge throughput: N participant bundles of M comments and 4M scores each (4 detectors), a share of
the comments seen by every participant (so the merge deduplicates them), R ratings each on those.

    python bench/bench_merge.py                          # 20 bundles x 50,000 comments (200,000 scores)
    python bench/bench_merge.py --bundles 4 --comments 5000
    python bench/bench_merge.py --tiny                   # 2 bundles x 200 comments: the suite's check that it runs

Participant logs are filled with bulk SQL (the daemon's writer would take far longer to make them;
every INSERT names its columns, so a column a migration adds cannot shift the values),
exported with the real bundle code, then merged by the real `modlens merge` in a child process, whose
wall time and peak memory (max RSS) are measured; then `modlens report --format json` on the merged log.
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from modlens.study.pack import study_key
from modlens.exchange.bundle import write_bundle_file
from modlens.studylog.store import StudyLog
from modlens.studylog.codec import canonical_json, now_iso

STUDY, SALT = "bench", "bench-salt-0123456789abcdef"
DETECTORS = [("minilm-toxicity", "h1"), ("profanity-check", "p1"), ("hf-classifier", "t1"), ("cached", "c1")]
LEVELS = ["not toxic", "hard to say", "toxic"]


def fill_log(path: Path, participant: int, comments: int, shared: int, ratings: int) -> None:
    now = now_iso()
    rater, session = f"rater-{participant}", f"session-{participant}"
    keys = [f"shared-{i}" for i in range(shared)] + [f"p{participant}-{i}" for i in range(comments - shared)]
    texts = [f"comment text {k}: some words to make it a realistic length for a comment" for k in keys]
    with StudyLog(path) as log:
        c = log.conn
        c.execute("BEGIN")
        c.execute("INSERT INTO studies (study_id, title, config_json, created_at) VALUES (?, ?, ?, ?)", (STUDY, "bench", canonical_json({"author_salt": SALT}), now))
        c.execute("INSERT INTO raters (study_id, rater_id, consent_at, first_seen) VALUES (?, ?, ?, ?)", (STUDY, rater, now, now))
        c.execute("INSERT INTO sessions (session_id, study_id, rater_id, client, client_version, protocol_version, started_at) "
                  "VALUES (?, ?, ?, 'modlens-extension', '0.1', 1, ?)", (session, STUDY, rater, now))
        c.execute("INSERT INTO pages (page_id, platform, page_key, url, title, first_seen) VALUES (1, 'youtube', 'v', 'u', 't', ?)", (now,))
        c.executemany("INSERT INTO texts (text_id, text_hash, text) VALUES (?, ?, ?)",
                      [(i + 1, hashlib.sha256(t.encode()).hexdigest(), t) for i, t in enumerate(texts)])
        c.executemany("INSERT INTO comments (comment_id, platform, comment_key, page_id, text_id, original_length, first_seen) "
                      "VALUES (?, 'youtube', ?, 1, ?, ?, ?)", [(i + 1, k, i + 1, len(texts[i]), now) for i, k in enumerate(keys)])
        c.executemany("INSERT INTO sightings (comment_id, session_id, seen_at) VALUES (?, ?, ?)", [(i + 1, session, now) for i in range(len(keys))])
        for d, (name, version) in enumerate(DETECTORS, 1):
            c.execute("INSERT INTO detectors (detector_id, name, version, toxicity_label, threshold, config_json, first_used) "
                      "VALUES (?, ?, ?, 'toxic', 0.5, '{}', ?)", (d, name, version, now))
            c.executemany("INSERT INTO scores (text_id, detector_id, labels_json, toxicity, latency_ms, error, created_at) "
                          "VALUES (?, ?, ?, ?, 2.0, NULL, ?)",
                          [(i + 1, d, f'{{"toxic":{(i * d) % 97 / 97:.4f}}}', (i * d) % 97 / 97, now) for i in range(len(keys))])
        rows = [(r + 1, STUDY, rater, f"r{r}", session, r + 1, canonical_json({"toxicity": LEVELS[(r + participant) % 3]}), now)
                for r in range(min(ratings, shared))]
        c.executemany("INSERT INTO ratings (rating_id, study_id, rater_id, client_rating_id, session_id, comment_id, "
                      "values_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        c.executemany("INSERT INTO rating_values (rating_id, attribute, value) VALUES (?, 'toxicity', ?)",
                      [(r[0], LEVELS[(r[0] - 1 + participant) % 3]) for r in rows])
        c.execute("COMMIT")


def child(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} … failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundles", type=int, default=20)
    ap.add_argument("--comments", type=int, default=50_000, help="comments per bundle (scores: 4 per comment)")
    ap.add_argument("--shared", type=float, default=0.5, help="share of each bundle's comments every participant saw")
    ap.add_argument("--ratings", type=int, default=500, help="ratings per participant (on shared comments)")
    ap.add_argument("--workdir", help="keep logs, bundles and the merged log here (default: a temporary folder)")
    ap.add_argument("--tiny", action="store_true", help="2 bundles x 200 comments, 20 ratings (the test suite's run)")
    args = ap.parse_args()
    if args.tiny:
        args.bundles, args.comments, args.ratings = 2, 200, 20
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        shared = int(args.comments * args.shared)
        t0 = time.perf_counter()
        bundles, size = [], 0
        for p in range(args.bundles):
            db = work / f"participant-{p}.sqlite"
            db.unlink(missing_ok=True)
            fill_log(db, p, args.comments, shared, args.ratings)
            out = work / f"participant-{p}.bundle"
            write_bundle_file(db, out, STUDY)
            db.unlink()
            bundles.append(out)
            size += out.stat().st_size
        made = time.perf_counter() - t0
        merged = work / "merged.sqlite"
        for f in work.glob("merged.sqlite*"):
            f.unlink()
        rows_in = args.bundles * (args.comments * 7 + 2 * min(args.ratings, shared) + 4)  # texts, comments, sightings, 4 scores
        merge_s, _ = child([sys.executable, "-m", "modlens", "merge", "--out", str(merged), *map(str, bundles)])
        merge_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        with StudyLog(merged, readonly=True) as log:
            first = log.counts()
        again_s, _ = child([sys.executable, "-m", "modlens", "merge", "--out", str(merged), *map(str, bundles)])
        with StudyLog(merged, readonly=True) as log:
            counts = log.counts()
        # the second merge's rows, table by table, counted rather than assumed
        added = {t: counts.get(t, 0) - first.get(t, 0) for t in counts.keys() | first.keys()
                 if counts.get(t, 0) != first.get(t, 0)}
        report_s, _ = child([sys.executable, "-m", "modlens", "report", "--db", str(merged), "--format", "json"])
        report_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"bundles: {args.bundles} x {args.comments:,} comments ({shared:,} shared), {4 * args.comments:,} scores, "
              f"{min(args.ratings, shared)} ratings each; made and exported in {made:.1f} s, {size / 2**20:.1f} MiB in all")
        print(f"merge:   {merge_s:.1f} s, {rows_in / merge_s:,.0f} bundle rows/s "
              f"({args.bundles / merge_s:.2f} bundles/s), peak RSS {merge_rss:,.0f} MiB")
        print(f"again:   {again_s:.1f} s (every bundle already merged: "
              + (f"rows added {', '.join(f'{t} {n:+,}' for t, n in sorted(added.items()))})" if added
                 else "nothing added)"))
        print(f"merged:  {counts['comments']:,} comments, {counts['scores']:,} scores, {counts['ratings']:,} ratings, "
              f"{counts['row_sources']:,} provenance rows, {merged.stat().st_size / 2**20:.0f} MiB; study key "
              f"{study_key(STUDY, SALT)}")
        print(f"report:  {report_s:.1f} s (modlens report --format json), peak RSS of merge and report {report_rss:,.0f} MiB")


if __name__ == "__main__":
    main()
