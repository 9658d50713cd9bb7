"""The project's modules import each other without a cycle (issue 32: ``build_fmus`` <->
``systems.composite`` <-> ``systems.ssp`` were a cycle hidden in function-local imports).

The graph is read from the sources with ``ast``: every import statement of a module, at its
top level or inside a function (a function-local import is still an edge: it only hides the
cycle until the function runs), between the project's own modules.  Importing ``a.b.c``
also imports the packages ``a`` and ``a.b`` (their ``__init__``), so those are edges too.
Code in strings (the FMU entry points build_fmus generates) is no import here."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: folders that are no importable part of the project
NOT_MODULES = {"tests", "benchmarks", "docs", "build", "results"}


def project_modules(root: Path = ROOT, package: str = "drivetrain_fmu") -> dict[str, Path]:
    """Dotted name -> source file of every module of the checkout's top-level modules and
    packages (a package is a folder with an ``__init__.py``), under ``package`` (the checkout's
    top folder installed as it) or none."""
    prefix = f"{package}." if package else ""
    modules = {prefix + path.stem: path for path in root.glob("*.py")}
    for init in root.glob("*/__init__.py"):
        if init.parent.name in NOT_MODULES:
            continue
        for path in init.parent.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if not all((root.joinpath(*parts[:k]) / "__init__.py").exists() for k in range(1, len(parts))):
                continue                      # a folder of scripts inside a package, not a subpackage
            modules[prefix + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(name: str, path: Path, node) -> list[str]:
    """The dotted names an import statement of module ``name`` (file ``path``) brings in."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if node.level:
        base = package.split(".")[:len(package.split(".")) - node.level + 1]
        package = ".".join(base)
        prefix = f"{package}.{node.module}" if node.module else package
    else:
        prefix = node.module
    return [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]   # a name may be a submodule


def import_graph(root: Path = ROOT, package: str = "drivetrain_fmu") -> dict[str, set[str]]:
    """module -> the project modules its import statements (anywhere in it) import."""
    modules = project_modules(root, package)
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(name, path, node):
                    parts = target.split(".")
                    edges |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)} & modules.keys()
        edges.discard(name)
        edges -= {p for p in modules if name.startswith(p + ".")}   # a module's own packages are imported first
        graph[name] = edges
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}                # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_relative_and_function_local_imports(tmp_path):
    """The reader itself: a cycle through a relative import inside a function is found,
    and a chain without one is not."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def later():\n    from .a import thing\n")
    (tmp_path / "top.py").write_text("import pkg.a\n")
    graph = import_graph(tmp_path, None)
    assert graph["top"] == {"pkg", "pkg.a"} and graph["pkg.b"] == {"pkg.a"}
    assert cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
    (package / "b.py").write_text("import json\n")
    assert cycle(import_graph(tmp_path, None)) is None


def test_the_project_has_no_import_cycle():
    graph = import_graph()
    assert {f"drivetrain_fmu.{name}" for name in ("build_fmus", "fmus", "solvers", "systems")} <= graph.keys()
    found = cycle(graph)
    assert found is None, "import cycle: " + " -> ".join(found)


def test_systems_ssp_loads_the_element_code_only_when_asked():
    """The function-local imports of fmus left in systems.ssp and systems.rates are there
    for this: a process that runs FMUs of another build through systems.ssp.run_system
    must let them load their own element code first (pythonfmu's module names are
    process-global; build_fmus.SLAVE_SCRIPT refuses a different one)."""
    import subprocess
    import sys

    code = ("import sys, drivetrain_fmu.systems.ssp; "
            "print(sorted(m for m in sys.modules if m.startswith('drivetrain_fmu.fmus')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_code_imports_the_project_only_by_its_one_name():
    """Installed, the project is drivetrain_fmu and nothing else (issue 32); a checkout's top
    folder is on sys.path under pytest, so an `import fmus` left anywhere (tests and
    benchmarks included) would run a second copy of the element code beside
    drivetrain_fmu.fmus.  The FMU entry points build_fmus generates are checked as code too."""
    from drivetrain_fmu import build_fmus

    old = ({path.stem for path in ROOT.glob("*.py")} | {init.parent.name for init in ROOT.glob("*/__init__.py")}) - {
        "tests", "benchmarks"}
    sources = {path: path.read_text(encoding="utf-8") for path in ROOT.rglob("*.py")
               if not {".git", "build", "results"} & set(path.relative_to(ROOT).parts)}
    sources["SLAVE_SCRIPT"] = build_fmus.slave_script("Clutch")
    found = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else [])
            found += [f"{path}: {name}" for name in names if name.split(".")[0] in old]
    assert {"fmus", "solvers", "systems", "cli", "build_fmus"} <= old
    assert not found, found
