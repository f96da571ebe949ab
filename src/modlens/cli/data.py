"""list the datasets modlens knows, or download their full public versions

`modlens data list [--json]` shows each dataset: what it is, where it is here (in $MODLENS_DATA,
fetched, shipped with modlens, or not present), its size, licence and citation. A folder whose
files are all there is checked by their bytes: a file whose SHA-256 is not the one its fetch
recorded (SHA256SUMS), else the catalog's pin, or one that cannot be read, makes it "changed",
naming the file and why.
`modlens data fetch NAME … [--dest DIR]` downloads into the fetched-data folder, where the dataset
shorthands (`modlens audit hatecheck`, …) find it before the shipped copies. Exit status: 2 for
a wrong name or option, 1 when a download fails or its checksum does not match.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from modlens import paths
from modlens.cli.common import CliError
from modlens.errors import ErrorKind
from modlens.names import UnknownName
from modlens.datasets import catalog
from modlens.datasets.catalog import MIRROR_ENV


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the known datasets: where each is, size, licence, citation")
    listing.add_argument("--json", action="store_true", help="one JSON array instead of text")
    fetch = actions.add_parser("fetch", help="download datasets (resumable, checksummed)")
    fetch.add_argument("names", nargs="+", metavar="NAME", help=f"dataset names: {', '.join(catalog.CATALOG)}")
    fetch.add_argument("--dest", metavar="DIR",
                       help="put NAME/ under DIR (default: $MODLENS_HOME/data, ~/.local/share/modlens/data, "
                            "which the dataset shorthands search)")
    fetch.add_argument("--mirror", metavar="URL",
                       help=f"fetch URL/NAME/FILE instead of the canonical addresses (also ${MIRROR_ENV})")
    fetch.add_argument("--sha256", action="append", default=[], metavar="NAME/FILE=HEX",
                       help="expected SHA-256 of a file, overriding the catalog (repeatable)")
    fetch.add_argument("--require-sha256", action="store_true",
                       help="refuse files that have neither a pinned nor a recorded checksum")
    fetch.add_argument("--force", action="store_true", help="download again even when the files are in place")
    fetch.add_argument("--quiet", action="store_true", help="no progress bar or per-file lines")


def run(args: argparse.Namespace) -> int:
    return list_datasets(args.json) if args.action == "list" else fetch_datasets(args)


# --- list ----------------------------------------------------------------------------------------
def describe(entry: catalog.DatasetEntry) -> dict[str, Any]:
    from modlens.datasets.fetch import locate

    where = locate(entry)
    shipped = paths.shipped_data() / entry.name
    return {"name": entry.name, "title": entry.title, "description": entry.description,
            "where": where.kind, "path": str(where.path) if where.path else None, "size_bytes": where.size,
            "changed_files": list(where.changed), "changed_reasons": where.changed,
            "shipped": entry.shipped, "shipped_path": str(shipped) if shipped.is_dir() else None,
            "licence": entry.licence, "licence_url": entry.licence_url, "citation": entry.citation,
            "homepage": entry.homepage, "note": entry.note or None,
            "files": [{"path": f.path, "url": f.url, "sha256": f.sha256, "git_blob": f.git_blob, "url_verified": f.verified}
                      for f in entry.files]}


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def changed_line(row: dict[str, Any], size: str) -> str:
    """A dataset folder whose files are all there, some with other bytes than their checksum says."""
    from modlens.datasets.fetch import LOCK_FILE, MISMATCH

    origin = "fetched" if row["path"] == str(paths.fetched_data() / row["name"]) else f"in ${paths.DATA_ENV}"
    reasons = row["changed_reasons"]
    differ = [f for f, why in reasons.items() if why == MISMATCH]
    verb = "does not match its checksum" if len(differ) == 1 else "do not match their checksums"
    what = ([f"{', '.join(differ)} {verb} (recorded in {LOCK_FILE} by its fetch, else pinned in the catalog)"]
            if differ else []) + [f"{f} is {why}" for f, why in reasons.items() if why != MISMATCH]
    # A plain fetch downloads only the files that differ; $MODLENS_DATA is searched before the
    # fetched-data folder, so its copy is fetched into it. A file that cannot be read stops a plain
    # fetch (it reads each file first): only --force, which reads none, replaces it.
    dest = "" if origin == "fetched" else f" --dest {shlex.quote(str(Path(row['path']).parent))}"
    fix = (f"`modlens data fetch {row['name']}{dest}` fetches it again" if len(differ) == len(reasons)
           else f"`modlens data fetch {row['name']}{dest} --force` fetches every file again")
    return f"{origin}, but {'; '.join(what)}: {row['path']} {size}; {fix}"


def list_datasets(as_json: bool) -> int:
    rows = [describe(e) for e in catalog.CATALOG.values()]
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for row in rows:
        size = f"({human_size(row['size_bytes'])})"
        where = {"shipped": f"shipped copy, {row['shipped']}: {row['path']} {size}",
                 "not present": f"not present (`modlens data fetch {row['name']}`)",
                 "partial": f"partly fetched: {row['path']} {size} (`modlens data fetch {row['name']}` resumes)",
                 "changed": changed_line(row, size) if row["where"] == "changed" else "",
                 }.get(row["where"], f"{row['where']}: {row['path']} {size}")
        pins = sum(1 for f in row["files"] if f["sha256"] or f["git_blob"])
        print(f"{row['name']} — {row['title']}: {row['description']}")
        print(f"  where:    {where}")
        if row["where"] != "shipped":
            shipped = f"{row['shipped']} in {row['shipped_path']}" if row["shipped"] else "no (fetch only)"
            print(f"  shipped:  {shipped}")
        print(f"  licence:  {row['licence']} <{row['licence_url']}>")
        print(f"  cite:     {row['citation']}")
        print(f"  source:   {row['homepage']}; {len(row['files'])} file(s), {pins} pinned (sha256, or the upstream git blob id)")
        print()
    print(f"searched in this order: {', '.join(str(d) for d in paths.data_dirs())}")
    return 0


# --- fetch ---------------------------------------------------------------------------------------
def parse_hashes(values: list[str]) -> dict[str, str]:
    hashes = {}
    for value in values:
        name, _, digest = value.partition("=")
        if not name or not re.fullmatch(r"[0-9a-fA-F]{64}", digest.strip()):
            raise ValueError(f"--sha256 {value!r}: expected NAME/FILE=HEX with 64 hex digits "
                             f"(e.g. hatecheck/test_suite_cases.csv=ecf0…)")
        hashes[name.strip()] = digest.strip().lower()
    return hashes


def fetch_datasets(args: argparse.Namespace) -> int:
    from modlens.datasets.fetch import FetchError, fetch

    try:
        entries = [catalog.get(name) for name in dict.fromkeys(args.names)]
        given = parse_hashes(args.sha256)
        files = {key for e in entries for f in e.files for key in (f"{e.name}/{f.path}", f.path)}
        if unknown := sorted(set(given) - files):
            raise ValueError(f"--sha256 names {', '.join(unknown)}, not a file of "
                             f"{', '.join(e.name for e in entries)}; files: {', '.join(sorted(k for k in files if '/' in k))}")
    except UnknownName as err:  # the catalog is short: every name, after the close matches
        raise CliError(f"{err}{' known: ' + ', '.join(err.known) if err.suggestions else ''}") from None
    except ValueError as err:
        raise CliError(str(err)) from None
    dest = Path(args.dest).expanduser() if args.dest else None
    for entry in entries:
        try:
            results = fetch(entry, dest, mirror=args.mirror, given=given, require_sha256=args.require_sha256,
                            force=args.force, quiet=args.quiet)
        except FetchError as err:
            raise CliError(str(err), kind=ErrorKind.FAILED) from None
        except NotADirectoryError:
            raise  # --dest (or a folder in it) is a file: the command line's one line, exit 2 (cli/__init__.py)
        except OSError as err:  # --dest not writable, disk full
            raise CliError(f"{entry.name}: {err}", kind=ErrorKind.FAILED) from None
        print(f"{entry.name}: {len(results)} file(s) in {(dest or paths.fetched_data()) / entry.name}")
    if dest and dest.resolve() not in {d.resolve() for d in paths.data_dirs()}:
        print(f"note: {dest} is not searched by the dataset shorthands; set {paths.DATA_ENV}={dest} to use them",
              file=sys.stderr)
    return 0
