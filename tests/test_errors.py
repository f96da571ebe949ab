"""One error type with `.fix` (`modlens.errors`): no message carries its fix inline, and the CLI
prints any subclass's fix as its `fix:` line with the exit code of its kind."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from modlens.cli import COMMAND_REGISTRY, main
from modlens.errors import ErrorKind, ModlensError, Problem, problem_lines

ROOT = Path(__file__).resolve().parents[1]
INLINE_FIX = "— fix:"


def _string_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal's text, f-strings with their fields as `{}` (implicitly joined
    literals are one node, so a message wrapped over lines is read whole)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            out.append((node.lineno, str(text)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    return out


def test_no_message_carries_its_fix_inline():
    found = []
    for path in sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "daemon").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(ROOT)}:{line}" for line, text in _string_texts(tree) if INLINE_FIX in text]
    found = sorted(set(found))
    assert not found, f"pass the fix as fix= (or a Problem), not inline {INLINE_FIX!r}: {found}"


class _Gone(ModlensError):
    kind = ErrorKind.NOT_FOUND


def _raise_gone(args: object) -> int:
    raise _Gone("weights.bin: not there", fix="run `modlens data fetch weights`")


def test_the_cli_prints_a_subclass_fix_with_its_kind_exit_code(monkeypatch, capsys):
    import modlens.cli.normalize as command

    monkeypatch.setattr(command, "run", _raise_gone)
    assert "normalize" in COMMAND_REGISTRY
    assert main(["normalize", "x"]) == 3
    assert capsys.readouterr().err == "modlens normalize: weights.bin: not there\n  fix: run `modlens data fetch weights`\n"


def test_one_raise_may_override_the_kind_and_built_in_bases_still_catch():
    class Refused(ModlensError, ValueError):
        pass

    with pytest.raises(ValueError) as err:
        raise Refused("no", kind=ErrorKind.FAILED)
    assert err.value.kind is ErrorKind.FAILED and err.value.fix is None and str(err.value) == "no"
    assert Refused("no").kind is ErrorKind.USAGE


def test_problems_render_each_fix_on_its_own_line():
    text = problem_lines([Problem("a: bad", "use b"), Problem("c: worse").where(" (in study.toml)")])
    assert text == "  a: bad\n    fix: use b\n  c: worse (in study.toml)"
