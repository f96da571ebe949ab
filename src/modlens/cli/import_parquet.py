"""load the Parquet shards of `modlens audit --out-parquet DIR` into the study log"""
from __future__ import annotations

import argparse
import json

from modlens.cli.common import CliError, add_db_option, db_path
from modlens.errors import ErrorKind


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="the folder `modlens audit --engine ray --out-parquet DIR` wrote")
    add_db_option(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from modlens.chunks.parquet import import_parquet
    from modlens.services.errors import SetupError
    from modlens.studylog.connection import StudyLogError

    if not Path(args.folder).exists():
        raise CliError(f"{args.folder}: no such folder", kind=ErrorKind.NOT_FOUND,
                       fix="give the folder `modlens audit --out-parquet DIR` wrote")
    if not Path(args.folder).is_dir():  # usage, exit 2: the path is there, but is a file
        raise CliError(f"{args.folder}: a file, not a folder", fix="give the folder `modlens audit --out-parquet DIR` wrote")
    try:
        counts = import_parquet(args.folder, db_path(args))
    except SetupError as err:  # a folder that is not what `--out-parquet` writes (ShardError): usage, exit 2
        raise CliError(str(err), fix=getattr(err, "fix", None)) from None
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED, fix=getattr(err, "fix", None)) from None
    print(json.dumps(counts, indent=2))
    return 0
