"""merge participants' bundles into one study log, or list what a merged log holds

`modlens merge --out study.sqlite BUNDLE…` verifies and merges each bundle in its own transaction
(the same bundle twice adds nothing; a refused one is reported and the others still merge; exit 2
when any was refused, 3 when every refused one was missing). `modlens merge --list study.sqlite`
shows each bundle's participants, the ratings the bundle held and added (`deleted` where
`--forget-withdrawn --delete` deleted what it brought of them), their ratings in the log, consent
times (or `withdrew TIME` for a participant whose every consent is withdrawn, counted apart; `again
TIME` for one who agreed again, which counts from then on) and bundle checksums. `modlens merge
--forget-withdrawn study.sqlite` lists, per participant who withdrew consent, the rows of theirs the
withdrawal covers that the merged log still holds (earlier bundles brought them; of one who agreed
again, what they recorded before agreeing again)
and the rows no one else's data needs that would go with them, per table (counted on a copy in
memory: the log is only read, an older one not upgraded); with `--delete` it
deletes them, in one transaction, their consent rows staying as the record of the withdrawal (and the
bundles' record of the raters each carried, which ties a rater to the key that signed their bundles).
docs/MULTI.md has the rules.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from modlens.cli.common import EXIT_CODES, CliError
from modlens.errors import ErrorKind, with_fix


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundles", nargs="*", metavar="BUNDLE", help="participant bundles (modlens export --bundle)")
    parser.add_argument("--out", metavar="STUDY.sqlite", help="merged study log to create or add to")
    parser.add_argument("--study", metavar="STUDY.modlens", help="refuse bundles that are not of this study pack")
    parser.add_argument("--list", metavar="STUDY.sqlite", dest="list_db", help="list the bundles merged into a log")
    parser.add_argument("--forget-withdrawn", metavar="STUDY.sqlite", dest="forget_db",
                        help="list the data the merged log holds of participants who withdrew consent (a dry run: "
                             "the log is only read)")
    parser.add_argument("--delete", action="store_true",
                        help="with --forget-withdrawn: delete those rows, in one transaction (their consents stay)")
    parser.add_argument("--allow-unsigned", action="store_true",
                        help="also merge unsigned bundles (older modlens); they cannot be told from edited ones")


def _print_outcome(path: str, outcome: dict[str, Any] | Exception) -> None:
    if isinstance(outcome, FileNotFoundError):
        print(f"modlens merge: refused {path}: file not found", file=sys.stderr)
    elif isinstance(outcome, Exception):
        print(f"modlens merge: refused {path}: {with_fix(outcome)}", file=sys.stderr)
    elif outcome["status"] == "already merged":
        print(f"skipped {path}: already merged at {outcome['merged_at']} (from {outcome['source']})")
    else:
        rows = outcome["rows"]
        parts = ", ".join(f"+{rows[t]['added']}/{rows[t]['in_bundle']} {t}"
                          for t in ("comments", "scores", "ratings") if t in rows)
        print(f"merged {path}: {parts} (added/in bundle)" + "".join(f"; {d}" for d in _differences(rows)))
        for w in outcome.get("withdrawn", []):
            print(_withdrawal(w))


def _withdrawal(w: dict[str, Any]) -> str:
    """A rater the bundle says withdrew: the participant was told to ask the researcher to delete what
    earlier bundles brought, which the merged log still holds (reports leave their ratings out,
    `analysis/data.py`, while no consent of theirs holds)."""
    held = [f"{n} {what}{'s' if n != 1 else ''}" for what, n in
            (("session", w["sessions"]), ("rating", w["ratings"]), ("sighting", w["sightings"]),
             ("task review", w["reviews"])) if n] or (["a raters row"] if w["raters"] else [])
    # task reviews are written on this log (`modlens rate`), not brought by bundles
    whence = "" if w["reviews"] else ", from earlier bundles,"
    holds = (f"this log still holds{whence} {', '.join(held[:-1])}{' and ' if len(held) > 1 else ''}"
             f"{held[-1]} of theirs, which reports leave out: the participant was told to ask you to delete them "
             "(`modlens merge --forget-withdrawn LOG --delete`)"
             if held else "this log holds nothing of theirs")
    return f"rater {w['rater_id']} withdrew consent ({w['withdrawn_at']}): {holds}"


def _differences(rows: dict[str, Any]) -> list[str]:
    """The conflicts merge resolved, per table: its rows whose values differ from the merged log's."""
    out = []
    for table, info in rows.items():
        d = info.get("differ") or {}
        kept, replaced = d.get("kept", 0), d.get("replaced", 0)
        if not kept + replaced:
            continue
        how = [f"kept the merged log's{f' for {kept}' if replaced else ''}"] if kept else []
        if replaced:
            how.append(f"{replaced} replaced by this bundle's" if kept else "replaced by this bundle's")
        how += [f"largest {column} difference {value:.3g}" for column, value in d.get("largest", {}).items()
                if value is not None]
        out.append(f"{kept + replaced} {table} differ from the merged log's ({'; '.join(how)})")
    return out


def _list(db: str) -> int:
    from modlens.exchange.merge import listing
    from modlens.studylog.connection import StudyLogError

    try:
        rows = listing(db)
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND if not Path(db).exists() else ErrorKind.FAILED) from None
    if not rows:
        print(f"{db}: no bundles merged")
        return 0
    # a participant's second bundle holds ratings the first one added: the bundle's own count, what it
    # added, and the rater's total in the log are three numbers
    # a rater who withdrew every consent no longer consents: their withdrawal stands where the consent time
    # would, and they are counted apart from the raters who consent; a bundle whose rows of a rater were
    # deleted at their withdrawal says so in place of counts of what is left of them (none: not what it held)
    print(f"{'bundle':>6}  {'rater':<24} {'ratings +added/in bundle':>24}  {'in log':>6}  {'consent at':<33} "
          f"{'merged at':<26} sha256 / file")
    for r in rows:
        held = "deleted" if r["deleted"] else f"+{r['ratings_added']}/{r['ratings_in_bundle']}"
        # one who withdrew and agreed again consents from then on only: when they agreed again stands there
        consent = (f"withdrew {r['withdrawn_at']}" if r["withdrawn_at"] else f"again {r['agreed_again']}"
                   if r["agreed_again"] else r["consent_at"] or "-")
        print(f"{r['bundle_id']:>6}  {r['rater_id']:<24} {held:>24}  {r['ratings']:>6}  {consent:<33} "
              f"{r['merged_at']:<26} {r['bundle_sha256'][:16]}… {r['source']}")
    withdrew = {r["rater_id"] for r in rows if r["withdrawn_at"]}
    consenting = {r["rater_id"] for r in rows} - withdrew
    again = {r["rater_id"] for r in rows if r["agreed_again"]}
    print(f"{len({r['bundle_id'] for r in rows})} bundles, {len(consenting)} raters"
          f"{f' ({len(again)} agreed again after withdrawing: from then on)' if again else ''}, "
          f"{f'{len(withdrew)} withdrew, ' if withdrew else ''}study {rows[0]['study_id']!r}")
    return 0


def _rows_text(deleted: dict[str, int]) -> str:
    return ", ".join(f"{n} {table}" for table, n in deleted.items())


def _forget(db: str, delete: bool) -> int:
    from modlens.exchange.forget import forget_withdrawn
    from modlens.studylog.connection import StudyLogError

    try:
        result = forget_withdrawn(db, delete=delete)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED) from None
    raters, upgraded = result["raters"], result["migrated_to"]
    if upgraded:  # the deletion's open upgrades an older log; the dry run counted on an upgraded copy
        print(f"{db}: schema {result['schema_version']}, " + (
            f"upgraded to {upgraded} before the deletion" if delete else
            f"left as it is: counted on a copy upgraded to {upgraded} in memory, as --delete upgrades the log first"))
    if not raters:
        # no consent in the log was ever withdrawn (`records/forget.withdrawals`)
        print(f"{db}: no participant in the log withdrew consent: nothing to delete")
        return 0
    verb = "deleted" if delete else "would delete"
    for r in raters:
        # one who agreed again keeps what they recorded since, and their raters row; what the withdrawal
        # covers goes all the same (a consent given again does not bring it back)
        before = " of what they recorded before agreeing again" if r["agreed_again"] else ""
        what = (f"{verb}{before}: {_rows_text(r['deleted'])}" if r["deleted"] and before
                else f"{verb} {_rows_text(r['deleted'])}" if r["deleted"]
                else f"the log holds none of their sessions, ratings or sightings{before}: nothing to delete")
        cleared = r["cleared"]
        if cleared:  # rows others' data keeps, which kept this rater's visit as it came first
            what += (f"; {'cleared' if delete else 'would clear'} {r['rater_id']}'s visit from "
                     f"{cleared.get('comments', 0)} comments and {cleared.get('pages', 0)} pages that stay "
                     "(first seen, time shown; address, title)")
        kept = r["kept"].get("comments", 0)
        if kept:  # the log keeps one text per comment: no one left's visit recorded another in its place
            what += (f"; {'kept' if delete else 'would keep'} {kept} comments that stay as {r['rater_id']}'s sessions "
                     "were sent them (text, first seen, time shown), since no one left was sent that version")
        again = f" and agreed again ({r['agreed_again']}), which counts from then on" if r["agreed_again"] else ""
        print(f"rater {r['rater_id']} (study {r['study_id']!r}) withdrew consent ({r['withdrawn_at']}){again}: {what}")
    total = sum(sum(r["deleted"].values()) for r in raters)
    holding = sum(bool(r["deleted"]) for r in raters)
    if delete:
        # their ids stay where the log keeps the record of them: the consents, and the bundles' raters (what
        # ties a rater to the key that signed their bundles, and `--list`'s `deleted`)
        print(f"{db}: deleted {total} rows of {holding} of {len(raters)} raters who withdrew, in one transaction; "
              "their consent rows stay, the record of the withdrawal, and the merged bundles' record of the raters "
              "each carried still names them (`modlens merge --list`)")
    elif total:
        print(f"{db}: dry run, nothing deleted; {total} rows of {holding} of {len(raters)} raters who withdrew "
              f"would be; to delete them: modlens merge --forget-withdrawn {db} --delete")
    else:
        print(f"{db}: nothing to delete: the log holds none of the sessions, ratings or sightings of the "
              f"{len(raters)} raters who withdrew")
    return 0


def _withdrawn_held(db: str) -> None:
    """After a merge: the data the log holds of raters who withdrew (a bundle exported before the
    withdrawal brings it, merged before or after it, or after `--forget-withdrawn --delete`): counted
    once, after the last bundle merged (`exchange/forget.still_held`)."""
    from modlens.exchange.forget import still_held
    from modlens.studylog.records.forget import held as withdrawn_held
    from modlens.studylog.store import StudyLog

    with StudyLog(db, readonly=True) as log:
        held = still_held(withdrawn_held(log.conn))
    if held:
        # sessions and ratings always; what else `forget_withdrawn` deletes of theirs where the log holds it
        # of one who agreed again: what they recorded before agreeing again, which the consent given
        # again does not cover (reports leave it out; `--forget-withdrawn --delete` deletes it)
        who = "; ".join(f"{r['rater_id']}: {r['sessions']} sessions, {r['ratings']} ratings"
                        + (f", {r['reviews']} task reviews" if r["reviews"] else "")
                        + ("" if r["sessions"] or r["ratings"] or r["reviews"] else ", a raters row")
                        + (f" from before agreeing again ({r['agreed_again']})" if r["agreed_again"] else "")
                        for r in held)
        print(f"{db} holds data of {len(held)} rater{'s' if len(held) != 1 else ''} who withdrew consent ({who}): "
              f"`modlens merge --forget-withdrawn {db}` lists what would be deleted, with --delete deletes it")


def run(args: argparse.Namespace) -> int:
    if args.delete and not args.forget_db:
        raise CliError("--delete goes with --forget-withdrawn", fix="modlens merge --forget-withdrawn study.sqlite --delete")
    if args.forget_db:
        if args.out or args.bundles or args.list_db:
            raise CliError("--forget-withdrawn takes only the merged log",
                           fix="modlens merge --forget-withdrawn study.sqlite [--delete]")
        return _forget(args.forget_db, args.delete)
    if args.list_db:
        if args.out or args.bundles:
            raise CliError("--list takes only the merged log", fix="modlens merge --list study.sqlite")
        return _list(args.list_db)
    if not args.out or not args.bundles:
        raise CliError("give --out and at least one bundle", fix="modlens merge --out study.sqlite A.bundle B.bundle …")
    from modlens.exchange.merge import merge_files
    from modlens.studylog.connection import StudyLogError

    study_key = None
    if args.study:
        from modlens.study import pack

        try:
            study_key = pack.read(args.study).study_key
        except FileNotFoundError as err:
            raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    try:
        results = merge_files(args.out, args.bundles, study_key, report=_print_outcome,
                              allow_unsigned=args.allow_unsigned)
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED) from None
    refused = sum(isinstance(r, Exception) for r in results)
    merged = sum(isinstance(r, dict) and r["status"] == "merged" for r in results)
    if merged:
        _withdrawn_held(args.out)
    print(f"{args.out}: {merged} merged, {len(results) - merged - refused} already there, {refused} refused")
    if refused:  # each refusal is printed above; the code is the table's: not found only when every one was missing
        missing = all(isinstance(r, FileNotFoundError) for r in results if isinstance(r, Exception))
        return EXIT_CODES[ErrorKind.NOT_FOUND if missing else ErrorKind.USAGE]
    return 0
