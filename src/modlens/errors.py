"""The one error type a user can act on. `ModlensError` carries what went wrong (`message`), what to
do about it (`fix`, when there is one) and the kind of problem (`kind`, which the CLI turns into its
exit code). Every error class that has a fix subclasses it, so the CLI prints any of them the same
way: `modlens <command>: <message>`, then `  fix: <fix>` (`modlens.cli.common.print_error`).

A message never carries its fix inline: a check that finds several problems at once returns
`Problem` records, rendered by `problem_lines`."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable


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
