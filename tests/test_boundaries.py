"""The engine (src/modlens/) never imports the daemon (daemon/, installed as modlens.daemon),
except `modlens.cli.serve`, which starts it. The daemon may import the engine."""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "src" / "modlens"
DAEMON = "modlens.daemon"
ALLOWED = {"modlens.cli.serve"}


def module_name(path: Path, engine: Path = ENGINE) -> str:
    parts = path.relative_to(engine.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, engine: Path = ENGINE) -> set[str]:
    """Every module an `import` or `from … import` names, relative imports resolved; for
    `from pkg import name` both `pkg` and `pkg.name` (name may be a submodule)."""
    name = module_name(path, engine)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_only_serve_imports_the_daemon():
    offenders = {}
    for path in sorted(ENGINE.rglob("*.py")):
        name = module_name(path)
        daemon_imports = sorted(m for m in imported_modules(path) if m == DAEMON or m.startswith(DAEMON + "."))
        if daemon_imports and name not in ALLOWED:
            offenders[name] = daemon_imports
    assert not offenders, f"engine modules importing the daemon (only {ALLOWED} may): {offenders}"


def test_the_scan_sees_every_import_form(tmp_path):
    pkg = tmp_path / "src" / "modlens"
    (pkg / "cli").mkdir(parents=True)
    samples = {"import modlens.daemon.app": "modlens.daemon.app",
               "from modlens import daemon": "modlens.daemon",
               "from modlens.daemon.protocol import X": "modlens.daemon.protocol",
               "from ..daemon import app": "modlens.daemon.app",
               "def f():\n    from modlens.daemon import app": "modlens.daemon.app"}
    for source, expected in samples.items():
        (pkg / "cli" / "x.py").write_text(source + "\n")
        assert expected in imported_modules(pkg / "cli" / "x.py", pkg), source
