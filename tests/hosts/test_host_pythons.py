"""Every CPython 3.10-3.13 host runs the FMUs compiled (compiled_modules.HOST_VERSIONS).

Each element FMU of the session's build and a system FMU (Z3) run in fmpy on every CPython
3.10-3.13 this machine has (compiled_modules.host_pythons; the versions not found are
skipped with the reason): one process per interpreter runs them all (the FMUs share one
build's modules, which are process-global).  Each host must have imported every module of
``solvers``, ``fmus`` and ``drivetrain_composite`` it ran as the extension module of its own
version (its ``__file__`` ends with that interpreter's EXT_SUFFIX; a version the session's
build left out, as $DRIVETRAIN_FMU_HOST_PYTHONS=3.11 does, is skipped with the reason its
resources/host.json gives: such a host runs the sources), and its results must equal
those of CPython 3.11 (the build's version, whose runtime the FMUs bundle).

Tolerance: 1e-12 relative to the largest magnitude of each output over the run (an output
that crosses zero is compared on its own scale).  Each version's compiled module makes the
same IEEE operations in the same order, and the ``math`` functions call the same C library,
so the results are expected bit-identical; what a CPython release may change is its own
float algorithms (3.12's ``sum()`` of floats is compensated), which would move a result by a
few rounding errors: 1e-12 is some 4500 units in the last place, far below any physical
effect and far above such a change.

fmpy for the interpreters other than this one: a venv per interpreter in
``~/.cache/drivetrain-fmu/fmpy-hosts`` (benchmarks/fmpy_host.fmpy_python), kept between runs
and clones (made once: 55 to 80 s each here, downloading fmpy, numpy, attrs and lxml from PyPI).
"""
from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from drivetrain_fmu import build_fmus
from drivetrain_fmu import compiled_modules
from benchmarks import fmpy_host
from drivetrain_fmu.systems.catalog import z3
from tests.hosts.test_self_contained import INPUTS

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "3.11"
RELATIVE = 1e-12
#: the Z3 system FMU's run: both clutches slip, lock and hand over within it (docs/systems.md)
Z3_STOP, Z3_STEP = 10.0, 2e-3
#: the element FMUs' run (tests/hosts/test_self_contained.py's inputs make each one move)
STOP, STEP = 0.2, 1e-3
#: what the FMUs' runtime packages are called in resources/ (a module of them ran compiled or not)
PACKAGES = (build_fmus.PACKAGE, build_fmus.COMPOSITE_PACKAGE)

#: run by each host: every FMU in fmpy, results saved, then where each module came from
RUN_ALL = """
import json, sys, sysconfig
import numpy as np
from fmpy import simulate_fmu
jobs, saved = json.loads(sys.argv[1]), sys.argv[2]
arrays = {}
for name, (fmu, inputs, stop, step, outputs) in jobs.items():
    result = simulate_fmu(fmu, stop_time=stop, step_size=step, output_interval=step, start_values=inputs,
                          output=outputs)
    for column in result.dtype.names:
        arrays[f"{name}/{column}"] = result[column].astype(float)
np.savez(saved, **arrays)
print(json.dumps({"ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
                  "modules": {name: getattr(module, "__file__", None) for name, module in sys.modules.items()
                              if name.split(".")[0] in PACKAGES}}))
"""


@pytest.fixture(scope="session")
def system_fmu(tmp_path_factory):
    return build_fmus.build_system_fmu("z3", tmp_path_factory.mktemp("z3"), outputs=z3.RECORD)


def _batch(python: str, jobs: dict, saved: Path, version: str):
    """(results by 'FMU/variable', what the host said) of ``jobs`` run by RUN_ALL in ``python``."""
    done = subprocess.run([python, "-c", f"PACKAGES = {PACKAGES!r}\n{RUN_ALL}", json.dumps(jobs), str(saved)],
                          capture_output=True, text=True, cwd=saved.parent, timeout=1800)
    assert done.returncode == 0, f"CPython {version}: {done.stderr[-3000:]}"
    return dict(np.load(saved)), json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="session")
def host_runs(fmu_dir, system_fmu, tmp_path_factory):
    """{version: (the saved results, what the host said, its TargetPython, its fmpy's Python)
    or the reason it was not run}."""
    jobs = {name: (str(fmu_dir / f"{name}.fmu"), inputs, STOP, STEP, None) for name, inputs in INPUTS.items()}
    jobs["z3"] = (str(system_fmu), {}, Z3_STOP, Z3_STEP, list(z3.RECORD))
    found, missing = compiled_modules.host_pythons()
    runs = {version: f"no CPython {version} on this machine: {why}" for version, why in missing.items()}
    folder = tmp_path_factory.mktemp("host_pythons")
    for target in found:
        try:
            python = fmpy_host.fmpy_python(target)
        except fmpy_host.NoFmpy as exc:          # no network: that version's tests skip, saying why
            runs[target.short] = str(exc)
            continue
        runs[target.short] = (*_batch(python, jobs, folder / f"{target.short}.npz", target.short), target, python)
    return runs


def _run_of(host_runs, version):
    run = host_runs[version]
    if isinstance(run, str):
        pytest.skip(run)
    return run


def _left_out_by_the_build(fmu_dir, version):
    """Why the session's build did not compile for ``version`` (its resources/host.json says,
    e.g. $DRIVETRAIN_FMU_HOST_PYTHONS limited it), or None where it did."""
    with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
        return json.loads(archive.read("resources/host.json"))["not_compiled_for"].get(version)


@pytest.mark.parametrize("version", compiled_modules.HOST_VERSIONS)
def test_each_cpython_host_runs_every_fmu_compiled_for_its_version(host_runs, fmu_dir, version):
    _, said, target, _ = _run_of(host_runs, version)
    left_out = _left_out_by_the_build(fmu_dir, version)
    if left_out:        # such a host runs the sources: the test below checks it
        pytest.skip(f"the session's FMUs are not compiled for CPython {version}: {left_out}")
    assert said["ext_suffix"] == target.ext_suffix
    modules = {name: path for name, path in said["modules"].items() if path and not path.endswith("__init__.py")}
    # every module it ran: the element FMUs' and the system FMU's
    for expected in ("drivetrain_fmu.solvers.friction", "drivetrain_fmu.solvers.ode", "drivetrain_fmu.fmus.shell",
                     "drivetrain_fmu.fmus.model", "drivetrain_fmu.fmus.clutch", "drivetrain_fmu.fmus.vehicle",
                     f"{build_fmus.COMPOSITE_PACKAGE}.slave"):
        assert expected in modules, sorted(modules)
    source = {name: path for name, path in modules.items() if not path.endswith(target.ext_suffix)}
    assert not source, f"CPython {version} ran these modules uncompiled: {source}"


@pytest.mark.parametrize("version", [v for v in compiled_modules.HOST_VERSIONS if v != REFERENCE])
def test_each_cpython_host_gives_the_results_of_cpython_3_11(host_runs, version):
    results = _run_of(host_runs, version)[0]
    reference = _run_of(host_runs, REFERENCE)[0]
    assert results.keys() == reference.keys()
    moved = set()
    for key, expected in reference.items():
        _assert_equal(results[key], expected, (version, key))
        if np.ptp(expected) > 0.0 and not key.endswith("/time"):
            moved.add(key.split("/")[0])
    # the runs compared are runs that move (the inputs make them; the tables follow their time tables)
    assert {"Clutch", "DualClutch", "Vehicle", "z3"} <= moved, sorted(moved)


def _assert_equal(got, expected, what):
    assert got.shape == expected.shape, what
    allowed = RELATIVE * float(np.max(np.abs(expected)))
    assert np.max(np.abs(got - expected)) <= allowed, (what, float(np.max(np.abs(got - expected))))


@pytest.mark.parametrize("version", [v for v in compiled_modules.HOST_VERSIONS if v != REFERENCE])
def test_a_host_of_a_version_not_compiled_for_runs_the_sources_with_the_same_results(host_runs, version,
                                                                                     tmp_path):
    """A Clutch FMU compiled for CPython 3.11 only (as from a build machine without the other
    versions) in a host of another version: the host imports the element code from its
    sources and gives the results of the compiled code on 3.11."""
    _, _, target, python = _run_of(host_runs, version)
    reference = _run_of(host_runs, REFERENCE)[0]
    fmu, = build_fmus.build_all(tmp_path / "fmus", ["Clutch"], host_pythons=[REFERENCE])
    results, said = _batch(python, {"Clutch": (str(fmu), INPUTS["Clutch"], STOP, STEP, None)},
                           tmp_path / "run.npz", version)
    modules = {name: path for name, path in said["modules"].items() if path and not path.endswith("__init__.py")}
    assert {"drivetrain_fmu.solvers.friction", "drivetrain_fmu.fmus.clutch"} <= modules.keys(), sorted(modules)
    assert all(path.endswith(".py") for path in modules.values()), modules
    for key in results:
        _assert_equal(results[key], reference[key], (version, key))


#: the shared libpython of an interpreter (empty when it has none)
LIBPYTHON = ("import os, sysconfig; soname = sysconfig.get_config_var('INSTSONAME') or ''; "
             "path = os.path.join(sysconfig.get_config_var('LIBDIR') or '', soname); "
             "print(path if '.so' in soname and os.path.isfile(path) else '')")


@pytest.fixture(scope="session")
def private_python_host(fmu_dir, tmp_path_factory):
    """(run(libpython, mode) -> the host's output, the bundled libpython's soname):
    tests/hosts/private_python_host.c driving an extracted Clutch.fmu."""
    import zipfile
    from fmpy import read_model_description

    folder = tmp_path_factory.mktemp("private_python_host")
    host = folder / "host"
    subprocess.run(["gcc", "-O1", "-Wall", "-Werror", "-o", str(host), str(Path(__file__).with_name("private_python_host.c")),
                    "-ldl"], check=True)
    fmu = folder / "Clutch"
    with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
        archive.extractall(fmu)
        bundled = json.loads(archive.read("resources/host.json"))["libpython"]
    for path in (fmu / "binaries" / "linux64").iterdir():
        path.chmod(0o755)
    description = read_model_description(str(fmu_dir / "Clutch.fmu"))
    references = {v.name: str(v.valueReference) for v in description.modelVariables}

    def run(libpython: str, mode: str) -> str:
        done = subprocess.run([str(host), libpython, str(fmu), description.guid, mode, references["tau_1"],
                               references["w_1"]], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (libpython, mode, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    return run, bundled


@pytest.mark.parametrize("version", compiled_modules.HOST_VERSIONS)
def test_a_host_that_loads_python_privately_runs_the_fmu_in_the_bundled_python_or_refuses_it(
        host_runs, private_python_host, version):
    """A host that loads libpython with RTLD_LOCAL (a plug-in) hides its interpreter from the
    FMU's binaries, which then bind to the FMU's own libpython.  Of another version than the
    bundled one: the FMU starts its bundled interpreter beside the host's and gives the speed
    the host's own interpreter gives with libpython loaded RTLD_GLOBAL (bit for bit), which the
    host's interpreter does not see.  Of the bundled version (same soname): the loader reuses
    the host's libpython, whose private symbols CPython's extension modules cannot bind to:
    fmi2Instantiate fails with the ImportError logged, and the host goes on (no crash)."""
    _, _, target, _ = _run_of(host_runs, version)
    libpython = subprocess.run([target.executable, "-c", LIBPYTHON], capture_output=True, text=True).stdout.strip()
    if not libpython:
        pytest.skip(f"CPython {version} ({target.executable}) has no shared libpython to load")
    run, bundled = private_python_host
    shared, private = run(libpython, "global"), run(libpython, "local")
    assert "host sees the FMU's modules: True" in shared and "status 0" in shared, shared
    if Path(libpython).name != bundled:
        assert "host sees the FMU's modules: False" in private and "status 0" in private, private
        speed = [line for line in shared.splitlines() if line.startswith("w_1 ")]
        assert speed and speed == [line for line in private.splitlines() if line.startswith("w_1 ")], (shared, private)
    else:
        assert "instantiate failed" in private and "undefined symbol" in private, private
