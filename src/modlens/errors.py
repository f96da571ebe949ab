"""The one error type a user can act on. `ModlensError` carries what went wrong (`message`), what to
do about it (`fix`, when there is one) and the kind of problem (`kind`, which the CLI turns into its
exit code). Every error class that has a fix subclasses it, so the CLI prints any of them the same
way: `modlens <command>: <message>`, then `  fix: <fix>` (`modlens.cli.common.print_error`).

A message never carries its fix inline: a check that finds several problems at once returns
`Problem` records, rendered by `problem_lines`. The files modlens writes with a `format` and
`format_version` have their kind and version checked by `format_problem` / `check_format`."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterable, cast


class ErrorKind(enum.Enum):
    FAILED = "failed"                 # the command ran and could not finish (download, daemon refused, nothing loaded)
    USAGE = "usage"                   # wrong flags, values, names or input contents
    NOT_FOUND = "not found"           # a file, folder or study log the command needs does not exist
    UNREACHABLE = "unreachable"       # no daemon answers at the address


class ModlensError(Exception):
    """A problem the user can act on. A subclass sets its usual `kind` as a class attribute; one
    raise may override it (`kind=`). Subclasses that callers catch as a built-in type also derive
    from it (`class StudyConfigError(ModlensError, ValueError)`)."""

    kind: ErrorKind = ErrorKind.USAGE
    fix: str | None    # a subclass whose errors always have one narrows it to `str`

    def __init__(self, message: str, fix: str | None = None, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Problem:
    """One of several problems a check found (a study folder, a validation summary): what is wrong
    and how to fix it, kept apart until `problem_lines` renders them."""
    message: str
    fix: str | None = None

    def where(self, suffix: str) -> Problem:
        """The same problem with `suffix` (e.g. " (in study.toml)") after its message."""
        return Problem(self.message + suffix, self.fix)


def problem_lines(problems: Iterable[Problem], indent: str = "  ") -> str:
    """Problems as lines under a heading: each message, its fix on the next line below it."""
    lines = []
    for p in problems:
        lines.append(f"{indent}{p.message}")
        if p.fix:
            lines.append(f"{indent}  fix: {p.fix}")
    return "\n".join(lines)


def inline_fix(message: str, fix: str | None) -> str:
    """A message and its fix where they become one line of other text (a detector's status line,
    the reason a perturbation part cannot run): `message; fix: fix`, or the message alone. The one
    place a fix is written inline; the code that has the two keeps them apart until here."""
    return f"{message}; fix: {fix}" if fix else message


def with_fix(err: BaseException) -> str:
    """An error where it becomes part of other text (a protocol answer, one refusal in a list, a
    log line): its message, then its fix on the same line (`inline_fix`)."""
    if isinstance(err, ModlensError):
        return inline_fix(err.message, err.fix)
    return str(err)


UPGRADE = "upgrade modlens (`pip install -U modlens`)"


def format_problem(data: object, *, name: str, what: str, fmt: str, reads: range, fix: str) -> Problem | None:
    """What is wrong with the `format` and `format_version` of a file modlens wrote (a study pack,
    a bundle's manifest, an item set, an assignment), or None when this modlens reads it. Every
    such file is checked here, so each says the same three things the same way: not this kind of
    file (`format` is not `fmt`, or `format_version` is missing or not a version number); written
    by a newer modlens (above `reads`: upgrade); or a version this modlens no longer reads (below
    `reads`). `name` says where the data came from, `what` names the kind ("modlens study pack"),
    `fix` is how to get a file this modlens reads (for every case but the newer one)."""
    if not isinstance(data, dict):
        return Problem(f"{name}: not a {what} (not a JSON object)", fix)
    if data.get("format") != fmt:
        return Problem(f"{name}: not a {what} (format is {data.get('format')!r}, not {fmt!r})", fix)
    version = data.get("format_version")
    if version is None:
        return Problem(f"{name}: not a {what} (it has no format_version)", fix)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return Problem(f"{name}: not a {what} (format_version {version!r} is not a version number)", fix)
    readable = f"version {reads[0]}" if len(reads) == 1 else f"versions {reads[0]} to {reads[-1]}"
    if version > reads[-1]:
        return Problem(f"{name}: {what} format_version {version} is newer than this modlens reads ({readable}): "
                       "a newer modlens wrote it", UPGRADE)
    if version < reads[0]:
        return Problem(f"{name}: {what} format_version {version} is older than this modlens reads ({readable}): "
                       "this modlens no longer reads it", fix)
    return None


def check_format(data: object, *, name: str, what: str, fmt: str, reads: range, fix: str,
                 error: type[ModlensError]) -> dict[str, Any]:
    """`data`, once `format_problem` finds nothing wrong with it, for a reader that stops at the
    first problem: a problem is raised as the caller's `error` (its message and fix), so the
    caller's own error type is what its callers catch."""
    problem = format_problem(data, name=name, what=what, fmt=fmt, reads=reads, fix=fix)
    if problem is not None:
        raise error(problem.message, problem.fix)
    return cast("dict[str, Any]", data)  # format_problem refuses anything but a JSON object
