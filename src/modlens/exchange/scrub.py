"""What a bundle must not carry out of the participant's computer: its paths, home folder, user name
and host name, wherever older logs wrote them into free-text fields (detector and study
configurations, error messages, run paths).

Detectors now record files by package-relative name and hash (`paths.portable`); a log written
before that, or a message that quoted a path, still holds `/home/<name>/…`. Bundle export passes
every free-text column through `scrub_tables`: each text column but those the table description
carries verbatim (`Travel.verbatim` in studylog/tables.py: the study's data, such as comment texts,
page URLs and titles, keys and the rater's answers, and timestamps), which are shown, never
rewritten, by `export --bundle --show`.
"""
from __future__ import annotations

import getpass
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from modlens.paths import portable
from modlens.studylog.tables import TABLE

# names too common to be anyone's identity, and which configurations use as plain words
_GENERIC = {"root", "user", "users", "home", "admin", "localhost", "runner", "ubuntu", "debian", "app"}
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]*")
# /a/b…, ~/a…, C:\a\… not inside a word or a URL; at least two levels, so "a/b" ratios and "/" are left
_POSIX_PATH = re.compile(r"(?<![\w/.:~-])(?:~|/[^\s\"'<>|;,()\[\]{}/]+)(?:/[^\s\"'<>|;,()\[\]{}/]*)+")
_WINDOWS_PATH = re.compile(r"(?<![\w])[A-Za-z]:(?:\\\\|\\)(?:[^\s\"'<>|;,()\[\]{}\\]+(?:\\\\|\\)?)+")


@dataclass(frozen=True)
class Traces:
    """This computer's identifying strings: home folders (as written and resolved), names."""
    homes: tuple[str, ...]
    names: tuple[str, ...]   # user and host names


def machine_traces() -> Traces:
    homes: set[str] = set()
    for home in (os.environ.get("HOME"), str(Path.home())):
        if home and home not in ("/", ""):
            homes.add(home.rstrip("/"))
            try:
                homes.add(str(Path(home).resolve()))
            except OSError:
                pass
    names: set[str] = set()
    getters: list[Callable[[], str | None]] = [
        getpass.getuser, lambda: os.environ.get("USER"), lambda: os.environ.get("LOGNAME"),
        socket.gethostname, lambda: os.uname().nodename]  # not getfqdn: it may wait on DNS
    for get in getters:
        try:
            value = get()
        except (OSError, KeyError, ImportError):  # getuser: no name for this uid
            value = None
        if value:
            names.add(value)
            names.add(value.split(".")[0])  # the short host name
    names.update(Path(h).name for h in homes)  # /home/<name>
    kept = {n for n in names if len(n) >= 3 and n.lower() not in _GENERIC}
    return Traces(tuple(sorted(homes, key=len, reverse=True)), tuple(sorted(kept, key=len, reverse=True)))


def _path_token(match: re.Match[str]) -> str:
    token = match.group(0)
    windows = "\\" in token
    name = re.split(r"[\\/]+", token.rstrip("\\/"))[-1] if windows else None
    return (name or "<path>") if windows else portable(token)


def scrub_text(value: str, traces: Traces) -> str:
    """`value` with paths made portable (outside URLs), then home folders, user and host names replaced."""
    if not value:
        return value
    pieces: list[str] = []
    last = 0
    for url in _URL.finditer(value):  # a URL's path is the server's, not this computer's
        pieces.append(_scrub_paths(value[last:url.start()]))
        pieces.append(url.group(0))
        last = url.end()
    pieces.append(_scrub_paths(value[last:]))
    out = "".join(pieces)
    for home in traces.homes:
        out = out.replace(home, "~")
    for name in traces.names:
        for form in {name, json.dumps(name)[1:-1]}:  # as written, and as JSON escaped it
            out = re.sub(rf"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])", "<name>", out, flags=re.I)
    return out


def _scrub_paths(text: str) -> str:
    return _WINDOWS_PATH.sub(_path_token, _POSIX_PATH.sub(_path_token, text))


def scrubbed_column(table: str, column: str, kind: str) -> bool:
    """Whether bundle export rewrites this column: a text column the table description does not carry
    verbatim (so also any text column of a table or column this modlens does not know)."""
    travel = TABLE[table].travel if table in TABLE else None
    return kind == "str" and (travel is None or column not in travel.verbatim)


def scrub_tables(tables: dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]],
                 traces: Traces | None = None) -> dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]]:
    """The tables ({name: (columns, rows)}) with every scrubbed column passed through `scrub_text`."""
    traces = traces or machine_traces()
    out = {}
    for name, (columns, rows) in tables.items():
        which = [i for i, (col, kind) in enumerate(columns) if scrubbed_column(name, col, kind)]
        if which and rows:
            rows = [_scrub_row(row, which, traces) for row in rows]
        out[name] = (columns, rows)
    return out


def _scrub_row(row: Sequence[Any], which: list[int], traces: Traces) -> tuple[Any, ...]:
    values = list(row)
    for i in which:
        if isinstance(values[i], str):
            values[i] = scrub_text(values[i], traces)
    return tuple(values)
