"""What a plain `pip install drivetrain-fmu` (no extras) gives: the packages import and the
command starts; the optional packages are in extras, and the test extra pulls them all."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: import name -> requirement name of the packages only the command, the plots, the
#: references and the studies need
OPTIONAL = {"matplotlib": "matplotlib", "tqdm": "tqdm", "scipy": "scipy", "distributed": "dask"}


def _names(requirements):
    return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in requirements}


def test_the_optional_packages_are_extras_and_the_test_extra_pulls_them_all():
    """They were all in `dependencies` (matplotlib, tqdm, scipy and dask for a user who only
    builds FMUs or imports fmus)."""
    extras = PROJECT["optional-dependencies"]
    assert not _names(PROJECT["dependencies"]) & set(OPTIONAL.values())
    assert {"numpy", "pythonfmu", "fmpy"} <= _names(PROJECT["dependencies"])
    assert "drivetrain-fmu[all]" in extras["test"]
    assert extras["all"] == ["drivetrain-fmu[cli,study]"]
    assert {"matplotlib", "tqdm", "scipy"} <= _names(extras["cli"])
    assert {"dask", "matplotlib", "tqdm"} <= _names(extras["study"])


def test_without_the_extras_the_packages_import_and_the_command_starts():
    """In a Python where none of the optional packages can be imported: fmus, solvers,
    systems (its modules), build_fmus and the command import, and `--help` works."""
    hidden = list(OPTIONAL) + ["dask"]
    code = (f"import sys\nfor name in {hidden!r}:\n    sys.modules[name] = None\n"
            "import fmus, solvers, build_fmus, host_support, drivetrain_cli\n"
            "import systems.ssp, systems.master, systems.study, systems.catalog.reference, systems.catalog.pwa_methods, "
            "systems.composite\n"
            "drivetrain_cli.main(['--help'])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "usage: drivetrain-fmu" in done.stdout


def test_the_console_script_and_every_package_are_installed():
    """pyproject's `drivetrain-fmu` entry point names a callable that runs the command, and
    its package list names every package of the checkout (a folder with an __init__.py,
    subpackages such as systems.catalog too): a package left out would be missing from an
    installed copy, whose command then fails on import."""
    import importlib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    module, _, function = PROJECT["scripts"]["drivetrain-fmu"].partition(":")
    entry = getattr(importlib.import_module(module), function)
    assert entry(["list"]) == 0
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in ROOT.glob("**/__init__.py")
             if init.parent.relative_to(ROOT).parts[0] not in ("tests", "benchmarks", "build")}
    # a package of data only (the C sources in native/) has no __init__.py: it is listed with its data
    data_only = {name for name in tool["packages"] if not (ROOT / name.replace(".", "/") / "__init__.py").exists()
                 and name in tool["package-data"]}
    assert found == set(tool["packages"]) - data_only
    assert all((ROOT / f"{name}.py").exists() for name in tool["py-modules"])
