"""`modlens export --bundle OUT [--show]`: the participant's bundle for the researcher
(`modlens.exchange.bundle`). --show prints what it would hold and writes nothing."""
from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

from modlens.cli.common import CliError, study_log_error


def run_bundle(args: argparse.Namespace, db: Path) -> int:
    from modlens.exchange.bundle import describe, export_bundle, read_bundle, write_bundle_file
    from modlens.studylog.connection import StudyLogError

    if not args.bundle:
        raise CliError("--show goes with --bundle", fix="modlens export --bundle my-study.bundle --show")
    if args.out or args.tables:
        raise CliError("--bundle holds every consented table; it takes neither --out nor --tables")
    try:
        if args.show:
            buffer = io.BytesIO()
            made = export_bundle(db, buffer, args.study_id)
            bundle = read_bundle(buffer, args.bundle)
            print(describe(bundle))
            bundle.close()
            _say_withdrawn(made["withdrawn"])
            _say_before_withdrawal(made["before_withdrawal"])
            _say_unsent(made["unsent"])
            print(f"\nnothing written; run again without --show to write {args.bundle}")
            return 0
        manifest = write_bundle_file(db, args.bundle, args.study_id)
    except StudyLogError as err:
        raise study_log_error(err, db) from None
    rows = {t: i["rows"] for t, i in manifest["tables"].items()}
    if not manifest["rater_ids"]:
        who = ", ".join(f"{r} (withdrew {at})" for r, at in manifest["withdrawn"].items())
        print(f"wrote {args.bundle}: study {manifest['study_id']!r}, no consenting rater: it carries only the "
              f"withdrawal of {who} (their consent times, none of their data), so the researcher's merge marks it")
    else:
        print(f"wrote {args.bundle}: study {manifest['study_id']!r}, rater(s) {', '.join(manifest['rater_ids'])}, "
              f"{rows['comments']} comments, {rows['ratings']} ratings, {rows['scores']} scores")
        _say_withdrawn(manifest["withdrawn"])
        _say_before_withdrawal(manifest["before_withdrawal"])
        _say_unsent(manifest["unsent"])
    print(f"checksum {manifest['bundle_sha256']}; send this file to the researcher")
    return 0


def _say_withdrawn(withdrawn: dict[str, str]) -> None:
    """The raters the bundle left out because they withdrew (their sessions, ratings and the comments
    only their sessions saw or rated): the consent text promised they could."""
    if withdrawn:
        who = ", ".join(f"{r} (withdrew {at})" for r, at in withdrawn.items())
        print(f"left out {len(withdrawn)} rater{'s' if len(withdrawn) > 1 else ''} who withdrew consent: {who}; "
              "their sessions and ratings, and the comments only they saw or rated, are not in the bundle, "
              "which carries their consent times alone so that the researcher's merge marks the withdrawal "
              "(a bundle sent before it still holds their data: merge says what; ask the researcher to delete it)")


def _say_before_withdrawal(before: dict[str, dict[str, Any]]) -> None:
    """Raters who withdrew and agreed again: their new consent counts from then on, so what they recorded
    before it (before the withdrawal, and while withdrawn) stays out of every bundle, as it did while they
    had withdrawn."""
    if before:
        who = ", ".join(f"{r} ({_n(b['sessions'], 'session')}, {_n(b['ratings'], 'rating')}; "
                        f"withdrew {b['withdrawn_at']})" for r, b in before.items())
        print(f"left out what {len(before)} rater{'s' if len(before) > 1 else ''} who withdrew and agreed again "
              f"recorded before agreeing again: {who}; a consent given again counts from then on")


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _say_unsent(unsent: dict[str, int]) -> None:
    """A comment keeps what the session that sent it first saw (text, time shown, first_seen; its page's
    first_seen, and url and title unless it sent none): where that session is left out (a rater who
    withdrew), what the bundle did instead."""
    if unsent["comments"]:
        print(f"left out {_n(unsent['comments'], 'comment')} whose recorded text only sessions the bundle leaves out "
              f"were sent (a consenting rater saw it edited), with {_n(unsent['sightings'], 'sighting')} and "
              f"{_n(unsent['ratings'], 'rating')} of consenting raters")
    if unsent["as_seen"]:
        print(f"{_n(unsent['as_seen'], 'comment')} a session the bundle leaves out saw first "
              f"travel{'s' if unsent['as_seen'] == 1 else ''} with the time a consenting rater first saw it (or, "
              "where none did, rated it) as first_seen and no time shown (a page such a session saw first: without url and title)")
