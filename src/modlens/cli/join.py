"""join a study: configure this computer's daemon from the researcher's study.modlens

Verifies the pack (format, version, checksum, study), writes its study configuration into the
modlens home folder, and prints what to run next. Switching to another study needs --replace.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from modlens.cli.common import CliError, ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pack", metavar="STUDY.modlens", help="the study pack the researcher sent")
    parser.add_argument("--replace", action="store_true", help="leave the study joined before and join this one")


def run(args: argparse.Namespace) -> int:
    from modlens.study import join, pack

    try:
        study_pack = pack.read(args.pack)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    except pack.PackError as err:
        raise CliError(str(err)) from None
    try:
        config = join.join(study_pack, str(Path(args.pack).resolve()), replace=args.replace)
    except join.JoinError as err:
        raise CliError(str(err)) from None
    s = study_pack.study
    print(f"joined study {s.study_id!r} ({s.title}); its configuration is in {config}")
    print("next:")
    print(f"  1. modlens serve     (leave it running; it uses {config})")
    first = s.tasks[0].url if s.tasks else "URL"
    print(f"  2. modlens browse {first}     (in a second terminal; read and accept the consent text)")
    if s.tasks:
        print("study pages to visit:" + ("" if s.free_browsing else " (comments are collected on these pages only)"))
        for t in s.tasks:
            print(f"  - {t.url}" + (f"  — {t.title}" if t.title else "") + (f"  (rate {t.target} comments)" if t.target else ""))
    print("  3. when done: modlens export --bundle my-study.bundle --show, then without --show, and send the file")
    return 0
