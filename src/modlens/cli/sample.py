"""draw a fixed item set from the study log's comments for raters

Per platform, comments within the word limits, balanced over a detector's score deciles
(`--detector NAME[@VERSION]`) or stratified by a stored label (`--label NAME`), seeded; writes
the set (item ids, comment keys, texts, platforms and the draw's parameters) to `--out`, a study
folder (its itemset.json) or a file. A folder of `--out` that does not exist is said before the
draw (exit 2); the file is written atomically, so a write that fails leaves what was there whole.
Then `modlens study assign DIR` makes the raters' tasks (docs/MULTI.md#item-set-studies).
"""
from __future__ import annotations

import argparse

from modlens.cli.common import CliError, add_db_option, db_path
from modlens.errors import ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument("--out", required=True, metavar="PATH", help="study folder (writes itemset.json there) or file")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--detector", metavar="NAME[@VERSION]",
                     help="balance over this detector's score deciles (its newest version in the log by default)")
    how.add_argument("--label", metavar="NAME",
                     help="stratify by the value of this stored label; toxic: the gold label, read from a label set "
                          "per source as `modlens report` reads it (see --label-set; the item set names the sets)")
    parser.add_argument("--label-set", dest="label_sets", action="append", default=[], metavar="ID_OR_DEFINITION",
                        help="with --label toxic: the gold label set to use for its source, by id or definition; "
                             "repeatable (default: per source, the newest set that holds labels)")
    parser.add_argument("--per-platform", type=int, default=100, help="comments per platform (default: 100, as the human-centred Perspective study)")
    parser.add_argument("--platform", action="append", metavar="NAME",
                        help="only this platform (repeat for several; default: every platform in the log)")
    parser.add_argument("--min-words", type=int, default=3, help="shortest comment, in words (default: 3)")
    parser.add_argument("--max-words", type=int, default=60,
                        help="longest comment, in words (default: 60; the human-centred Perspective study avoided long comments)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw (default: 0)")
    parser.add_argument("--force", action="store_true", help="replace an existing item set")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from modlens.study import itemset

    out = Path(args.out)
    target = out / itemset.FILE if out.is_dir() else out
    if target.exists() and not args.force:
        raise CliError(f"{target} already exists", fix="pass --force to replace it (an assignment made for it "
                                                       "would no longer match: `modlens study assign` again)")
    if not target.parent.is_dir():  # said before the draw, not as a traceback after it
        raise CliError(f"--out {args.out}: the folder {target.parent} does not exist",
                       fix="create it first, or give --out a file in a folder that exists (or a study folder)")
    data = itemset.draw(db_path(args), per_platform=args.per_platform, detector=args.detector, label=args.label,
                        platforms=args.platform, min_words=args.min_words, max_words=args.max_words, seed=args.seed,
                        label_sets=args.label_sets)
    try:
        path = itemset.write(data, target)
    except OSError as err:  # written atomically: what was at --out is still there, whole
        raise CliError(f"cannot write {target}: {err.strerror or err}", kind=ErrorKind.FAILED,
                       fix="free space on its disk or pick another --out; nothing was written there") from None
    for source, chosen in data["params"].get("label_sets", {}).items():
        print(f"gold label {args.label} of {source}: label set {chosen['label_set_id']} ({chosen['definition']})")
    for platform, counts in data["params"]["counts"].items():
        print(f"{platform:>12}: {sum(counts.values())} items  " + " ".join(f"{s}:{n}" for s, n in counts.items()))
    print(f"wrote {path}: {len(data['items'])} items, sha256 {data['sha256'][:16]}…")
    return 0
