"""import ratings from a crowd platform's export and apply the acceptance rules

`modlens rate FILE --study DIR` reads a Label Studio JSON export, Potato's annotation_output/
folder (or its `potato.export -f jsonl` file) or a survey CSV (Mechanical Turk, Prolific,
Qualtrics) of the tasks `modlens study export-tasks` wrote, checks every answer as the protocol checks a rating
(attributes, levels, anchor answers: one refused answer imports nothing), skips and counts the
records the platform marks as carrying no valid work (a rejected, returned or timed-out
submission, a preview, a cancelled annotation; the counts are kept with the import in the log, and
the report's item-set section lists them per import), records each worker as rater `<format>:<worker>`,
then reviews every rater of the item set by the Perspective study's Table 11 (scaled to the
task's gold and item counts where they differ from its 3 and 12) and prints the decision per rater
and task (accept, accept_unused, reject, with the reason) and the raters each item got.
Importing the same file again adds nothing; an annotation changed in the tool since is reported
and kept (`--on-change replace` stores the new answer as the rater's latest). Without FILE: only the review (e.g. after raters
rated through the protocol). docs/MULTI.md#item-set-studies.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from modlens.cli.common import CliError, add_db_option, add_encoding_option, db_path
from modlens.errors import ErrorKind

if TYPE_CHECKING:
    from modlens.study.rate_import import ImportResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE", help="the platform's export (omit to review only)")
    add_db_option(parser)
    parser.add_argument("--study", required=True, metavar="DIR",
                        help="the study folder with itemset.json and assignment.json")
    parser.add_argument("--format", choices=["labelstudio", "potato", "survey"],
                        help="the export's format (default: from the name: .json, folder or .jsonl, .csv)")
    parser.add_argument("--on-change", choices=["keep", "replace"], default="keep",
                        help="an annotation edited since the last import: keep the stored answer (default) or "
                             "store the new one as the rater's latest")
    add_encoding_option(parser)


def _first_five(lines: list[str]) -> str:
    return "; ".join(lines[:5]) + (" …" if len(lines) > 5 else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def collection_line(per_item: dict[str, int], planned: int) -> str:
    """Raters per item in accepted tasks as collected, against the assignment's --raters: how many
    items got each count, and the items over and under it named."""
    from collections import Counter

    counts = Counter(per_item.values())
    got = ", ".join(f"{m} of {len(per_item)} items {'has' if m == 1 else 'have'} {_plural(n, 'rater')}"
                    for n, m in sorted(counts.items(), reverse=True))
    over = sorted(ref for ref, n in per_item.items() if n > planned)
    under = sorted(ref for ref, n in per_item.items() if n < planned)
    return (f"raters per item in accepted tasks: {got}; planned {planned} (--raters): "
            f"{len(per_item) - len(over) - len(under)} as planned, "
            f"{len(over)} over-collected{' (' + _first_five(over) + ')' if over else ''}, "
            f"{len(under)} under-collected{' (' + _first_five(under) + ')' if under else ''}")


def print_import(file: str, result: ImportResult) -> None:
    """What the import stored and left out: printed once it committed, before the review runs (a
    review that fails leaves these ratings stored all the same)."""
    print(f"{file} ({result.format}): {result.workers} workers, {result.ratings_new} ratings imported, "
          f"{result.ratings_known} already in the log, {result.empty} empty answers")
    skipped = result.tally.skipped
    if skipped:
        print(f"skipped {sum(skipped.values())} {result.tally.records} that carry no valid work: "
              + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items())))
    if result.incomplete:
        print(f"{_plural(result.incomplete, 'comment')} answered in part (counted as missed)")
    for note in result.tally.notes:
        print(note)
    if result.repeat_slots:
        print(f"{len(result.repeat_slots)} workers filled several slots of one task; each counts once there, so "
              f"those tasks have a rater fewer than planned: {_first_five(result.repeat_slots)}")
    if result.repeated:
        print(f"{len(result.repeated)} answers repeat the same worker's answer to the same comment earlier in "
              f"this file ({result.repeated_differ} of them differ from it): the first is kept: "
              f"{_first_five(result.repeated)}")
    if result.changed:
        done = ("kept the stored answers (--on-change replace takes the new ones)" if result.on_change == "keep"
                else "stored the new answers as the raters' latest")
        print(f"{len(result.changed)} annotations changed since the last import, {done}: "
              f"{_first_five(result.changed)}")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from modlens.study.acceptance import review_log
    from modlens.study.assignment import Plan
    from modlens.study import load
    from modlens.study.rate_import import import_ratings

    db = db_path(args)
    try:
        if args.file:
            result = import_ratings(args.file, args.study, db, args.format, args.encoding, args.on_change,
                                    on_imported=lambda imported: print_import(args.file, imported))
            reviews = result.reviews
            if result.withdrawn:  # the review's word, printed after it
                print(f"{len(result.withdrawn)} submissions imported before carry no valid work now: their tasks are "
                      f"rejected, their ratings kept in the log unused: {_first_five(result.withdrawn)}")
        else:
            if not Path(db).is_file():
                raise CliError(f"{db}: no study log there", kind=ErrorKind.NOT_FOUND)
            reviews = review_log(db, Plan.load(args.study, load(args.study)))
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    for r in reviews:
        print(f"{r.decision:>13}  {r.rater_id}  task {r.task} ({r.source}): {r.reason}")
    counts = {d: sum(r.decision == d for r in reviews) for d in ("accept", "accept_unused", "reject")}
    print(f"reviewed {len(reviews)} rater tasks: " + ", ".join(f"{n} {d}" for d, n in counts.items()))
    if args.file:
        print(collection_line(result.per_item, result.raters))
    return 0
