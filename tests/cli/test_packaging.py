"""What a plain `pip install drivetrain-fmu` (no extras) gives: the packages import and the
command starts; the optional packages are in extras, and the test extra pulls them all."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
            "from drivetrain_fmu import fmus, solvers, build_fmus, host_support, cli\n"
            "import drivetrain_fmu.systems.ssp, drivetrain_fmu.systems.master, drivetrain_fmu.systems.study\n"
            "import drivetrain_fmu.systems.catalog.reference, drivetrain_fmu.systems.catalog.pwa_methods\n"
            "import drivetrain_fmu.systems.composite\n"
            "cli.main(['--help'])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage: drivetrain-fmu" in done.stdout


def test_the_console_script_and_every_package_are_installed():
    """pyproject's `drivetrain-fmu` entry point names a callable that runs the command, and
    its package list names every package of the checkout (a folder with an __init__.py,
    subpackages such as systems.catalog too) under the one import name drivetrain_fmu (the
    checkout's top folder, issue 32): a package left out would be missing from an installed
    copy, whose command then fails on import."""
    import importlib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    module, _, function = PROJECT["scripts"]["drivetrain-fmu"].partition(":")
    entry = getattr(importlib.import_module(module), function)
    assert entry(["list"]) == 0
    assert tool["package-dir"] == {"drivetrain_fmu": "."}
    found = {".".join(("drivetrain_fmu",) + init.parent.relative_to(ROOT).parts) for init in ROOT.glob("**/__init__.py")
             if init.parent.relative_to(ROOT).parts[0] not in ("tests", "benchmarks", "build")}
    # the top (a namespace package) and a package of data only (the C sources in native/)
    # have no __init__.py: native is listed with its data
    data_only = {name for name in tool["packages"] if name in tool["package-data"]
                 and not (ROOT.joinpath(*name.split(".")[1:]) / "__init__.py").exists()}
    assert found == set(tool["packages"]) - data_only - {"drivetrain_fmu"}
    assert "py-modules" not in tool


def test_installed_the_project_claims_one_import_name(tmp_path):
    """A wheel of the checkout puts everything under drivetrain_fmu/ (issue 32: fmus,
    solvers, systems, host_support, compiled_modules, build_fmus and the command were seven
    generic top-level names in every user's site-packages), beside its .dist-info."""
    import shutil
    import zipfile

    source = tmp_path / "source"          # a copy: setuptools builds in the tree it is given
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "results", "*.egg-info", "__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    wheel, = tmp_path.glob("drivetrain_fmu-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"drivetrain_fmu"}, sorted(tops)
    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("drivetrain_fmu/fmus/clutch.py", "drivetrain_fmu/cli/run.py", "drivetrain_fmu/build_fmus.py",
                     "drivetrain_fmu/native/fmi2_forwarding.h", "drivetrain_fmu/systems/catalog/ssd/z3.ssd"):
        assert expected in names
