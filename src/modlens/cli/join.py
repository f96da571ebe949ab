"""join a study: configure this computer's daemon from the researcher's study.modlens

Verifies the pack (format, version, checksum, signature, study, no undeclared environment reads),
shows who signed it, its detectors, where each sends comments and the secrets it reads, asks
(remote detectors stay off without a yes: the prompt, or --accept-remote in scripts), writes its
study configuration into the modlens home folder, and prints what to run next. An unsigned pack
needs --allow-unsigned (or a yes at the prompt); switching to another study needs --replace.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from modlens.cli.common import CliError
from modlens.errors import ErrorKind

if TYPE_CHECKING:
    from modlens.study.pack import Pack


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pack", metavar="STUDY.modlens", help="the study pack the researcher sent")
    parser.add_argument("--replace", action="store_true", help="leave the study joined before and join this one")
    parser.add_argument("--accept-remote", action="store_true",
                        help="agree that the pack's remote detectors send each comment to the places shown "
                             "(without it, and without a yes at the prompt, they stay off)")
    parser.add_argument("--allow-unsigned", action="store_true",
                        help="join a pack that carries no researcher signature (its origin cannot be checked)")


def _ask(question: str) -> bool:
    """A yes from a person at a terminal; never a yes from a script (stdin not a terminal)."""
    if not sys.stdin.isatty():
        return False
    print(f"{question} [y/N] ", end="", flush=True)
    answer = sys.stdin.readline().strip().lower()
    print()
    return answer in {"y", "yes"}


def describe(study_pack: Pack) -> list[str]:
    """What the participant is shown before anything is written: signer, detectors, data flow."""
    from modlens.study import join

    s = study_pack.study
    lines = [f"study {s.study_id!r} ({s.title})",
             f"  signed by {study_pack.signer} (compare it with the fingerprint the researcher published)"
             if study_pack.signer else "  UNSIGNED: nothing shows who made or changed this pack"]
    remote, reads = s.destinations(), s.secret_reads()
    lines.append("detectors:")
    for d in s.detectors:
        where = f"sends each comment to {', '.join(remote[d.key])}" if d.key in remote else "runs on this computer"
        secret = f"; reads your {', '.join(reads[d.key])} from this computer's environment (never logged)" \
            if d.key in reads else ""
        lines.append(f"  - {d.key} ({d.name}): {where}{secret}")
    lines.append("where your data goes: " + (", ".join(sorted(join.all_destinations(s))) + " (remote detectors), and "
                                             if remote else "") + "the study log on this computer; "
                 "nothing else is sent until you export a bundle and send it yourself")
    return lines


def run(args: argparse.Namespace) -> int:
    from modlens.runtime import read_runtime
    from modlens.study import join, pack

    try:
        study_pack = pack.read(args.pack)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    print("\n".join(describe(study_pack)), flush=True)
    if study_pack.signer is None and not args.allow_unsigned and not _ask("Join this unsigned pack anyway?"):
        raise CliError(f"{args.pack}: unsigned pack refused; anyone could have made or changed it",
                       fix="ask the researcher for a signed pack, or pass --allow-unsigned if you trust its source")
    destinations = sorted(join.all_destinations(study_pack.study))
    accepted = destinations if destinations and (args.accept_remote or _ask("Send comments to these places?")) else []
    config = join.join(study_pack, str(Path(args.pack).resolve()), replace=args.replace, accepted_remote=accepted)
    s = study_pack.study
    print(f"joined study {s.study_id!r} ({s.title}); its configuration is in {config}")
    if accepted:
        print(f"remote detectors on: comments go to {', '.join(accepted)}")
    elif destinations:
        print(f"remote detectors stay off (nothing is sent to {', '.join(destinations)}); to allow them: "
              f"modlens join {args.pack} --accept-remote")
    print("next:")
    running = read_runtime()
    if running is not None:  # serve reads the study once, at start: it goes on with the one it started on
        print(f"  1. a `modlens serve` is running (pid {running.get('pid')}) on study {running.get('study_id')!r}, "
              f"and keeps serving the study it started with: stop it and start `modlens serve` again (it then "
              f"uses {config})")
    else:
        print(f"  1. modlens serve     (leave it running; it uses {config})")
    first = f" {s.tasks[0].url}" if s.tasks else ""  # without a URL browse opens the study's task list
    print(f"  2. modlens browse{first}     (in a second terminal; read and accept the consent text)")
    if study_pack.itemset is not None:
        print(f"  your share of the study's {len(study_pack.itemset['items'])} comments (item set) is on the task "
              "list `modlens browse` opens")
    if s.tasks:
        print("study pages to visit:" + ("" if s.free_browsing else " (comments are collected on these pages only)"))
        for t in s.tasks:
            print(f"  - {t.url}" + (f"  — {t.title}" if t.title else "") + (f"  (rate {t.target} comments)" if t.target else ""))
    print("  3. when done: modlens export --bundle my-study.bundle --show, then without --show, and send the file")
    return 0
