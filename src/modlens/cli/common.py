"""What every `modlens` subcommand shares: one error type with one exit code per kind, and the
options several commands take (study, detectors, strategies, perturbation settings, study log,
attack limits, daemon address), each under one name everywhere (docs/CLI.md). A renamed flag
keeps its old name for one release as a deprecated alias that says so on stderr.

A command raises `CliError` or lets any `modlens.errors.ModlensError` through; `modlens.cli.main`
prints it once, as `modlens <command>: <message>` plus a `fix:` line when there is one, and exits
with its kind's code (README, "Exit codes").
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterator, Sequence, TextIO

from modlens import paths
from modlens.errors import ErrorKind, ModlensError

if TYPE_CHECKING:
    from modlens.audit.run import AuditResult
    from modlens.config import StudyConfig
    from modlens.names import Registry


EXIT_CODES: dict[ErrorKind, int] = {
    ErrorKind.FAILED: 1,
    ErrorKind.USAGE: 2,               # argparse's own code for bad flags, so all usage errors agree
    ErrorKind.NOT_FOUND: 3,
    ErrorKind.UNREACHABLE: 4,
}
EXIT_OK, EXIT_INTERRUPTED = 0, 130


class CliError(ModlensError):
    """An error a command raises itself (a bad flag value, a combination it refuses); any other
    `ModlensError` reaching `modlens.cli.main` is printed the same way."""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]


def print_error(command: str, err: ModlensError, stream: TextIO | None = None) -> int:
    """The one way errors are shown: the message, its fix on its own line; returns the exit code
    of its kind (README, "Exit codes")."""
    stream = stream or sys.stderr
    print(f"modlens {command}: {err.message}", file=stream)
    if err.fix:
        print(f"  fix: {err.fix}", file=stream)
    return EXIT_CODES[err.kind]


# --- renamed flags ------------------------------------------------------------------------------
class DeprecatedAlias(argparse.Action):
    """An old flag name kept for one release: does what the new one does (`mode`: store,
    append or extend into the same dest) and prints a one-line note on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, mode: str = "store",
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.mode = new, mode

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"modlens: {option_string} is deprecated and goes away in the next release; use {self.new}",
              file=sys.stderr)
        if self.mode == "store":
            setattr(namespace, self.dest, values)
            return
        items = list(getattr(namespace, self.dest, None) or [])
        items += list(values) if self.mode == "extend" else [values]
        setattr(namespace, self.dest, items)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, *, dest: str,
                         mode: str = "store", **kwargs: Any) -> None:
    """`old` as a hidden alias of `new` (same dest, type and nargs: pass them in `kwargs`)."""
    parser.add_argument(old, dest=dest, action=DeprecatedAlias, new=new, mode=mode, help=argparse.SUPPRESS,
                        default=argparse.SUPPRESS, **kwargs)


# --- unknown names -------------------------------------------------------------------------------
def registry_name(registry: Registry[Any]) -> Callable[[str], str]:
    """An argparse `type=` accepting the names `registry` knows, installed plug-ins included (a
    `choices=` list would freeze the plug-ins of the machine that built the parser into the help
    and docs/CLI.md); an unknown one is argparse's usage error with the close matches."""
    def name(value: str) -> str:
        from modlens.names import UnknownName

        try:
            registry.check([value])
        except UnknownName as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return value
    name.__name__ = registry.what
    return name


def check_strategies(keys: Sequence[str] | None, flag: str = "--strategy/--strategies") -> None:
    """Unknown strategy keys are a usage error naming the close matches."""
    from modlens.names import UnknownName
    from modlens.perturb import registry

    try:
        registry.check(list(keys or []))
    except UnknownName as err:
        raise CliError(f"{flag}: {err.message}", fix=err.fix) from None


def detector_configs(specs: Sequence[str], study: StudyConfig | None = None) -> list[Any]:
    """`--detectors` specs -> DetectorConfigs; an unknown name is a usage error with the close matches."""
    from modlens.services.detectors import DetectorSpecError
    from modlens.services.detectors import detector_configs as parse

    try:
        return parse(specs, study)
    except DetectorSpecError as err:
        raise CliError(str(err), fix=err.fix) from None


# --- study --------------------------------------------------------------------------------------
def add_study_option(parser: argparse.ArgumentParser, *flags: str) -> None:
    """`--config` / `--study` (both spellings; the attribute is named after the first flag)."""
    parser.add_argument(*(flags or ("--config", "--study")), metavar="STUDY.toml",
                        help="study configuration: detectors, normalizer, perturbation settings "
                             "(default: embedded defaults)")


# --- detectors ----------------------------------------------------------------------------------
def add_detectors_option(parser: argparse.ArgumentParser, *, dest: str = "detectors",
                         default: str = "the study's detectors",
                         keys: str = "registry names or study-file detector keys") -> None:
    """`--detectors A B …` and `--detector A` (repeatable) fill the same list."""
    parser.add_argument("--detectors", dest=dest, nargs="+", action="extend", metavar="KEY",
                        help=f"detectors to load: {keys} (default: {default})")
    parser.add_argument("--detector", dest=dest, action="append", metavar="KEY",
                        help="one detector (repeatable); adds to --detectors")


# --- perturbation -------------------------------------------------------------------------------
def add_strategies_option(parser: argparse.ArgumentParser, *, default: str = "the study's",
                          what: str = "perturbation strategies") -> None:
    """`--strategies A B …` and `--strategy A` (repeatable) fill `args.strategies`."""
    parser.add_argument("--strategies", dest="strategies", nargs="+", action="extend", metavar="KEY",
                        help=f"{what} (registry keys, docs/PERTURB.md; default: {default})")
    parser.add_argument("--strategy", dest="strategies", action="append", metavar="KEY",
                        help="one strategy (repeatable); adds to --strategies")


def add_perturbation_options(parser: argparse.ArgumentParser) -> None:
    """The generator's settings, overriding the study's `[perturbation]` table."""
    parser.add_argument("--budget", type=int, metavar="N", help="variants per text (default: the study's, 3)")
    parser.add_argument("--seed", type=int, help="random seed of variants and attacks (default: the study's, 0)")
    parser.add_argument("--threshold", type=float, metavar="T",
                        help="word importance a word needs to be perturbed (default: the study's, 0.1)")


def with_perturbation_options(study: StudyConfig, args: argparse.Namespace) -> StudyConfig:
    """The study with `--budget/--seed/--threshold` (and `--strategies` when given) applied,
    validated like the study file (a bad value is a usage error)."""
    from pydantic import ValidationError

    update: dict[str, Any] = {}
    for flag, key in (("budget", "budget"), ("seed", "seed"), ("threshold", "importance_threshold")):
        if getattr(args, flag, None) is not None:
            update[key] = getattr(args, flag)
    if getattr(args, "strategies", None):
        check_strategies(args.strategies)
        update["strategies"] = list(dict.fromkeys(args.strategies))
    if not update:
        return study
    try:
        perturbation = type(study.perturbation).model_validate({**study.perturbation.model_dump(), **update})
    except ValidationError as err:
        e = err.errors()[0]
        flag = {"importance_threshold": "threshold"}.get(str(e["loc"][0]), str(e["loc"][0]))
        raise CliError(f"--{flag}: {e['msg']}") from None
    return study.model_copy(update={"perturbation": perturbation})


# --- study log ----------------------------------------------------------------------------------
def add_db_option(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    parser.add_argument("--db", metavar="PATH",
                        help=help or "study log (default: the one `modlens serve` uses, "
                                     "study.sqlite in $MODLENS_HOME or ~/.local/share/modlens)")


def db_path(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else paths.default_db()


def study_log_error(err: Exception, db: Path) -> CliError:
    """A study log that cannot be read: not found when the file is absent, else failed."""
    fix = err.fix if isinstance(err, ModlensError) else None
    return CliError(str(err), kind=ErrorKind.FAILED if db.exists() else ErrorKind.NOT_FOUND, fix=fix)


# --- audits -------------------------------------------------------------------------------------
def print_audit_warnings(command: str, result: AuditResult) -> None:
    """What an audit (`modlens audit`, `modlens attack DATASET`) says on stderr beside its JSON
    summary: each detector not used and why, and each warning of `result` (an `AuditResult`): a
    detector whose scores include errors, a declared data set's edited rows."""
    for key, why in result.unavailable.items():
        print(f"modlens {command}: detector {key} not used: {why}", file=sys.stderr)
    for warning in result.warnings:
        print(f"modlens {command}: {warning}", file=sys.stderr)


def fail_on_score_errors(score_errors: dict[str, dict[str, Any]], what: str = "texts",
                         step_errors: dict[str, dict[str, Any]] | None = None) -> None:
    """After the summary is out: exit 1 (failed) when some score the command asked for is an error (a
    detector's call raised, a text it had no answer for), naming per detector how many of the `what`
    (texts; `fuse --score`: case parts) it scored, as `modlens score` does (`cli.score.fail_on_no_score`),
    or when a step the audit asked for (normalize, variants) failed for some texts, naming per step how
    many. Exit 0 would say every score, normalized form and variant was made. `score_errors`: per detector
    key {"scores", "errors"} (`AuditResult.score_errors`); `step_errors`: per step {"component", "errors"}
    (`AuditResult.step_errors`: a resumed audit's whole run, "earlier" those only an earlier attempt met);
    the warning line per detector or step (`audit.run.error_warnings`,
    `step_error_warnings`) says its first error and what tries them again."""
    failed = [f"detector {key} gave no score for {t['errors']} of the {t['scores']} {what} it scored"
              for key, t in score_errors.items() if t["errors"]]
    # a resumed audit: those the items an earlier attempt finished still have (`audit.run.with_earlier_errors`)
    failed += [f"detector {key}: {t['earlier']} of the {what} an earlier attempt of the run scored "
               f"{'has' if t['earlier'] == 1 else 'have'} no score" for key, t in score_errors.items() if t.get("earlier")]
    failed += [f"step {step} ({t['component']}) failed for {t['errors']} text{'s' * (t['errors'] != 1)}"
               + (f" ({t['earlier']} in an earlier attempt of the run)" if t.get("earlier") else "")
               for step, t in (step_errors or {}).items() if t["errors"]]
    if failed:
        raise CliError("; ".join(failed), kind=ErrorKind.FAILED,
                       fix="the rest is written; the line per detector or step above says its first error and what "
                           "tries them again")


def fail_on_unknown_attacks(attacks: dict[str, dict[str, int]],
                            fix: str = "the rest is written; the line per target above says why, and what running "
                                       "the same command again can tell") -> None:
    """After the summary is out (and `fail_on_score_errors`): exit 1 (failed) when some attack run has
    an unknown result (`AuditResult.attacks`' "unknown": the target or a judge had no score for a text
    the attack sent, a score never logged, so `score_errors` cannot say it). Exit 0 would say each
    attack's success, failure or skip is what the target and judges answered. `fix`: what the command
    printed that says why (`perturb --attack` and `attack --text`: each line's reason)."""
    unknown = {key: c["unknown"] for key, c in attacks.items() if c.get("unknown")}
    if unknown:
        raise CliError("; ".join(f"{n} attack{'s' * (n != 1)} on target {key} {'has' if n == 1 else 'have'} "
                                 "an unknown result" for key, n in unknown.items()), kind=ErrorKind.FAILED, fix=fix)


# --- attacks ------------------------------------------------------------------------------------
# what the attack limits default to, said the same way by every command that takes them
DEFAULT_QUERIES_HELP = ("target queries per seed (default: 200 for the character attack; with --recipe, the recipe's "
                        "own, see `modlens attack --list`)")
DEFAULT_EDIT_HELP = ("max share of words edited (default: 0.25 for the character attack; with --recipe, the recipe's "
                     "own limit, see `modlens attack --list`: none for DeepWordBug, TextBugger, PWWS, TextFooler)")


def add_attack_limit_options(parser: argparse.ArgumentParser, *, queries_dest: str = "query_budget",
                             edit_ratio_dest: str = "max_edit_ratio", recipes: bool = True) -> None:
    """The attack's limits, named as the log records them (`max_queries`, `max_edit_fraction`);
    audit's old names stay as deprecated aliases. Unset (None) means the attack's own limits,
    resolved when it is built (`modlens.audit.attacks.attack_limits`), so `audit --attack
    --recipe X` and `attack --recipe X` run X alike. `recipes=False`: a command whose attack is
    the character attack only (the help then names its defaults alone). Their ranges are checked
    by the attack itself, whose error names the limit."""
    queries_help, edit_help = ((DEFAULT_QUERIES_HELP, DEFAULT_EDIT_HELP) if recipes else
                               ("target queries per seed (default: 200)", "max share of words edited (default: 0.25)"))
    parser.add_argument("--max-queries", dest=queries_dest, type=int, metavar="N", help=f"attack: {queries_help}")
    parser.add_argument("--max-edit-fraction", dest=edit_ratio_dest, type=float, metavar="R",
                        help=f"attack: {edit_help}")
    add_deprecated_alias(parser, "--query-budget", "--max-queries", dest=queries_dest, type=int, metavar="N")
    add_deprecated_alias(parser, "--max-edit-ratio", "--max-edit-fraction", dest=edit_ratio_dest, type=float,
                         metavar="R")


# --- data files ---------------------------------------------------------------------------------
def utf8_lines(stream: BinaryIO, name: str, before: str) -> Iterator[str]:
    """The non-blank lines of a byte stream (a file, or stdin's buffer), decoded as UTF-8 line by
    line (a byte-order mark allowed at the start): a line that is not UTF-8 stops the command with
    its number. A text stream would fail on the whole buffer, or, as Python's stdin does, turn the
    bytes into other characters that then get processed, unsaid. `before`: what became of the
    lines before it ("were normalized")."""
    for n, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if n == 1 else "utf-8").rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise CliError(f"{name}: line {n} is not UTF-8 text (byte 0x{raw[err.start]:02x} at byte "
                           f"{err.start + 1} of the line); the lines before it {before}",
                           fix="convert it to UTF-8 (e.g. iconv -f cp1252 -t utf-8 FILE > FILE.utf8)") from None
        if line.strip():
            yield line


def add_encoding_option(parser: argparse.ArgumentParser) -> None:
    """`--encoding NAME` of the dataset readers (`modlens.datasets.base.text_format`): audit, attack, feed, rate."""
    parser.add_argument("--encoding", metavar="NAME",
                        help="csv/tsv/jsonl: the file's encoding when it has no byte-order mark and is not UTF-8, e.g. "
                             "cp1252 (Excel on Windows) or latin-1 (default: the mark's, else UTF-8)")


# --- daemon -------------------------------------------------------------------------------------
def add_daemon_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--daemon", metavar="WS_URL",
                        help="daemon address (default: the running `modlens serve`'s, else ws://127.0.0.1:8765/ws)")
