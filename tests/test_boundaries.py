"""The layering of modlens as a table: every module belongs to one layer (by its longest prefix in
`LAYERS`), and an import never runs up the layers; no package and no module is part of an import
cycle. Lazy imports (inside functions) and `TYPE_CHECKING` imports count: a dependency deferred
is still a dependency. src/modlens/ and daemon/ (installed as modlens.daemon) are both checked.

The engine (src/modlens/) never imports the daemon, with no exception: `modlens serve` lives in the daemon
(`modlens.daemon.serve`), and the command line loads it by its name in `COMMANDS`, as it loads every command."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "src" / "modlens"
DAEMON_DIR = ROOT / "daemon"
DAEMON = "modlens.daemon"

# lowest first; a module may import its own layer and those below it. Each layer: its name, why it
# sits where it does (docs/ARCHITECTURE.md's table is generated from this), and its module prefixes.
LAYERS: list[tuple[str, str, list[str]]] = [
    ("leaves", "plain values, locations, the plain metrics and the one error type, importing nothing above them",
     ["modlens", "modlens.errors", "modlens.rows", "modlens.names", "modlens.paths", "modlens.netutil", "modlens.batcher",
      "modlens.trainingdata", "modlens.docblock", "modlens.metrics", "modlens.heap"]),
    ("storage", "files, keys and the study log's storage: know tables and bytes, not what fills them",
     ["modlens.media", "modlens.pairing", "modlens.runtime", "modlens.signing", "modlens.safe_archive",
      "modlens.studylog"]),
    ("models", "what reads text: normalizer steps, detectors, dataset readers",
     ["modlens.normalize", "modlens.detectors", "modlens.datasets"]),
    ("generators", "what makes text: perturbations, attacks, fused test cases",
     ["modlens.perturb", "modlens.fusion"]),
    ("contracts", "the study file and the wire format", ["modlens.config", "modlens.protocol"]),
    ("engine", "models + generators behind batchers, and what they record", ["modlens.engine", "modlens.services"]),
    ("analysis", "reads the log into numbers (never computes a model output)", ["modlens.analysis"]),
    ("runs", "the one chunk pipeline and the runs built on it",
     ["modlens.chunks", "modlens.audit", "modlens.scale", "modlens.perspective"]),
    ("studies", "studies as files people exchange: packs, joins, bundles, merges",
     ["modlens.study", "modlens.exchange"]),
    ("live", "the live service: a page of comments at a time through the chunk pipeline's steps, with "
     "live variants, recovery, calibration items and item sets", ["modlens.live"]),
    ("commands", "the command line", ["modlens.cli", "modlens.__main__", "modlens.extension_build"]),
    ("daemon", "the server: the transport in front of the live service", [DAEMON]),
]



def module_name(path: Path, engine: Path = ENGINE) -> str:
    if engine == ENGINE and path.is_relative_to(DAEMON_DIR):
        parts = (*DAEMON.split("."), *path.relative_to(DAEMON_DIR).with_suffix("").parts)
    else:
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


def all_modules() -> dict[str, Path]:
    files = [*ENGINE.rglob("*.py"), *DAEMON_DIR.rglob("*.py")]
    return {module_name(p): p for p in sorted(files)}


def dependencies(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modlens modules it imports (files only: `from pkg import sub` counts as `pkg.sub`,
    not as the package's `__init__`, which would make every package look like a cycle)."""
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        named = {m for m in imported_modules(path) if m in modules and m != name}
        out[name] = {m for m in named if not any(o.startswith(m + ".") for o in named)}
    return out


def layer_of(module: str) -> int:
    best, found = -1, -1
    for i, (_, _, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def package(module: str) -> str:
    """The unit a package-level cycle is counted in: the longest prefix of `LAYERS` that holds it
    (`modlens.X`, or a longer prefix listed on its own)."""
    prefixes = [p for _, _, ps in LAYERS for p in ps if module == p or module.startswith(p + ".")]
    return max(prefixes, key=len)


def test_every_module_has_a_layer():
    missing = [m for m in all_modules() if layer_of(m) < 0]
    assert not missing, f"modules in no layer of LAYERS (add their package where it belongs): {missing}"


def test_no_import_runs_up_the_layers():
    deps = dependencies(all_modules())
    upward = {f"{m} ({LAYERS[layer_of(m)][0]})": sorted(f"{d} ({LAYERS[layer_of(d)][0]})" for d in ds
                                                         if layer_of(d) > layer_of(m))
              for m, ds in deps.items()}
    upward = {k: v for k, v in upward.items() if v}
    assert not upward, f"imports that run up the layers: {upward}"


def test_no_module_cycles():
    found = cycles(dependencies(all_modules()))
    assert not found, f"modules importing each other (directly or around a loop): {found}"


def test_no_package_cycles():
    deps = dependencies(all_modules())
    graph: dict[str, set[str]] = {}
    for m, ds in deps.items():
        graph.setdefault(package(m), set()).update(package(d) for d in ds if package(d) != package(m))
    found = cycles(graph)
    assert not found, f"packages importing each other: {found}"


def test_the_engine_never_imports_the_daemon():
    offenders = {}
    for path in sorted(ENGINE.rglob("*.py")):
        daemon_imports = sorted(m for m in imported_modules(path) if m == DAEMON or m.startswith(DAEMON + "."))
        if daemon_imports:
            offenders[module_name(path)] = daemon_imports
    assert not offenders, f"engine modules importing the daemon (none may): {offenders}"


def test_the_checks_catch_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("modlens.studylog.store") < layer_of("modlens.detectors.base") < layer_of("modlens.cli.audit")
    assert layer_of("modlens.exchange.bundle") > layer_of("modlens.analysis.report") > layer_of("modlens.studylog.tables")
    assert layer_of("modlens.daemon.app") == len(LAYERS) - 1


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


ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


def render_layer_table() -> str:
    """docs/ARCHITECTURE.md's layer table, from `LAYERS` (regenerate: `python tests/test_boundaries.py`)."""
    rows = ["| # | layer | may import layers | why it sits here | modules |", "|---|---|---|---|---|"]
    for i, (name, why, prefixes) in enumerate(LAYERS):
        rows.append(f"| {i} | {name} | 0–{i} | {why} | {', '.join(f'`{p}`' for p in prefixes)} |")
    return "\n".join(rows) + "\n"


def test_architecture_doc_has_the_layer_table():
    from modlens.docblock import BLOCK
    found = BLOCK.search(ARCHITECTURE.read_text(encoding="utf-8"))
    assert found, "docs/ARCHITECTURE.md lost its generated block"
    assert found.group(2) == render_layer_table(), \
        "docs/ARCHITECTURE.md's layer table differs from LAYERS: run `python tests/test_boundaries.py`"


if __name__ == "__main__":
    from modlens.docblock import write_block
    write_block(ARCHITECTURE, render_layer_table())
