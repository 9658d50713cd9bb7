"""An FMU runs from any folder a user may have, and a slave it cannot find is an error,
never a crash (issue #30).

Hosts pass fmi2Instantiate the FMU's resources folder as a file URI, percent-encoded
(fmpy: ``file:///home/j%C3%BCrgen/...``).  pythonfmu 0.7.0 only turns "%20" into a space:
any other escape left it a folder that does not exist, where it read no slave module name
and called a NULL class, and the host died (SIGSEGV) for a folder named ``ü``, ``a%b``,
``x#y`` or ``space é``, in fmpy and fmuCheck, for every element and system FMU.  The FMU's
binary (native/linux64/forwarder.c, ``resources_folder``) now decodes the URI and checks
that the slave is there before pythonfmu looks for it.

Each host runs in its own process (a crash is a failed test, not a dead pytest): fmpy's
simulate_fmu on the FMU extracted into such a folder; fmuCheck extracting into it (``-t``);
fmusim, whose temporary folder is ``/tmp/fmusim.XXXXXX`` whatever the environment says,
with ``mkdtemp`` moved under that folder by a preloaded library.  The results must equal
those of a plain folder byte for byte: the folder is not an input of the physics.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HOSTS

#: folder names from users' machines: a German home folder, the URI escape and fragment
#: characters, a space with a non-ASCII letter
FOLDERS = ["ü", "a%b", "x#y", "space é"]
#: FMU -> (stop time, step): an element FMU and a system FMU (export-fmu)
RUNS = {"Clutch": (0.5, 1e-3), "z3": (0.5, 2e-3)}
#: what pythonfmu's binary crashed with (SIGSEGV, SIGABRT), as a shell or Python reports it
CRASHES = {-11, 139, -6, 134}


@pytest.fixture(scope="module")
def fmus(fmu_dir, tmp_path_factory) -> dict[str, Path]:
    """Clutch.fmu (element) and z3.fmu (the Z3 system as one FMU, its own slave module
    z3_system_fmu in resources/)."""
    from drivetrain_fmu import build_fmus

    out = tmp_path_factory.mktemp("system_fmu")
    return {"Clutch": fmu_dir / "Clutch.fmu", "z3": build_fmus.build_system_fmu("z3", out)}


def _run(command, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert done.returncode not in CRASHES, f"the host crashed (exit {done.returncode}): " \
                                           f"{(done.stdout + done.stderr)[-3000:]}"
    return done


def _clean_env(folder: Path, **extra) -> dict[str, str]:
    """A user's tool started from a clean environment (../shared/tools/hosts/README.md)."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(folder), **extra}


# ------------------------------------------------------------------ fmpy
SIMULATE = r'''
import sys
import numpy as np
from fmpy import extract, simulate_fmu
fmu, folder, stop, step, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
result = simulate_fmu(extract(fmu, unzipdir=folder), stop_time=stop, step_size=step, output_interval=step)
np.save(out, result)
'''


def _simulate_in_fmpy(fmu: Path, where: Path, stop: float, step: float, out: Path) -> np.ndarray:
    _run([sys.executable, "-c", SIMULATE, fmu, where, stop, step, out], where.parent)
    return np.load(out)


@pytest.fixture(scope="module")
def plain_fmpy(fmus, tmp_path_factory) -> dict[str, np.ndarray]:
    folder = tmp_path_factory.mktemp("plain")
    return {name: _simulate_in_fmpy(fmus[name], folder / name, *RUNS[name], folder / f"{name}.npy")
            for name in RUNS}


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(RUNS))
def test_fmpy_simulates_from_an_unusual_folder_as_from_a_plain_one(name, folder, fmus, plain_fmpy, tmp_path):
    """simulate_fmu on the FMU extracted into ``folder``: every output at every step equal
    (same bytes) to the run from a plain folder."""
    (tmp_path / folder).mkdir()
    result = _simulate_in_fmpy(fmus[name], tmp_path / folder / name, *RUNS[name], tmp_path / "result.npy")
    reference = plain_fmpy[name]
    assert result.dtype == reference.dtype and len(result) == len(reference) == round(RUNS[name][0] /
                                                                                        RUNS[name][1]) + 1
    assert result.tobytes() == reference.tobytes()


# ------------------------------------------------------------------ fmuCheck and fmusim
def _host(name: str) -> Path:
    path = HOSTS / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the prebuilt third-party hosts of ../shared/tools/hosts, "
                    "or the folder DRIVETRAIN_FMU_HOSTS names)")
    return path


def _fmucheck(fmu: Path, extract_into: Path, out: Path, stop: float, step: float) -> bytes:
    """fmuCheck unpacking into ``extract_into`` (its -t): 0 warnings, 0 errors, the result file."""
    done = _run([_host("fmuCheck.linux64"), "-h", step, "-s", stop, "-l", "3", "-t", extract_into, "-o", out, fmu],
                out.parent, _clean_env(out.parent))
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "0 Warning(s)" in log and "0 Error(s)" in log, log[-3000:]
    return out.read_bytes()


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(RUNS))
def test_fmucheck_runs_the_fmu_unpacked_into_an_unusual_folder(name, folder, fmus, tmp_path):
    """fmuCheck (FMI Library: every byte outside [A-Za-z0-9/-_.~] percent-encoded) with its
    temporary folder under ``folder``: no warning, no error, the result file of a plain
    folder's run byte for byte."""
    (tmp_path / "plain").mkdir()
    (tmp_path / folder).mkdir()
    plain = _fmucheck(fmus[name], tmp_path / "plain", tmp_path / "plain.csv", *RUNS[name])
    assert _fmucheck(fmus[name], tmp_path / folder, tmp_path / "unusual.csv", *RUNS[name]) == plain
    assert plain.count(b"\n") > 100                     # rows of a run, not an empty file


#: mkdtemp("/tmp/NAME.XXXXXX") moved under $MKDTEMP_PARENT, as a preloaded library
MOVE_MKDTEMP = Path(__file__).with_name("move_mkdtemp.c")


@pytest.fixture(scope="module")
def move_mkdtemp(tmp_path_factory) -> Path:
    """A library that, preloaded, moves fmusim's temporary folder (it extracts the FMU into
    mkdtemp("/tmp/fmusim.XXXXXX"), TMPDIR or not) under $MKDTEMP_PARENT."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is absent: it compiles the library that moves fmusim's temporary folder")
    folder = tmp_path_factory.mktemp("move_mkdtemp")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "move_mkdtemp.so"), str(MOVE_MKDTEMP), "-ldl"],
                   check=True)
    return folder / "move_mkdtemp.so"


#: what fmusim 0.0.39's FMIPathToURI leaves as it is (Reference-FMUs src/FMI.c)
FMUSIM_LEGAL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;="


def _fmusim_encoded(name: str) -> str:
    """``name`` as fmusim 0.0.39 writes it into the resources URI: a byte from 0x80 up as
    %FF (sprintf "%%%2X" of a signed char), another illegal one as %XX."""
    return "".join(chr(byte) if byte in FMUSIM_LEGAL else "%FF" if byte >= 0x80 else f"%{byte:02X}"
                   for byte in name.encode())


def _fmusim(fmu: Path, extract_under: Path, out: Path, stop: float, step: float, preload: Path) -> bytes:
    done = _run([_host("fmusim"), "--interface-type", "cs", "--stop-time", stop, "--output-interval", step,
                 "--log-fmi-calls", "--output-file", out, fmu], out.parent,
                _clean_env(out.parent, LD_PRELOAD=str(preload), MKDTEMP_PARENT=str(extract_under)))
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    # it unpacked the FMU under that folder and passed fmi2Instantiate its URI
    located = f'fmuResourceLocation="file://{_fmusim_encoded(str(extract_under))}/fmusim.'
    assert located in log, (located, log[:3000])
    return out.read_bytes()


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("name", list(RUNS))
def test_fmusim_runs_the_fmu_unpacked_into_an_unusual_folder(name, folder, fmus, move_mkdtemp, tmp_path):
    """fmusim 0.0.39 writes '#' as it is and every byte from 0x80 up as %FF (its sign-extended
    "%2X"): the FMU meets both, and its result file equals a plain folder's byte for byte."""
    (tmp_path / "plain").mkdir()
    (tmp_path / folder).mkdir()
    plain = _fmusim(fmus[name], tmp_path / "plain", tmp_path / "plain.csv", *RUNS[name], move_mkdtemp)
    unusual = _fmusim(fmus[name], tmp_path / folder, tmp_path / "unusual.csv", *RUNS[name], move_mkdtemp)
    assert unusual == plain and plain.count(b"\n") > 100


# ------------------------------------------------------------------ the URI, form by form
INSTANTIATE = r'''
import json, sys
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, \
    fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, calloc, free
from ctypes import byref

folder, cases = sys.argv[1], json.loads(sys.argv[2])
messages = []


def logger(environment, instance, status, category, message):
    # the message is a printf format (FMI 2.0 2.1.5), here without arguments: '%%' is '%'
    text = message.decode(errors="replace").replace("%%", "%")
    messages.append([status, None if category is None else category.decode(), text])


callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(logger)
callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
md = read_model_description(folder)
slave = FMU2Slave(guid=md.guid, unzipDirectory=folder, modelIdentifier=md.coSimulation.modelIdentifier)
outputs = [v.valueReference for v in md.modelVariables if v.causality == "output" and v.type == "Real"]
for uri in cases:
    del messages[:]
    location = None if uri is None else uri.encode("utf-8", "surrogateescape")
    component = slave.fmi2Instantiate(b"case", 1, md.guid.encode(), location, byref(callbacks), 0, 0)
    values = None
    if component is not None:
        slave.component = component
        slave.setupExperiment(startTime=0.0)
        slave.enterInitializationMode()
        slave.exitInitializationMode()
        for n in range(5):
            slave.doStep(n * 1e-3, 1e-3)
        values = slave.getReal(outputs)
        slave.terminate()
        slave.fmi2FreeInstance(component)
    print("CASE", json.dumps({"uri": uri, "instantiated": component is not None, "values": values,
                              "messages": messages}), flush=True)
'''


def _instantiate_each(folder: Path, uris: list) -> list[dict]:
    """fmi2Instantiate of the FMU unpacked in ``folder`` with each resource location, in
    one fmpy process; an instance that comes up takes five 1 ms steps."""
    done = _run([sys.executable, "-c", INSTANTIATE, folder, json.dumps(uris)], folder.parent)
    results = [json.loads(line.split(" ", 1)[1]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    assert len(results) == len(uris), (done.stdout + done.stderr)[-3000:]
    return results


def _unpacked(fmu: Path, folder: Path) -> Path:
    with zipfile.ZipFile(fmu) as archive:
        archive.extractall(folder)
    for path in (folder / "binaries" / "linux64").rglob("*.so*"):
        path.chmod(0o755)
    return folder


def _declared_fatal(result: dict) -> str:
    """The one message of a refused fmi2Instantiate: fmi2Fatal under logStatusFatal."""
    assert not result["instantiated"], result
    fatal = [(category, message) for status, category, message in result["messages"] if status == 4]
    assert fatal and all(category == "logStatusFatal" for category, _ in fatal), result
    return fatal[-1][1]


def test_every_file_uri_form_of_the_folder_reaches_the_same_slave(fmu_dir, tmp_path):
    """RFC 8089 file:///p, file:/p and file://localhost/p (scheme and host in any case), the
    escapes in either case, the path written unencoded with a trailing '/', and fmusim's
    %FF for each non-ASCII byte: all instantiate Clutch unpacked under 'ü' and give the
    same outputs after five steps."""
    folder = _unpacked(fmu_dir / "Clutch.fmu", tmp_path / "ü" / "Clutch")
    resources = folder / "resources"
    encoded = resources.as_uri()                               # file:///.../%C3%BC/Clutch/resources
    path = encoded[len("file://"):]
    uris = [encoded, "file:" + path, "file://localhost" + path, "FILE://LocalHost" + path,
            encoded.replace("%C3%BC", "%c3%bc"), f"file://{resources}/", encoded.replace("%C3%BC", "%FF%FF")]
    results = _instantiate_each(folder, uris)
    for result in results:
        assert result["instantiated"], result
        assert not [m for m in result["messages"] if m[0] >= 3], result
    assert all(result["values"] == results[0]["values"] for result in results), results
    assert len(results[0]["values"]) >= 5


def test_a_location_that_names_no_folder_of_this_machine_is_refused_naming_it(fmu_dir, tmp_path):
    """No location, another scheme, a remote host, a relative path, a bad escape (%zz, a
    truncated %4, %00), a folder that does not exist, a path that is not UTF-8 and one
    holding "%20" (pythonfmu 0.7.0 would make it a space): fmi2Instantiate returns NULL
    with one fatal message naming the problem; the host process lives on (it crashed on
    every one of them)."""
    folder = _unpacked(fmu_dir / "Clutch.fmu", tmp_path / "ü" / "Clutch")
    encoded = (folder / "resources").as_uri()
    path = encoded[len("file://"):]
    latin1 = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))          # 'café' in ISO 8859-1: not UTF-8
    _unpacked(fmu_dir / "Clutch.fmu", latin1 / "Clutch")
    percent20 = _unpacked(fmu_dir / "Clutch.fmu", tmp_path / "a%20b" / "Clutch")
    cases = {
        None: "no fmuResourceLocation was given",
        "": "no fmuResourceLocation was given",
        "http://example.org/Clutch/resources": '"http://example.org/Clutch/resources" is not a file URI',
        "file://server" + path: 'names the host "server"',
        "file:Clutch/resources": '"file:Clutch/resources" names no absolute path',
        encoded.replace("%C3%BC", "%zz"): '"%zz" is not a percent-encoded byte',
        encoded + "%4": '"%4" is not a percent-encoded byte',
        encoded.replace("%C3%BC", "%00"): "%00 encodes a NUL byte",
        encoded.replace("Clutch/resources", "Nowhere/resources"): "Nowhere/resources (fmuResourceLocation",
        (latin1 / "Clutch" / "resources").as_uri(): "is not UTF-8 text",
        (percent20 / "resources").as_uri(): 'holds "%20"',
    }
    results = _instantiate_each(folder, list(cases))
    for result, expected in zip(results, cases.values()):
        message = _declared_fatal(result)
        assert expected in message, (expected, result)


# ------------------------------------------------------------------ a slave that is not there
def _break(folder: Path, how: str) -> str:
    """Break the unpacked FMU in ``folder``; returns the slave module's name."""
    resources = folder / "resources"
    module = (resources / "slavemodule.txt").read_text().splitlines()[0]
    if how == "no resources folder":
        shutil.rmtree(resources)
    elif how == "no slavemodule.txt":
        (resources / "slavemodule.txt").unlink()
    elif how == "module source renamed":
        (resources / f"{module}.py").rename(resources / f"{module}_renamed.py")
    elif how == "module not importable":
        (resources / f"{module}.py").write_text("import drivetrain_no_such_module\n")
    elif how == "no slave class":
        (resources / f"{module}.py").write_text("VALUE = 1.0\n")
    return module


BROKEN = {
    "no resources folder": "{resources} (fmuResourceLocation",
    "no slavemodule.txt": "{resources} has no readable slavemodule.txt",
    "module source renamed": 'slave module "{module}" that slavemodule.txt names has no readable source '
                             "{resources}/{module}.py",
    "module not importable": "could not load or instantiate the slave module {resources}/{module}.py",
    "no slave class": "{resources}/{module}.py defines no class derived from a class named Fmi2Slave",
}


@pytest.mark.parametrize("how", list(BROKEN))
@pytest.mark.parametrize("name", list(RUNS))
def test_a_slave_that_cannot_be_found_fails_instantiate_naming_it_in_fmpy(name, how, fmus, tmp_path):
    """fmpy instantiating an FMU whose slave is missing or broken gets NULL and a fatal
    message (logStatusFatal, declared) naming what is not there; the process lives on."""
    folder = _unpacked(fmus[name], tmp_path / "ü" / name)
    module = _break(folder, how)
    [result] = _instantiate_each(folder, [(folder / "resources").as_uri()])
    message = _declared_fatal(result)
    assert BROKEN[how].format(resources=folder / "resources", module=module) in message, result
    if how == "module not importable":          # pythonfmu's own message says why
        assert any("No module named 'drivetrain_no_such_module'" in m for _, _, m in result["messages"]), result


@pytest.mark.parametrize("how", ["no resources folder", "no slave class"])
@pytest.mark.parametrize("name", list(RUNS))
def test_a_slave_that_cannot_be_found_fails_fmucheck_cleanly(name, how, fmus, tmp_path):
    """The same in a C host with the FMU's bundled Python (fmuCheck, clean environment):
    it reports the FMU's message and fails, it does not crash."""
    folder = _unpacked(fmus[name], tmp_path / "unpacked")
    module = _break(folder, how)
    broken = tmp_path / f"{name}.fmu"
    with zipfile.ZipFile(broken, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    (tmp_path / "ü").mkdir()
    done = _run([_host("fmuCheck.linux64"), "-h", RUNS[name][1], "-s", RUNS[name][0], "-l", "3", "-t", tmp_path / "ü",
                 "-o", tmp_path / "out.csv", broken], tmp_path, _clean_env(tmp_path))
    log = done.stdout + done.stderr
    assert done.returncode != 0, log[-3000:]
    expected = {"no resources folder": "/resources (fmuResourceLocation",
                "no slave class": f"/resources/{module}.py defines no class derived from a class named Fmi2Slave"}[how]
    assert expected in log and "logStatusFatal" in log, log[-3000:]
