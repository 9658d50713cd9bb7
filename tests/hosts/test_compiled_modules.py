"""The element, solver and system code compiled into the FMUs (compiled_modules.py):

* every element FMU carries an extension module for each module of ``solvers`` and ``fmus``,
  and an FMU loaded by a host runs those, not the sources beside them;
* compiling changes no result: Z3 (10 s at 2 ms: both clutches slip, lock and hand over) and
  Fan F2 (1 s, multi-rate: the clutch judders, the vehicle's tyre and contact code runs) as
  one system FMU, compiled and pure Python, each in its own process, give identical values
  at every step (bit for bit: the compiled code makes the same CPython calls in the same
  order; gcc may not fuse a multiply and an add);
* a module that cannot be compiled stops the build with its name; a second build compiles
  nothing (the cache);
* a cached module no build has used for 30 days is removed;
* the ``drivetrain-fmu`` process imports the element code compiled from the cache, only where
  the cache holds it compiled from the very source it would import.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from drivetrain_fmu import build_fmus
from drivetrain_fmu import compiled_modules, fmus
from drivetrain_fmu.systems.catalog import fan, z3
from tests.numerics.test_kernels import load_compiled

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = compiled_modules.extension_suffix()

#: run in a process of its own (the FMUs' modules are process-global): simulate the FMU, and
#: say where its modules were loaded from
RUN = """
import json, sys
import numpy as np
from fmpy import simulate_fmu
fmu, stop, step, outputs, saved = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(","), sys.argv[5]
result = simulate_fmu(fmu, stop_time=stop, step_size=step, output_interval=step, output=outputs)
np.save(saved, np.column_stack([result[name].astype(float) for name in ("time", *outputs)]))
print(json.dumps({name: getattr(module, "__file__", None) for name, module in sys.modules.items()
                  if name.split(".")[0] in ("drivetrain_fmu", "drivetrain_composite")}))
"""


def _run_alone(fmu: Path, stop: float, step: float, outputs, folder: Path):
    """(values at every step, {module: the file it was loaded from}) of ``fmu`` run by fmpy
    in a fresh Python process."""
    saved = folder / f"{fmu.stem}.npy"
    done = subprocess.run([sys.executable, "-c", RUN, str(fmu), str(stop), str(step), ",".join(outputs), str(saved)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(saved), json.loads(done.stdout.splitlines()[-1])


def test_every_element_fmu_carries_and_runs_the_compiled_modules(fmu_dir, tmp_path):
    modules = build_fmus.element_modules()
    for fmu in sorted(fmu_dir.glob("*.fmu")):
        with zipfile.ZipFile(fmu) as archive:
            names = set(archive.namelist())
        missing = [m for m in modules if f"resources/{m.replace('.', '/')}{SUFFIX}" not in names]
        assert not missing, f"{fmu.name} lacks the compiled {missing}"
    # the Clutch as a host loads it: its modules are the extension modules
    _, loaded = _run_alone(fmu_dir / "Clutch.fmu", 0.05, 1e-3, ["w_1"], tmp_path)
    for name in ("solvers.friction", "solvers.ode", "fmus.shell", "fmus.model", "fmus.clutch"):
        assert loaded[f"drivetrain_fmu.{name}"].endswith(SUFFIX), (name, loaded[f"drivetrain_fmu.{name}"])


@pytest.mark.parametrize("system, stop, step, options, outputs", [
    ("z3", 10.0, 2e-3, {}, z3.RECORD),
    ("fan_F2", 1.0, 1e-3, {"internal_step": 5e-5, "rates": {"vehicle": 1e-3}}, fan.RECORD),
], ids=["z3", "fan_F2_multirate"])
def test_compiled_and_pure_python_system_fmus_give_identical_results(tmp_path, system, stop, step, options,
                                                                      outputs):
    runs = {}
    for pure in (False, True):
        folder = tmp_path / ("pure" if pure else "compiled")
        fmu = build_fmus.build_system_fmu(system, folder, outputs=outputs, pure_python=pure, **options)
        runs[pure] = _run_alone(fmu, stop, step, outputs, folder)
    (compiled, loaded_compiled), (pure, loaded_pure) = runs[False], runs[True]
    assert loaded_compiled["drivetrain_composite.slave"].endswith(SUFFIX)
    assert loaded_compiled["drivetrain_fmu.solvers.friction"].endswith(SUFFIX)
    assert all(path.endswith(".py") for path in loaded_pure.values() if path), loaded_pure
    assert compiled.shape == pure.shape == (int(round(stop / step)) + 1, len(outputs) + 1)
    for column, name in enumerate(("time", *outputs)):
        assert compiled[:, column].tobytes() == pure[:, column].tobytes(), name


def test_a_module_that_cannot_be_compiled_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    pass\n")
    with pytest.raises(compiled_modules.CompileError, match=r"compiling solvers\.broken .*broken\.py.* failed"):
        compiled_modules.extensions({"solvers.broken": broken})


def _forbid_compiling(monkeypatch):
    """From now on, compiling a module fails the test (AssertionError: compiled again)."""
    def no_compiling(*args):
        raise AssertionError(f"compiled again: {args}")
    monkeypatch.setattr(compiled_modules, "_gcc", no_compiling)


def test_a_second_build_takes_every_module_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "kinetic.py"
    source.write_text("def energy(J, w):\n    return 0.5 * J * w * w\n")
    first = compiled_modules.extensions({"solvers.kinetic": source})
    _forbid_compiling(monkeypatch)
    assert compiled_modules.extensions({"solvers.kinetic": source}) == first
    source.write_text("def energy(J, w):\n    return J * w * w / 2\n")
    with pytest.raises(AssertionError, match="compiled again"):
        compiled_modules.extensions({"solvers.kinetic": source})


def test_a_module_is_compiled_with_its_declarations_and_again_when_they_change(tmp_path, monkeypatch):
    """A .pxd beside a source declares its C types (a C int argument refuses 2**40) and is
    part of the cache's key: changing only the declarations compiles the module again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source, declarations = tmp_path / "declared.py", tmp_path / "declared.pxd"
    source.write_text("def twice(n):\n    return 2 * n\n")
    declarations.write_text("cpdef int twice(int n)\n")
    module = load_compiled("solvers.declared", source)
    assert module.twice(21) == 42
    with pytest.raises(OverflowError):
        module.twice(2**40)         # the source alone would return 2**41
    first = compiled_modules.extensions({"solvers.declared": source})
    _forbid_compiling(monkeypatch)
    assert compiled_modules.extensions({"solvers.declared": source}) == first
    declarations.write_text("cpdef long twice(long n)\n")
    with pytest.raises(AssertionError, match="compiled again"):
        compiled_modules.extensions({"solvers.declared": source})


def test_a_module_is_compiled_with_the_declarations_its_cimports_declare_in_turn():
    """systems/system_kernel.py cimports fmus/element_kernel.pxd, which cimports
    solvers/friction_kernel.pxd: Cython reads both (it could not compile the system loop
    without the second), and both are in the cache's key."""
    found = compiled_modules.declarations("drivetrain_fmu.systems.system_kernel", ROOT / "systems" / "system_kernel.py")
    assert set(found) == {"drivetrain_fmu.fmus.element_kernel", "drivetrain_fmu.solvers.friction_kernel"}
    assert found["drivetrain_fmu.solvers.friction_kernel"] == (ROOT / "solvers" / "friction_kernel.pxd").read_bytes()


#: where a process that called prefer_compiled imported the element modules from
WHERE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from drivetrain_fmu import compiled_modules
compiled_modules.prefer_compiled()
import drivetrain_fmu.fmus, drivetrain_fmu.solvers.friction, drivetrain_fmu.solvers.vehicle
drivetrain_fmu.fmus.MODELS       # every element's module (made at the first ask)
print(json.dumps({**{name: sys.modules["drivetrain_fmu." + name].__file__
                     for name in ("fmus", "fmus.clutch", "fmus.shell", "solvers.friction", "solvers.vehicle")},
                  "fingerprint": drivetrain_fmu.fmus.code_fingerprint()}))
"""


def test_the_command_line_process_imports_the_element_code_compiled_from_its_own_sources(fmu_dir, tmp_path):
    """drivetrain_fmu.cli calls prefer_compiled before importing the element code: with the cache
    warm (the session's build), a process imports the compiled modules; a copy of the tree
    whose friction solver has been edited imports that module from its source (the cached
    one was compiled from another text) and the others compiled.  The element code's
    fingerprint (what a build stamps into its FMUs) is that of the sources all the same: it
    is computed by fmus/__init__.py, never compiled (a fingerprint computed beside a module
    imported from the cache hashed the cache's folder, and the FMUs that process built
    refused to load)."""
    tree = tmp_path / "tree"
    build_fmus.shipped_package(tree)
    shutil.copyfile(ROOT / "compiled_modules.py", tree / "drivetrain_fmu" / "compiled_modules.py")
    for edited in (False, True):
        if edited:
            with open(tree / "drivetrain_fmu" / "solvers" / "friction.py", "a") as source:
                source.write("\n# edited after the build\n")
        done = subprocess.run([sys.executable, "-c", WHERE, str(tree)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        where = json.loads(done.stdout)
        assert where["fmus"] == str(tree / "drivetrain_fmu" / "fmus" / "__init__.py")
        cache = str(compiled_modules.cache_folder())
        for name in ("fmus.clutch", "solvers.vehicle"):
            assert where[name].startswith(cache) and where[name].endswith(SUFFIX), where
        if edited:
            assert where["solvers.friction"] == str(tree / "drivetrain_fmu" / "solvers" / "friction.py")
        else:
            assert where["solvers.friction"].startswith(cache), where
            assert where["fmus.shell"].startswith(cache), where
            assert where["fingerprint"] == fmus.source_fingerprint(), where
    # the command itself: importing drivetrain_fmu.cli imports the element code compiled
    done = subprocess.run([sys.executable, "-c",
                           "import sys, drivetrain_fmu.cli; print(sys.modules['drivetrain_fmu.fmus.clutch'].__file__)"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().startswith(cache) and done.stdout.strip().endswith(SUFFIX), done.stdout


@pytest.mark.parametrize("unusable", ["path through a file", "lock cannot be written"])
def test_a_cache_location_that_cannot_be_used_falls_back_to_a_private_temporary_folder(tmp_path, monkeypatch,
                                                                                      unusable):
    """A home that cannot hold the cache (its path runs through a file; or the folder exists
    but its lock file cannot be written, as on a read-only home) does not stop the build: the
    modules are compiled into a folder of this user's in the temporary folder, private (no
    write access for others); such a folder another user could write into is refused."""
    home = tmp_path / "home"
    if unusable == "path through a file":
        home.write_text("")
    else:
        (home / "drivetrain-fmu" / "extensions" / compiled_modules.LOCK).mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    source = tmp_path / "kinetic.py"
    source.write_text("def energy(J, w):\n    return 0.5 * J * w * w\n")
    built = compiled_modules.extensions({"solvers.kinetic": source})
    folder = compiled_modules.cache_folder()
    assert folder.parent == tmp_path / "tmp" and not os.stat(folder).st_mode & 0o077
    assert list(built.values())[0] == compiled_modules.cached_path("solvers.kinetic", source.read_bytes()).read_bytes()
    os.chmod(folder, 0o777)
    with pytest.raises(compiled_modules.CompileError, match="not a private folder"):
        compiled_modules.cache_folder()


def test_a_machine_without_the_compiler_builds_uncompiled_fmus_with_one_warning(tmp_path, monkeypatch, capsys):
    """Without gcc (here: the toolchain check says so) a default build warns once, naming the
    missing tool, and builds FMUs without extension modules; a build that asks for compiled
    code stops with the message."""
    def no_gcc(*target):
        raise compiled_modules.CompileError("gcc is not on PATH: it compiles the element code into the FMUs")

    monkeypatch.setattr(compiled_modules, "toolchain", no_gcc)
    build_fmus._warn_once.cache_clear()
    build_fmus.build_all(tmp_path, ["Shaft"])
    warnings = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("  built ")]
    assert len(warnings) == 1 and "gcc is not on PATH" in warnings[0] and "uncompiled" in warnings[0], warnings
    with zipfile.ZipFile(tmp_path / "Shaft.fmu") as archive:
        assert not [n for n in archive.namelist() if n.endswith(SUFFIX) and n.startswith("resources/")]
    with pytest.raises(SystemExit, match="gcc is not on PATH"):
        build_fmus.build_all(tmp_path / "asked", ["Shaft"], pure_python=False)


def test_pure_python_builds_carry_no_extension_modules(tmp_path):
    """drivetrain-fmu build --pure-python and build_fmus.py --pure-python: the FMU carries the
    sources only; without the option it carries the compiled modules too."""
    from drivetrain_fmu import cli

    def compiled_in(fmu):
        with zipfile.ZipFile(fmu) as archive:
            return [n for n in archive.namelist() if n.startswith("resources/") and n.endswith(SUFFIX)]

    assert build_fmus.main(["--only", "Shaft", "--out", str(tmp_path / "default")]) == 0
    assert compiled_in(tmp_path / "default" / "Shaft.fmu")
    assert build_fmus.main(["--only", "Shaft", "--out", str(tmp_path / "pure"), "--pure-python"]) == 0
    assert not compiled_in(tmp_path / "pure" / "Shaft.fmu")
    assert cli.main(["build", "--pure-python", "--out", str(tmp_path / "cli")]) == 0
    assert not any(compiled_in(fmu) for fmu in (tmp_path / "cli").glob("*.fmu"))


def test_cached_modules_no_build_used_for_30_days_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "kinetic.py"
    source.write_text("def energy(J, w):\n    return 0.5 * J * w * w\n")
    compiled_modules.extensions({"solvers.kinetic": source})
    folder = compiled_modules.cache_folder()
    stale, recent = folder / f"solvers.old-1{SUFFIX}", folder / f"solvers.other-2{SUFFIX}"
    for path, days in ((stale, 31), (recent, 29)):
        path.write_bytes(b"")
        age = time.time() - days * 86400
        os.utime(path, (age, age))
    in_use = compiled_modules.cached_path("solvers.kinetic", source.read_bytes())
    os.utime(in_use, (0, 0))                 # used by this build: kept and marked used
    compiled_modules.extensions({"solvers.kinetic": source})
    assert not stale.exists() and recent.exists() and in_use.exists()
    assert in_use.stat().st_mtime > time.time() - 60


def _holding_the_lock():
    """The cache's lock file, open and locked as another build compiling would hold it."""
    import fcntl

    lock = open(compiled_modules.cache_folder() / compiled_modules.LOCK, "a+")
    fcntl.flock(lock, fcntl.LOCK_EX)
    lock.truncate(0)
    lock.write("process 4242 compiling 3 modules\n")
    lock.flush()
    return lock


def _in_thread(function, *args):
    import threading

    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", function(*args)), daemon=True)
    thread.start()
    return thread, outcome


def test_cached_modules_are_read_without_waiting_for_another_build_s_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "kinetic.py"
    source.write_text("def energy(J, w):\n    return 0.5 * J * w * w\n")
    first = compiled_modules.extensions({"solvers.kinetic": source})
    lock = _holding_the_lock()
    try:
        thread, outcome = _in_thread(compiled_modules.extensions, {"solvers.kinetic": source})
        thread.join(timeout=20)      # reading one cached module takes milliseconds; waiting would be forever
        assert not thread.is_alive(), "a build whose modules are all cached waited for the compile lock"
        assert outcome["value"] == first
    finally:
        lock.close()
        thread.join(timeout=60)


def test_a_build_that_must_wait_for_the_lock_says_what_it_waits_for_and_who_holds_it(tmp_path, monkeypatch,
                                                                                      capsys):
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "kinetic.py"
    source.write_text("def energy(J, w):\n    return 0.5 * J * w * w\n")
    lock = _holding_the_lock()
    try:
        thread, outcome = _in_thread(compiled_modules.extensions, {"solvers.kinetic": source})
        time.sleep(3.0)
        assert thread.is_alive()                     # it waits: the module is not cached
        said = capsys.readouterr().err
        assert "waiting for another build to finish compiling the element code" in said
        assert "process 4242 compiling 3 modules" in said and compiled_modules.LOCK in said
    finally:
        lock.close()
    thread.join(timeout=300)
    assert not thread.is_alive() and "resources/solvers/kinetic" + SUFFIX in outcome["value"]


def test_compiling_says_each_module_done_out_of_how_many(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    modules = {}
    for name in ("kinetic", "potential"):
        modules[f"solvers.{name}"] = tmp_path / f"{name}.py"
        modules[f"solvers.{name}"].write_text(f"def {name}(x):\n    return 0.5 * x * x\n")
    compiled_modules.extensions(modules)
    said = capsys.readouterr().err
    assert f"compiling 2 modules of the element code with Cython and gcc into {compiled_modules.cache_folder()}" \
        in said
    done = re.findall(r"compiled (\d)/2 (solvers\.\w+) \(\d+ s\)", said)
    assert sorted(done) == [("1", done[0][1]), ("2", done[1][1])] and {n for _, n in done} == set(modules)
    compiled_modules.extensions(modules)
    assert capsys.readouterr().err == ""              # all cached: nothing to say


def test_each_module_is_cythonized_once_and_compiled_for_each_target(tmp_path, monkeypatch, capsys):
    """Cython's C is the same for every CPython version: a build for two targets runs Cython
    once per module and gcc once per module and target, each under the target's own file
    ending (here a second target that differs only by its ending and version string)."""
    from dataclasses import replace

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    modules = {}
    for name in ("kinetic", "potential"):
        modules[f"solvers.{name}"] = tmp_path / f"{name}.py"
        modules[f"solvers.{name}"].write_text(f"def {name}(x):\n    return 0.5 * x * x\n")
    own = compiled_modules.TargetPython.current()
    other = replace(own, version=own.version + " (another build)", short="3.99", ext_suffix=".cpython-399-test.so")
    calls = {"cython": [], "gcc": []}
    for step, kind in (("_cythonize", "cython"), ("_gcc", "gcc")):
        real = getattr(compiled_modules, step)
        monkeypatch.setattr(compiled_modules, step,
                            lambda name, *args, real=real, kind=kind: calls[kind].append(name) or real(name, *args))
    built = compiled_modules.extensions(modules, [own, other])
    assert sorted(calls["cython"]) == sorted(modules)
    assert sorted(calls["gcc"]) == sorted([*modules, *modules])
    assert set(built) == {f"resources/solvers/{name}{suffix}" for name in ("kinetic", "potential")
                          for suffix in (own.ext_suffix, other.ext_suffix)}
    assert "for CPython 3.99" in capsys.readouterr().err


FAKE_PYTHON = """#!/bin/sh
cat <<'END'
[{{"executable": "{path}", "version": "{short}.0 (fake)", "short": "{short}", \
"ext_suffix": ".cpython-{nodot}-x86_64-linux-gnu.so", "include": "{include}"}}, "{implementation}", {free}]
END
"""


@pytest.mark.parametrize("implementation, free_threaded, headers, why", [
    ("cpython", "false", True, None),
    ("cpython", "true", True, "is a free-threaded build"),
    ("cpython", "false", False, "has no C headers"),
    ("pypy", "false", True, "is pypy, not CPython"),
])
def test_the_build_finds_each_host_python_and_says_why_it_leaves_one_out(tmp_path, monkeypatch, implementation,
                                                                          free_threaded, headers, why):
    """compiled_modules.host_pythons asks python3.X on PATH (then pyenv's) for its version,
    file ending and headers: a CPython with the GIL and its headers is taken; a free-threaded
    one, one without headers or another implementation is left out, with the reason."""
    include = tmp_path / "include"
    include.mkdir()
    if headers:
        (include / "Python.h").write_text("")
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake = bin_folder / "python3.12"
    fake.write_text(FAKE_PYTHON.format(path=fake, short="3.12", nodot="312", include=include,
                                       implementation=implementation, free=free_threaded))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}:/usr/bin:/bin")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    compiled_modules.host_pythons.cache_clear()
    try:
        found, missing = compiled_modules.host_pythons(("3.12",))
    finally:
        compiled_modules.host_pythons.cache_clear()
    if why is None:
        assert [(t.short, t.executable, t.ext_suffix) for t in found] == [
            ("3.12", str(fake), ".cpython-312-x86_64-linux-gnu.so")] and not missing
    else:
        assert not found and why in missing["3.12"] and str(fake) in missing["3.12"], missing


#: what a process sees of the records that are frozen dataclasses (fmus/variables.pxd)
RECORDS = """
import copy, dataclasses, json, pickle, sys
from drivetrain_fmu import compiled_modules
if sys.argv[1] == "compiled":
    assert compiled_modules.prefer_compiled()
from drivetrain_fmu.fmus import variables
from drivetrain_fmu.solvers import budget, friction, thermal

def frozen(record):
    try:
        setattr(record, dataclasses.fields(record)[0].name, None)
    except AttributeError:              # dataclasses' FrozenInstanceError is one
        return True
    return False

second = variables.second_torque(variables.input_("tau", "N.m", "torque",
                                                  family=variables.Family("tau", 2, "n", 1)))
records = [second, second.family, budget.Budget("steps", 10, 100.0, 1000), friction.InterfaceLaw(mu_s=0.5),
           thermal.InterfaceHeat(1.0, 2.0, 300.0, -1e-3)]
seen = {"records": [[repr(r), r == copy.copy(r), hash(r) == hash(pickle.loads(pickle.dumps(r))),
                     [f.name for f in dataclasses.fields(r)], frozen(r), hasattr(r, "__dict__")]
                    for r in records],
        "replaced": repr(dataclasses.replace(second, depends=("w",))),
        "limit": records[2].limit(0.01), "levers": records[3].levers}
try:
    variables.Var("J", variables.PARAMETER, "furlong", "inertia", 1.0)
except ValueError as exc:               # its __post_init__
    seen["refused"] = str(exc)
print(json.dumps([variables.__file__, seen]))
"""


def test_the_compiled_records_are_the_dataclasses_they_are_declared_as(fmu_dir):
    """The frozen dataclasses an FMU builds at import (fmus.variables' Var and Family, the
    solvers' Budget, InterfaceLaw and InterfaceHeat) are compiled as extension types whose
    dataclass methods Cython writes (their .pxd files): each has the same repr, equality, hash,
    fields, replace, __post_init__ check and frozen attributes as the standard library's
    dataclass the source makes, and no instance dictionary."""
    seen = {}
    for kind in ("source", "compiled"):
        done = subprocess.run([sys.executable, "-c", RECORDS, kind], capture_output=True, text=True, cwd=ROOT,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        seen[kind] = json.loads(done.stdout)
    assert seen["source"][0].endswith("variables.py") and seen["compiled"][0].endswith(SUFFIX), seen
    for record in seen["source"][1]["records"]:
        assert record[-1] is True
        record[-1] = False              # a Python class's instances have a dictionary, extension types' not
    assert seen["compiled"][1] == seen["source"][1]
    assert all(record[4] for record in seen["source"][1]["records"])          # every record is frozen
