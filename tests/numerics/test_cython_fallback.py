"""The uncompiled fallback is complete: every module an FMU carries (``solvers``, ``fmus``
and a system FMU's ``drivetrain_composite.slave``, systems/composite_slave.py) runs where
Cython is not installed, with solvers/cython_fallback.py standing in for Cython's ``cython``
module.  A host Python the FMU carries no compiled modules for imports these sources: a
declaration missing from the fallback failed the system FMU's instantiation in fmpy on
CPython 3.12 and 3.13 (``module 'solvers.cython_fallback' has no attribute 'Py_ssize_t'``)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from drivetrain_fmu.solvers import cython_fallback

ROOT = Path(__file__).resolve().parents[2]


def shipped_modules() -> dict:
    """{module name as this checkout imports it: source} of every module the FMUs carry."""
    return {f"drivetrain_fmu.{package}.{path.stem}": path for package in ("solvers", "fmus")
            for path in sorted((ROOT / package).glob("*.py"))
            if path.name != "__init__.py" and not path.stem.endswith("_kernel")} | {       # kernels: compiled only
        "drivetrain_fmu.systems.composite_slave": ROOT / "systems" / "composite_slave.py"}


def cython_uses(source: str) -> set[str]:
    """The attributes ``X`` of every ``cython.X`` in ``source``."""
    return {node.attr for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cython"}


def test_the_fallback_declares_every_cython_attribute_the_shipped_modules_use():
    uses = {name: cython_uses(path.read_text(encoding="utf-8")) for name, path in shipped_modules().items()}
    assert sum(map(len, uses.values())) >= 4, uses       # the scan finds the declarations (double, int, ...)
    missing = {name: sorted(used - set(vars(cython_fallback))) for name, used in uses.items()
               if used - set(vars(cython_fallback))}
    assert not missing, f"solvers/cython_fallback.py lacks what these modules use: {missing}"


#: imports the modules with Cython hidden (as in a host without it), says which ``cython`` each got
HIDDEN = """
import importlib, importlib.abc, json, sys
class HideCython(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("cython", "Cython"):
            raise ImportError(f"No module named {name!r} (hidden by the test)")
sys.meta_path.insert(0, HideCython())
used = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    if hasattr(module, "cython"):
        used[name] = module.cython.__name__
print(json.dumps(used))
"""


def test_every_shipped_module_imports_with_the_fallback_where_cython_is_absent():
    names = sorted(shipped_modules())
    done = subprocess.run([sys.executable, "-c", HIDDEN, *names], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    used = json.loads(done.stdout.splitlines()[-1])
    typed = {name for name, path in shipped_modules().items() if cython_uses(path.read_text(encoding="utf-8"))}
    assert typed and typed <= set(used), (typed, used)
    assert set(used.values()) == {"drivetrain_fmu.solvers.cython_fallback"}, used
