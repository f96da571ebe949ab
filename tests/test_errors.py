"""One error type with `.fix` (`modlens.errors`): no message carries its fix inline, and the CLI
prints any subclass's fix as its `fix:` line with the exit code of its kind."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from modlens.cli import COMMAND_REGISTRY, main
from modlens.errors import ErrorKind, ModlensError, Problem, inline_fix, problem_lines, with_fix

ROOT = Path(__file__).resolve().parents[1]
# a fix written into a message: "…; fix: …", "… (fix: …)", "… — fix: …", "…. fix: …", or a fix text
# kept to be pasted into one ("fix: …"). "  fix: …" (a line of its own under a message) is fine.
INLINE_FIX = re.compile(r"^fix:|[—;(.,]\s*fix:")
# the one place that writes a fix inline (where message and fix become one line of other text)
RENDERER = (Path("src/modlens/errors.py"), inline_fix.__name__)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes: a string that is the first statement of a module, class
    or function body (documentation, not a message)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _string_texts(tree: ast.AST, skip: str | None = None) -> list[tuple[int, str]]:
    """Every string literal's text but docstrings, f-strings with their fields as `{}` (implicitly
    joined literals are one node, so a message wrapped over lines is read whole). `skip`: the
    name of a function whose strings are left out."""
    left_out = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # its pieces are read as part of the whole
            left_out |= {id(n) for n in ast.walk(node) if n is not node}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == skip:
            left_out |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in left_out:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            out.append((node.lineno, str(text)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    return out


def _inline_fixes(source: str, skip: str | None = None) -> list[int]:
    return sorted({line for line, text in _string_texts(ast.parse(source), skip) if INLINE_FIX.search(text)})


def test_no_message_carries_its_fix_inline():
    found = []
    for path in sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "daemon").rglob("*.py")]):
        rel = path.relative_to(ROOT)
        skip = RENDERER[1] if rel == RENDERER[0] else None
        found += [f"{rel}:{line}" for line in _inline_fixes(path.read_text(encoding="utf-8"), skip)]
    assert not found, ("pass the fix as fix= (or a Problem; `errors.inline_fix` where it must join other text), "
                       f"not inline: {found}")


def test_the_scan_finds_each_inline_form_and_skips_docstrings():
    source = '''"""A module: a docstring may say "message; fix: remedy"."""
def f(path, fix):
    """Raises ValueError("x; fix: y") (documentation)."""
    a = f"{path}: bad; fix: {fix}"
    b = "bad (fix: use b)"
    c = ("bad — "
         "fix: use c")
    d = "bad. fix: use d"
    e = "fix: use e"
    g = f"{path}: bad\\n  fix: {fix}"
    return [a, b, c, d, e, g, "not a docstring; fix: it is an expression after the first"]
'''
    assert _inline_fixes(source) == [4, 5, 6, 8, 9, 11]
    assert _inline_fixes("def inline_fix(m, f):\n    return f'{m}; fix: {f}'\n", skip="inline_fix") == []


def test_inline_fix_joins_a_message_and_its_fix_in_one_place():
    assert inline_fix("no nltk", "pip install nltk") == "no nltk; fix: pip install nltk"
    assert inline_fix("no nltk", None) == inline_fix("no nltk", "") == "no nltk"
    assert with_fix(ModlensError("no nltk", "pip install nltk")) == "no nltk; fix: pip install nltk"


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
