"""Every FMU runs on a machine without Python (the bundled runtime of host_support).

The hosts run in a mount namespace in which every Python installation of this machine is
hidden under empty bind mounts (the build's prefix, the Debian and /usr/local standard
libraries, every libpython, the python3 executables, the user site): OMSimulator's CLI,
the Modelica Association's fmusim, the FMU Compliance Checker (prebuilt in
``../shared/tools/hosts``, see its README) and ecos (through its C library, from a copy
outside the hidden prefix).  Each FMU is driven with constant inputs that make it move, and
its outputs must equal those of fmpy's in-process run of the same FMU with the same inputs.

Tolerance: 1e-9 relative to the largest magnitude of the signal, and at least 1e-12
absolute (SI units).  The same CPython build runs the same element code in both processes,
so the results are expected to be identical up to the text round trip of the hosts' result
files (fmusim and fmuCheck print 16-17 significant digits; OMSimulator and ecos are read
with %.17g here) and the hosts' time arithmetic (fmuCheck accumulates t += h, fmpy computes
t = n h): a signal that is rounding noise around zero, such as the slip speed of a stuck
tire (x' - R phi' of about 1e-17 m/s), differs by that noise, hence the absolute floor.
"""
from __future__ import annotations

import csv
import glob
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HOSTS
STEP, N_STEPS = 1e-3, 200
STOP = STEP * N_STEPS
RELATIVE, ABSOLUTE = 1e-9, 1e-12

# constant inputs per element, chosen so that the element moves (torques accelerate bodies
# and engage or slip clutches, compliances see a twist and a twist speed)
INPUTS = {
    "Clutch": {"tau_1": 100.0, "tau_2": -50.0},
    "DualClutch": {"tau_1": 300.0, "tau_3": -100.0, "f_n_a": 2000.0, "f_n_b": 500.0},
    "ClutchChain": {"tau_1": 200.0, "tau_2": -100.0, "f_n_1": 500.0},
    "Inertia": {"tau_1": 10.0, "tau_2": -4.0},
    "Engine": {"tau_load": -20.0, "throttle": 0.5},
    "Shaft": {"phi_1": 0.01, "w_1": 0.5},
    "NonlinearSpring": {"phi_1": 0.01, "w_1": 0.5},
    "Backlash": {"tau_1": 50.0, "tau_2": -20.0},
    "ElastoBacklash": {"phi_1": 0.05, "w_1": 1.0},
    "Vehicle": {"tau_wheel_f": 300.0},
    "VehicleSimple": {"tau_wheel": 200.0, "grade": 0.02},
    "Table": {}, "TorqueTable": {}, "ForceTable": {}, "SpeedTable": {},
}


def _hidden_paths() -> list[str]:
    """Every Python installation this machine has (folders and files to cover)."""
    patterns = ["/usr/lib/python3*", "/usr/local/lib/python3*", "/usr/lib/*-linux-gnu/libpython3*",
                "/usr/local/lib/libpython3*", "/usr/bin/python3*", "/usr/local/bin/python3*",
                os.path.join(site.getuserbase(), "lib", "python3*")]
    paths = {os.path.realpath(p) for pattern in patterns for p in glob.glob(pattern) if os.path.exists(p)}
    for prefix in {sys.base_prefix, sys.prefix}:
        if prefix not in ("/", "/usr", "/usr/local"):        # those are covered by the patterns
            paths.add(os.path.realpath(prefix))
    # a path inside a hidden folder is hidden with it (and cannot be mounted on afterwards)
    return sorted(p for p in paths if not any(p.startswith(folder + os.sep) for folder in paths))


HIDE_SCRIPT = """
empty=$(mktemp -d)
for path in "$@"; do
    case "$path" in --) shift; break;; esac
    if [ -d "$path" ]; then mount --bind "$empty" "$path"; else mount --bind /dev/null "$path"; fi || exit 97
    shift
done
exec "$@"
"""


@pytest.fixture(scope="session")
def hiding(tmp_path_factory):
    """run(hidden, command, cwd) -> CompletedProcess: ``command`` in a mount namespace with
    the paths ``hidden`` covered by empty bind mounts, from a clean environment
    (PATH=/usr/bin:/bin, an empty HOME)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    home = tmp_path_factory.mktemp("home")
    # as root a mount namespace; otherwise inside a user namespace where we are root
    for unshare in (["unshare", "--mount", "--propagation", "private"],
                    ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]):
        probe = subprocess.run([*unshare, "true"], capture_output=True, text=True)
        if probe.returncode == 0:
            break
    else:
        pytest.skip(f"cannot make a mount namespace here (needs root or unprivileged user namespaces): "
                    f"{probe.stderr.strip()}")

    def run(hidden, command, cwd, timeout=600):
        return subprocess.run([*unshare, "sh", "-c", HIDE_SCRIPT, "sh", *hidden, "--", *map(str, command)],
                              cwd=cwd, capture_output=True, text=True,
                              # TMPDIR: what a host extracts there and leaves (ecos: 120 MB per
                              # run, tests/hosts/test_hosts.py) stays in the test's folder
                              env={"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(cwd)}, timeout=timeout)

    return run


BUILD_LIBPYTHON = Path(sys.base_prefix) / "lib" / f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0"


@pytest.fixture(scope="session")
def without_python(hiding, tmp_path_factory):
    """run(command, cwd): ``hiding`` with every Python installation of the machine hidden."""
    hidden = _hidden_paths()

    def run(command, cwd, timeout=600):
        return hiding(hidden, command, cwd, timeout)

    # the namespace really hides Python: no interpreter starts, the build's libpython is unreadable
    check = run(["sh", "-c", f"python3 -c pass 2>/dev/null && echo PYTHON; "
                             f"{sys.executable} -c pass 2>/dev/null && echo PYTHON; "
                             f"test -s {BUILD_LIBPYTHON} && echo LIBPYTHON; echo DONE"], tmp_path_factory.getbasetemp())
    assert check.stdout.split() == ["DONE"], check.stdout + check.stderr
    return run


def _host(*parts) -> Path:
    path = HOSTS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the prebuilt third-party hosts of ../shared/tools/hosts)")
    return path


@pytest.fixture(scope="module")
def fmpy_results(fmu_dir):
    """fmpy's in-process run of every FMU: name -> structured array (time and outputs)."""
    from fmpy import simulate_fmu

    return {name: simulate_fmu(str(fmu_dir / f"{name}.fmu"), stop_time=STOP, step_size=STEP,
                               output_interval=STEP, start_values=inputs)
            for name, inputs in INPUTS.items()}


def _real_outputs(fmu: Path) -> list[str]:
    from fmpy import read_model_description

    return [v.name for v in read_model_description(str(fmu)).modelVariables
            if v.causality == "output" and v.type == "Real"]


def _assert_equal_to_fmpy(name, reference, table: dict[str, np.ndarray], host: str):
    """Rows at t = STEP .. STOP of a host's results equal fmpy's at the same times."""
    outputs = [key for key in table if key != "time"]
    assert outputs, f"{host} reported no outputs of {name}"
    rows = np.searchsorted(reference["time"], table["time"] - 0.5 * STEP)
    assert np.allclose(reference["time"][rows], table["time"], rtol=0, atol=1e-9 * STOP), (host, name)
    moved = False
    for key in outputs:
        expected, got = reference[key][rows].astype(float), table[key]
        allowed = max(RELATIVE * float(np.max(np.abs(expected))), ABSOLUTE)
        assert np.max(np.abs(got - expected)) <= allowed, (host, name, key, np.max(np.abs(got - expected)))
        moved |= np.ptp(expected) > 0.0
    if INPUTS[name]:
        assert moved or name in ("Shaft", "NonlinearSpring", "ElastoBacklash"), f"{name} does not move"


def _read_csv(path: Path, names: list[str], prefix: str = "") -> dict[str, np.ndarray]:
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    header = [h.strip().strip('"') for h in rows[0]]
    data = np.array([[float(x) for x in row] for row in rows[1:] if row])
    table = {"time": data[:, header.index("time")]}
    for name in names:
        table[name] = data[:, header.index(prefix + name)]
    keep = table["time"] > 0.5 * STEP
    return {key: column[keep] for key, column in table.items()}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_fmusim_without_python(name, fmu_dir, fmpy_results, without_python, tmp_path):
    fmusim = _host("fmusim")
    command = [fmusim, "--interface-type", "cs", "--stop-time", STOP, "--output-interval", STEP,
               "--output-file", tmp_path / "out.csv"]
    for variable, value in INPUTS[name].items():
        command += ["--start-value", variable, repr(value)]
    done = without_python([*command, fmu_dir / f"{name}.fmu"], tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    outputs = _real_outputs(fmu_dir / f"{name}.fmu")
    _assert_equal_to_fmpy(name, fmpy_results[name], _read_csv(tmp_path / "out.csv", outputs), "fmusim")


def test_pure_python_vehicle_fmu_without_python(fmu_dir, fmpy_results, without_python, tmp_path):
    """The Vehicle built ``--pure-python`` runs its sources (solvers.vehicle and solvers.ode;
    their kernels, which import Cython, refuse to be imported uncompiled and the reference
    functions run) where Cython is hidden with every Python, and gives the compiled FMU's
    results in fmpy (same tolerance)."""
    from drivetrain_fmu import build_fmus

    fmu, = build_fmus.build_all(tmp_path / "pure", only=["Vehicle"], pure_python=True)
    command = [_host("fmusim"), "--interface-type", "cs", "--stop-time", STOP, "--output-interval", STEP,
               "--output-file", tmp_path / "out.csv", "--start-value", "tau_wheel_f",
               repr(INPUTS["Vehicle"]["tau_wheel_f"])]
    done = without_python([*command, fmu], tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    _assert_equal_to_fmpy("Vehicle", fmpy_results["Vehicle"], _read_csv(tmp_path / "out.csv", _real_outputs(fmu)),
                          "fmusim")


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_fmu_compliance_checker_without_python(name, fmu_dir, fmpy_results, without_python, tmp_path):
    """fmuCheck at log level 6 (everything): no warning, no error, and fmpy's results."""
    checker = _host("fmuCheck.linux64")
    command = [checker, "-h", STEP, "-s", STOP, "-l", "6", "-c", ",", "-o", tmp_path / "out.csv"]
    if INPUTS[name]:
        with open(tmp_path / "in.csv", "w") as handle:       # constant inputs over the run
            names = list(INPUTS[name])
            handle.write(",".join(["time", *names]) + "\n")
            for t in (0.0, 2 * STOP):
                handle.write(",".join([repr(t), *(repr(INPUTS[name][n]) for n in names)]) + "\n")
        command += ["-i", tmp_path / "in.csv"]
    done = without_python([*command, fmu_dir / f"{name}.fmu"], tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "0 Warning(s)" in log and "0 Error(s)" in log, log[-3000:]
    outputs = _real_outputs(fmu_dir / f"{name}.fmu")
    _assert_equal_to_fmpy(name, fmpy_results[name], _read_csv(tmp_path / "out.csv", outputs), "fmuCheck")


OMS_SCRIPT = """
oms_setTempDirectory("{tmp}")
oms_newModel("model")
oms_addSystem("model.root", oms_system_wc)
oms_addSubModel("model.root.fmu", "{fmu}")
{inputs}
oms_setResultFile("model", "")
oms_setStopTime("model", {stop!r})
oms_setFixedStepSize("model.root", {step!r})
oms_instantiate("model")
oms_initialize("model")
for k = 1, {n_steps} do
  oms_stepUntil("model", k * {step!r})
  local row = string.format("ROW %.17g", k * {step!r})
{reads}
  print(row)
end
oms_terminate("model")
oms_delete("model")
"""


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_omsimulator_without_python(name, fmu_dir, fmpy_results, without_python, tmp_path):
    """OMSimulator's CLI running a Lua script that sets the inputs, steps and prints every
    Real output with 17 digits."""
    oms = _host("omsimulator", "bin", "OMSimulator")
    outputs = _real_outputs(fmu_dir / f"{name}.fmu")
    script = OMS_SCRIPT.format(
        tmp=tmp_path / "oms", fmu=fmu_dir / f"{name}.fmu", stop=STOP, step=STEP, n_steps=N_STEPS,
        inputs="\n".join(f'oms_setReal("model.root.fmu.{v}", {x!r})' for v, x in INPUTS[name].items()),
        reads="\n".join(f'  row = row .. string.format(" %.17g", oms_getReal("model.root.fmu.{v}"))'
                        for v in outputs))
    (tmp_path / "run.lua").write_text(script)
    done = without_python([oms, tmp_path / "run.lua"], tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    rows = np.array([[float(x) for x in line.split()[1:]] for line in done.stdout.splitlines()
                     if line.startswith("ROW ")])
    assert rows.shape == (N_STEPS, 1 + len(outputs)), (done.stdout + done.stderr)[-3000:]
    table = {"time": rows[:, 0], **{v: rows[:, i] for i, v in enumerate(outputs, start=1)}}
    _assert_equal_to_fmpy(name, fmpy_results[name], table, "OMSimulator")


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_ecos_without_python(name, fmu_dir, fmpy_results, without_python, ecos_host, tmp_path):
    """ecos (libecosc) running a one-component SSP whose parameter set binds the inputs."""
    from drivetrain_fmu.systems.ssp import Component, write_ssp

    ssp = write_ssp(tmp_path / "one.ssp", "one", {"fmu": Component(name, dict(INPUTS[name]))}, [],
                    fmu_dir, STOP)
    outputs = _real_outputs(fmu_dir / f"{name}.fmu")
    done = without_python([ecos_host, ssp.name, STEP, N_STEPS, *(f"fmu::{v}" for v in outputs)],
                          tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    rows = np.array([[float(x) for x in line.split()] for line in done.stdout.splitlines()])[1:]
    table = {"time": rows[:, 0], **{v: rows[:, i] for i, v in enumerate(outputs, start=1)}}
    _assert_equal_to_fmpy(name, fmpy_results[name], table, "ecos")


def test_each_fmu_carries_its_runtime_for_linux_and_windows(fmu_dir):
    """Every FMU holds libpython, the starter and the stdlib zip for Linux, and (where the
    build has mingw-w64, as ./run_tests.sh installs it) the forwarder DLL, pythonfmu's DLL
    and the embeddable CPython for Windows (host_support.py; tests/hosts/test_windows.py runs them)."""
    from drivetrain_fmu import host_support

    windows = shutil.which(host_support.MINGW_GCC) is not None
    for fmu in sorted(fmu_dir.glob("*.fmu")):
        with zipfile.ZipFile(fmu) as archive:
            names = set(archive.namelist())
        soname = f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0"
        for needed in (f"binaries/linux64/{fmu.stem}.so", f"binaries/linux64/{soname}",
                       "binaries/linux64/libdrivetrain_python.so", "binaries/linux64/python/stdlib.zip"):
            assert needed in names, (fmu.name, needed)
        for needed in (f"binaries/win64/{fmu.stem}.dll", f"binaries/win64/{host_support.WINDOWS_PYTHONFMU_LIBRARY}",
                       "binaries/win64/python/python311.dll", "binaries/win64/python/python311.zip"):
            assert (needed in names) == windows, (fmu.name, needed, windows)


VENV_RUN = """
import json, sys
from fmpy import simulate_fmu
inputs = json.loads(sys.argv[1])
results = {}
for name, values in inputs.items():
    result = simulate_fmu(f"{name}.fmu", stop_time=%r, step_size=%r, output_interval=%r, start_values=values)
    results[name] = {key: result[key].astype(float).tolist() for key in result.dtype.names}
for module in ("scipy", "pythonfmu"):
    print("IMPORTED" if module in sys.modules and "resources" not in (sys.modules[module].__file__ or "") else "",
          module)
print("FMUS", sys.modules["drivetrain_fmu.fmus"].__file__)
print("RESULTS", json.dumps(results))
""" % (STOP, STEP, STEP)


@pytest.fixture(scope="module")
def debian_python_with_fmpy(tmp_path_factory):
    """A venv of Debian's python3.11 (statically linked, not the build's Python) with fmpy
    and what fmpy requires (numpy among them) and nothing else: no scipy, no pythonfmu."""
    python = shutil.which("python3.11", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("Debian's python3.11 is not installed (apt-get install python3.11)")
    venv = tmp_path_factory.mktemp("debian_venv")
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    interpreter = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(interpreter), "install", "--quiet",
                              "fmpy"], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    for absent in ("scipy", "pythonfmu"):
        probe = subprocess.run([str(interpreter), "-c", f"import {absent}"], capture_output=True)
        assert probe.returncode != 0, f"{absent} is installed in the fresh venv"
    return interpreter


def test_debian_python_with_only_fmpy_simulates_every_fmu(fmu_dir, fmpy_results, debian_python_with_fmpy,
                                                         hiding, tmp_path):
    """fmpy.simulate_fmu of every FMU in Debian's python3.11 (statically linked: it has no
    libpython.so) as on a machine with only that Python: the build's Python prefix and every
    shared libpython hidden, clean environment, a folder without the project.  The FMUs run
    on their own resources and libpython, and the results equal those of the build's Python."""
    import json

    for name in INPUTS:
        shutil.copy(fmu_dir / f"{name}.fmu", tmp_path / f"{name}.fmu")
    hidden = sorted({os.path.realpath(p) for p in glob.glob("/usr/lib/*-linux-gnu/libpython3*.so*")
                     + glob.glob("/usr/local/lib/libpython3*.so*")}
                    | ({os.path.realpath(sys.base_prefix)} if sys.base_prefix not in ("/usr", "/usr/local") else set()))
    done = hiding(hidden, [debian_python_with_fmpy, "-c", VENV_RUN, json.dumps(INPUTS)], tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "IMPORTED" not in done.stdout, done.stdout[:500]
    assert "/resources/drivetrain_fmu/fmus/" in lines["FMUS"]
    results = json.loads(lines["RESULTS"])
    for name in INPUTS:
        table = {key: np.array(values) for key, values in results[name].items()}
        keep = table["time"] > 0.5 * STEP
        _assert_equal_to_fmpy(name, fmpy_results[name], {k: v[keep] for k, v in table.items()}, "Debian python3.11")
